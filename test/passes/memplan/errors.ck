/// memplan's errors: a bad alignment is a pipeline error; an illegal
/// in-place mark is an error located at the op; exit 1 either way.

// RUN: not ckopt-opt %s --pass-pipeline='memplan{align=48}' 2>&1 | FileCheck %s --check-prefix=ALIGN
// ALIGN: error: option 'align' of pass 'memplan' must be a power of two, got 48
// RUN: not ckopt-opt %s --pass-pipeline='memplan{align=0}' 2>&1 | FileCheck %s --check-prefix=ZERO
// ZERO: error: option 'align' of pass 'memplan' must be a power of two, got 0

/// %a is read again by the add, so the relu may not overwrite it.
// RUN: not ckopt-opt %s --pass-pipeline='memplan' 2>&1 | FileCheck %s --check-prefix=MARK
// MARK: errors.ck:[[@LINE+7]]:5: error: memplan: 'ck.inplace' on 'ck.relu' is not legal here
// MARK-NEXT: %b = "ck.relu"(%a) {ck.inplace = 0 : i64}
// MARK-NEXT: ^

module {
  func.func @bad(%x: tensor<8xf32>) -> tensor<8xf32> {
    %a = "ck.exp"(%x) : (tensor<8xf32>) -> tensor<8xf32>
    %b = "ck.relu"(%a) {ck.inplace = 0 : i64} : (tensor<8xf32>) -> tensor<8xf32>
    %c = "ck.add"(%a, %b) : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
    "ck.return"(%c) : (tensor<8xf32>) -> ()
  }
}
