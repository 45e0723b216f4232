// RUN: ckopt-opt %s --pass-pipeline=autodiff | FileCheck %s
// RUN: ckopt-opt %s --pass-pipeline='autodiff{wrt=0,2}' | FileCheck %s --check-prefix=WRT
// RUN: ckopt-opt %s --pass-pipeline=autodiff | %mlir-opt --allow-unregistered-dialect | FileCheck %s --check-prefix=MLIR

/// The gradient graph of a two-layer MLP: the forward ops copied, the seed,
/// then the backward in reverse order; only the {ck.param} arguments get
/// gradients (no op computes d%x or d%t); relu's backward reads relu's
/// output %a (so %h can die); mul(d, d) gives one 2*dy*d; no accumulation.
// CHECK-LABEL: func.func @mlp(
// CHECK-LABEL: func.func @mlp_grad(%x: tensor<4x8xf32>, %w1: tensor<8x16xf32> {ck.param}, %w2: tensor<16x2xf32> {ck.param}, %t: tensor<4x2xf32>) -> (tensor<f32>, tensor<8x16xf32>, tensor<16x2xf32>)
// CHECK-NEXT:    %[[H:.*]] = "ck.matmul"(%x, %w1)
// CHECK-NEXT:    %[[A:.*]] = "ck.relu"(%[[H]])
// CHECK-NEXT:    %[[O:.*]] = "ck.matmul"(%[[A]], %w2)
// CHECK-NEXT:    %[[D:.*]] = "ck.sub"(%[[O]], %t)
// CHECK-NEXT:    %[[S:.*]] = "ck.mul"(%[[D]], %[[D]])
// CHECK-NEXT:    %[[L:.*]] = "ck.reduce_sum"(%[[S]]) {dims = [0, 1]}
// CHECK-NEXT:    %[[SEED:.*]] = "ck.fill"() {value = 1.0 : f32} : () -> tensor<f32>
// CHECK-NEXT:    %[[DS:.*]] = "ck.broadcast"(%[[SEED]]) {dims = []} : (tensor<f32>) -> tensor<4x2xf32>
// CHECK-NEXT:    %[[T:.*]] = "ck.mul"(%[[DS]], %[[D]])
// CHECK-NEXT:    %[[DD:.*]] = "ck.scale"(%[[T]]) {value = 2.0 : f32}
// CHECK-NEXT:    %[[DA:.*]] = "ck.matmul"(%[[DD]], %w2) {transpose_b = true} : (tensor<4x2xf32>, tensor<16x2xf32>) -> tensor<4x16xf32>
// CHECK-NEXT:    %[[DW2:.*]] = "ck.matmul"(%[[A]], %[[DD]]) {transpose_a = true} : (tensor<4x16xf32>, tensor<4x2xf32>) -> tensor<16x2xf32>
// CHECK-NEXT:    %[[DH:.*]] = "ck.relu_grad"(%[[A]], %[[DA]])
// CHECK-NEXT:    %[[DW1:.*]] = "ck.matmul"(%x, %[[DH]]) {transpose_a = true} : (tensor<4x8xf32>, tensor<4x16xf32>) -> tensor<8x16xf32>
// CHECK-NEXT:    "ck.return"(%[[L]], %[[DW1]], %[[DW2]])
// CHECK-NOT: ck.

/// wrt=0,2 (MLIR list syntax): gradients of %x and %w2 in argument order; %w1's matmul is not emitted.
// WRT-LABEL: func.func @mlp_grad(
// WRT-SAME:  -> (tensor<f32>, tensor<4x8xf32>, tensor<16x2xf32>)
// WRT:       %[[DX:.*]] = "ck.matmul"(%{{.*}}, %w1) {transpose_b = true} : (tensor<4x16xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
// WRT-NEXT:  "ck.return"(%{{.*}}, %[[DX]], %{{.*}})

/// Upstream MLIR parses the gradient function.
// MLIR: "ck.relu_grad"

module {
  func.func @mlp(%x: tensor<4x8xf32>, %w1: tensor<8x16xf32> {ck.param}, %w2: tensor<16x2xf32> {ck.param}, %t: tensor<4x2xf32>) -> tensor<f32> {
    %h = "ck.matmul"(%x, %w1) : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
    %a = "ck.relu"(%h) : (tensor<4x16xf32>) -> tensor<4x16xf32>
    %o = "ck.matmul"(%a, %w2) : (tensor<4x16xf32>, tensor<16x2xf32>) -> tensor<4x2xf32>
    %d = "ck.sub"(%o, %t) : (tensor<4x2xf32>, tensor<4x2xf32>) -> tensor<4x2xf32>
    %s = "ck.mul"(%d, %d) : (tensor<4x2xf32>, tensor<4x2xf32>) -> tensor<4x2xf32>
    %l = "ck.reduce_sum"(%s) {dims = [0, 1]} : (tensor<4x2xf32>) -> tensor<f32>
    "ck.return"(%l) : (tensor<f32>) -> ()
  }
}
