/// The arena interpreter (`ckopt-run --arena`) on a planned gradient gives
/// bit-identical outputs to the plain interpreter; an unplanned function is
/// an error.

// RUN: ckopt-opt %s --pass-pipeline='autodiff,inplace,memplan' -o %t.ck
// RUN: ckopt-run %t.ck --func loss_grad --arena --outputs %t.arena.json --report - | FileCheck %s --check-prefix=REPORT
// RUN: ckopt-run %t.ck --func loss_grad --outputs %t.plain.json
// RUN: diff %t.arena.json %t.plain.json
// REPORT: "arena": true
// REPORT: "arena_bytes": {{[1-9][0-9]*}}

// RUN: not ckopt-run %s --func loss --arena 2>&1 | FileCheck %s --check-prefix=UNPLANNED
// UNPLANNED: error: @loss was not planned: it has no 'ck.arena_bytes' (run the memplan pass first)

module {
  func.func @loss(%x: tensor<4x8xf32>, %w: tensor<8x8xf32> {ck.param}, %v: tensor<8x8xf32> {ck.param}) -> tensor<f32> {
    %h = "ck.matmul"(%x, %w) : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
    %a = "ck.relu"(%h) : (tensor<4x8xf32>) -> tensor<4x8xf32>
    %g = "ck.matmul"(%a, %v) : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
    %t = "ck.tanh"(%g) : (tensor<4x8xf32>) -> tensor<4x8xf32>
    %r = "ck.add"(%t, %h) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    %s = "ck.mul"(%r, %r) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    %l = "ck.reduce_sum"(%s) {dims = [0, 1]} : (tensor<4x8xf32>) -> tensor<f32>
    "ck.return"(%l) : (tensor<f32>) -> ()
  }
}
