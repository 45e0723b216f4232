// RUN: ckopt-opt %s --split-input-file --verify-diagnostics

/// One case per parser and verifier rule (ir/src/parser.rs, ir/src/ops.rs
/// check_attrs/infer_type, ir/src/verify.rs). Each case is an independent
/// chunk; every expected diagnostic must be produced and nothing else.

/// A missing '=' after the result name is a syntax error.
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{expected '=' after the result name, found '"ck.relu"'}}
  %y "ck.relu"(%x) : (tensor<2xf32>) -> tensor<2xf32>
  "ck.return"(%y) : (tensor<2xf32>) -> ()
}
