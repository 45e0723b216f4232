/// --verify-diagnostics fails (exit 1) when an expected error is not produced
/// or an unexpected one is, and says which; the other cases still run.

// RUN: not ckopt-opt %s --split-input-file --verify-diagnostics 2>&1 | FileCheck %s
// CHECK-DAG: opt-verify-diagnostics-mismatch.ck:[[# @LINE + 7]]:{{[0-9]+}}: error: expected error "this never happens" was not produced
// CHECK-DAG: opt-verify-diagnostics-mismatch.ck:[[# @LINE + 16]]:5: error: unexpected error: {{.*}}operand shapes must be equal

/// Nothing is wrong here, but an error is expected.
module {
  func.func @missing(%x: tensor<4xf32>) -> tensor<4xf32> {
    %y = "ck.neg"(%x) : (tensor<4xf32>) -> tensor<4xf32>
    // expected-error@-1 {{this never happens}}
    "ck.return"(%y) : (tensor<4xf32>) -> ()
  }
}

// -----

/// An error nobody expected.
module {
  func.func @surprise(%x: tensor<4xf32>, %z: tensor<5xf32>) -> tensor<4xf32> {
    %y = "ck.add"(%x, %z) : (tensor<4xf32>, tensor<5xf32>) -> tensor<4xf32>
    "ck.return"(%y) : (tensor<4xf32>) -> ()
  }
}
