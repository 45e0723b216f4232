// RUN: not ckopt-opt %s 2>&1 | FileCheck %s --match-full-lines --strict-whitespace
// RUN: not ckopt-opt %S/Inputs/bad-utf8.ck 2>&1 | FileCheck %s --check-prefix=UTF8
// RUN: head -c 1500 %S/roundtrip.ck | not ckopt-opt - 2>&1 | FileCheck %s --check-prefix=TRUNC
// RUN: not ckopt-opt %S/Inputs/deep-nesting.ck 2>&1 | FileCheck %s --check-prefix=DEEP

/// Diagnostics are `FILE:LINE:COL: error: MESSAGE`, the source line and a
/// caret under the column; parse errors in one body are all reported
/// (recovery at the next line) and the exit code is 1. Invalid UTF-8,
/// truncated input and absurd nesting are located errors, never crashes.

func.func @f(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %a = "ck.relux"(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %b = "ck.neg"(%a) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %c = "ck.neg"(%x) : (tensor<3x2xf32>) -> tensor<3x2xf32>
	%d = "ck.neg"(%undefined) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  "ck.return"(%x) : (tensor<2x3xf32>) -> ()
}

//      CHECK:{{.*}}diagnostics.ck:12:8: error: 'ck.relux' is not an op of the ck dialect; did you mean 'ck.relu'?
// CHECK-NEXT:  %a = "ck.relux"(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:       ^
// CHECK-NEXT:{{.*}}diagnostics.ck:14:17: error: use of value '%x' expects different type than prior uses: 'tensor<3x2xf32>' vs 'tensor<2x3xf32>'
// CHECK-NEXT:  %c = "ck.neg"(%x) : (tensor<3x2xf32>) -> tensor<3x2xf32>
// CHECK-NEXT:                ^
// CHECK-NEXT:{{.*}}diagnostics.ck:15:16: error: use of undefined value '%undefined'
// CHECK-NEXT:	%d = "ck.neg"(%undefined) : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:	              ^
//  CHECK-NOT:error

// UTF8: {{.*}}bad-utf8.ck:2:{{[0-9]+}}: error: invalid UTF-8

// TRUNC: <stdin>:{{[0-9]+}}:{{[0-9]+}}: error: {{.*}}
// TRUNC-NOT: panicked

// DEEP: {{.*}}deep-nesting.ck:3:{{[0-9]+}}: error: attribute nesting is deeper than 64 levels
