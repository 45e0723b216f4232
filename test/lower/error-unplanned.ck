/// A function memplan has not planned: every --to names it, exit 1.
// REQUIRES: lower
// RUN: not ckopt-translate --to=mlir %s 2>&1 | FileCheck %s
// RUN: not ckopt-translate --to=llvm %s 2>&1 | FileCheck %s
// RUN: not ckopt-translate --to=ptx %s 2>&1 | FileCheck %s

module {
  func.func @unplanned(%x: tensor<4xf32>) -> tensor<4xf32> {
    %y = "ck.neg"(%x) : (tensor<4xf32>) -> tensor<4xf32>
    "ck.return"(%y) : (tensor<4xf32>) -> ()
  }
}
// CHECK: error: function @unplanned is not planned by memplan (it has no ck.arena_bytes); run the memplan pass first
