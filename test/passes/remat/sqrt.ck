/// remat{mode=sqrt} on a 6-layer MLP gradient: the forward runs unchanged,
/// dropped activations are recomputed by clones marked ck.recompute right
/// before the backward that reads them (fresh values, read by the backward
/// instead of the originals), recompute clones of elementwise ops are marked
/// in place, and the gradients are bit-identical to no remat (interp and
/// arena interpreter).

// RUN: ckopt-opt %s --pass-pipeline='autodiff,inplace,remat{mode=sqrt}' | FileCheck %s
// CHECK-LABEL: func.func @mlp_grad(
// The forward is untouched: no recompute before the seed of the backward.
// CHECK-NOT:   ck.recompute
// CHECK:       "ck.fill"() {value = 1.0 : f32}
// The first recomputed segment restarts from a kept relu output.
// CHECK:       %[[MM:.*]] = "ck.matmul"(%[[KEPT:h[0-9]+]], %w{{[0-9]+}}) {ck.recompute}
// CHECK:       %[[Z:.*]] = "ck.add"(%[[MM]], %{{.*}}) {ck.inplace = 0 : i64, ck.recompute}
// CHECK:       %[[H:.*]] = "ck.relu"(%[[Z]]) {ck.inplace = 0 : i64, ck.recompute}
// The backward reads the recomputed value, not the dropped original.
// CHECK:       "ck.relu_grad"(%[[H]],
// CHECK:       "ck.return"

// RUN: ckopt-opt %s --pass-pipeline='autodiff,inplace,remat{mode=sqrt},memplan' -o %t.remat.ck
// RUN: ckopt-opt %s --pass-pipeline='autodiff,inplace,memplan' -o %t.base.ck
// RUN: ckopt-run %t.base.ck --func mlp_grad --seed 3 --outputs %t.base.json
// RUN: ckopt-run %t.remat.ck --func mlp_grad --seed 3 --outputs %t.remat.json
// RUN: ckopt-run %t.remat.ck --func mlp_grad --seed 3 --arena --outputs %t.arena.json
// RUN: diff %t.base.json %t.remat.json
// RUN: diff %t.base.json %t.arena.json

/// The memory report counts the recomputation.
// RUN: ckopt-opt %s --pass-pipeline='autodiff,inplace,remat{mode=sqrt},memplan' --memory-report=- -o /dev/null | FileCheck %s --check-prefix=REPORT
// REPORT:      "function": "mlp_grad"
// REPORT:      "recompute_flops": {{[1-9][0-9]*}}
// REPORT:      "recomputed_ops": {{[1-9][0-9]*}}

/// Statistics say what the plan did.
// RUN: ckopt-opt %s --pass-pipeline='autodiff,remat{mode=sqrt}' --pass-statistics -o /dev/null 2>&1 | FileCheck %s --check-prefix=STATS
// STATS: remat
// STATS: (S) sqrt({{[0-9]+}} segments) @mlp_grad plan - the plan chosen
// STATS: @mlp_grad on-demand-recomputations

module {
  func.func @mlp(%x: tensor<2x4xf32>, %target: tensor<2x4xf32>, %w0: tensor<4x4xf32> {ck.param}, %b0: tensor<4xf32> {ck.param}, %w1: tensor<4x4xf32> {ck.param}, %b1: tensor<4xf32> {ck.param}, %w2: tensor<4x4xf32> {ck.param}, %b2: tensor<4xf32> {ck.param}, %w3: tensor<4x4xf32> {ck.param}, %b3: tensor<4xf32> {ck.param}, %w4: tensor<4x4xf32> {ck.param}, %b4: tensor<4xf32> {ck.param}, %w5: tensor<4x4xf32> {ck.param}, %b5: tensor<4xf32> {ck.param}) -> tensor<f32> {
    %mm0 = "ck.matmul"(%x, %w0) : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
    %bias0 = "ck.broadcast"(%b0) {dims = [1]} : (tensor<4xf32>) -> tensor<2x4xf32>
    %z0 = "ck.add"(%mm0, %bias0) : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
    %h0 = "ck.relu"(%z0) : (tensor<2x4xf32>) -> tensor<2x4xf32>
    %mm1 = "ck.matmul"(%h0, %w1) : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
    %bias1 = "ck.broadcast"(%b1) {dims = [1]} : (tensor<4xf32>) -> tensor<2x4xf32>
    %z1 = "ck.add"(%mm1, %bias1) : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
    %h1 = "ck.relu"(%z1) : (tensor<2x4xf32>) -> tensor<2x4xf32>
    %mm2 = "ck.matmul"(%h1, %w2) : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
    %bias2 = "ck.broadcast"(%b2) {dims = [1]} : (tensor<4xf32>) -> tensor<2x4xf32>
    %z2 = "ck.add"(%mm2, %bias2) : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
    %h2 = "ck.relu"(%z2) : (tensor<2x4xf32>) -> tensor<2x4xf32>
    %mm3 = "ck.matmul"(%h2, %w3) : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
    %bias3 = "ck.broadcast"(%b3) {dims = [1]} : (tensor<4xf32>) -> tensor<2x4xf32>
    %z3 = "ck.add"(%mm3, %bias3) : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
    %h3 = "ck.relu"(%z3) : (tensor<2x4xf32>) -> tensor<2x4xf32>
    %mm4 = "ck.matmul"(%h3, %w4) : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
    %bias4 = "ck.broadcast"(%b4) {dims = [1]} : (tensor<4xf32>) -> tensor<2x4xf32>
    %z4 = "ck.add"(%mm4, %bias4) : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
    %h4 = "ck.relu"(%z4) : (tensor<2x4xf32>) -> tensor<2x4xf32>
    %mm5 = "ck.matmul"(%h4, %w5) : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
    %bias5 = "ck.broadcast"(%b5) {dims = [1]} : (tensor<4xf32>) -> tensor<2x4xf32>
    %z5 = "ck.add"(%mm5, %bias5) : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
    %h5 = "ck.relu"(%z5) : (tensor<2x4xf32>) -> tensor<2x4xf32>
    %diff = "ck.sub"(%h5, %target) : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
    %sq = "ck.mul"(%diff, %diff) : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
    %sqsum = "ck.reduce_sum"(%sq) {dims = [0, 1]} : (tensor<2x4xf32>) -> tensor<f32>
    %loss = "ck.scale"(%sqsum) {value = 0.125 : f32} : (tensor<f32>) -> tensor<f32>
    "ck.return"(%loss) : (tensor<f32>) -> ()
  }
}
