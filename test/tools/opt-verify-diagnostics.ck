/// --verify-diagnostics: diagnostics are matched against the annotations in
/// each case instead of printed; exit 0 when all match. Without the flag the
/// same file fails with the errors rendered (source line and caret).

// RUN: ckopt-opt %s --split-input-file --verify-diagnostics -o /dev/null
// RUN: not ckopt-opt %s --split-input-file -o /dev/null 2>&1 | FileCheck %s --check-prefix=PLAIN
// RUN: ckopt-opt %s --split-input-file --verify-diagnostics --pass-pipeline=canonicalize,cse,dce -o /dev/null

/// The valid cases are still printed (after the pipeline) in verify mode.
// RUN: ckopt-opt %s --split-input-file --verify-diagnostics | FileCheck %s --check-prefix=OUT
// OUT:      // -----
// OUT-NEXT: // -----
// OUT-NEXT: module {
// OUT-NEXT:   func.func @fine

// PLAIN:      opt-verify-diagnostics.ck:[[# @LINE + 10]]:5: error: 'ck.add' op
// PLAIN-NEXT: {{^}}    %y = "ck.add"(%x, %z)
// PLAIN-NEXT: {{^}}    ^
// PLAIN:      opt-verify-diagnostics.ck:[[# @LINE + 17]]:{{[0-9]+}}: error: {{.*}}undefined
// PLAIN-NOT:  error:

/// A shape mismatch reported on the line after the annotation.
module {
  func.func @shapes(%x: tensor<4xf32>, %z: tensor<5xf32>) -> tensor<4xf32> {
    // expected-error@+1 {{operand shapes must be equal}}
    %y = "ck.add"(%x, %z) : (tensor<4xf32>, tensor<5xf32>) -> tensor<4xf32>
    "ck.return"(%y) : (tensor<4xf32>) -> ()
  }
}

// -----

/// An undefined operand, annotated on the same line.
module {
  func.func @undefined(%x: tensor<4xf32>) -> tensor<4xf32> {
    %y = "ck.neg"(%nope) : (tensor<4xf32>) -> tensor<4xf32> // expected-error {{undefined}}
    "ck.return"(%y) : (tensor<4xf32>) -> ()
  }
}

// -----

/// A case without errors passes in verify mode and is printed.
module {
  func.func @fine(%x: tensor<4xf32>) -> tensor<4xf32> {
    %y = "ck.neg"(%x) : (tensor<4xf32>) -> tensor<4xf32>
    "ck.return"(%y) : (tensor<4xf32>) -> ()
  }
}
