/// autocast{dtype=bf16} before autodiff: the matmuls and the activations
/// between them compute in bf16; the bias is cast on the parameter itself
/// (before its broadcast); parameter casts are ck.mirror; exp and
/// reduce_sum (the loss) stay f32; the signature is unchanged; the gradient
/// function keeps f32 parameter gradients.
// RUN: ckopt-opt %s --pass-pipeline='autocast{dtype=bf16}' | FileCheck %s
// RUN: ckopt-opt %s --pass-pipeline='autocast{dtype=bf16},autodiff' | FileCheck %s --check-prefix=GRAD
// RUN: ckopt-opt %s --pass-pipeline='autocast{dtype=f16},autodiff,inplace,fuse,remat{mode=sqrt},memplan' | %mlir-opt --allow-unregistered-dialect > /dev/null
// RUN: ckopt-opt %s --pass-pipeline='autocast{dtype=bf16},autodiff' -o %t.ck
// RUN: ckopt-run %t.ck --func loss_grad > /dev/null

// CHECK-LABEL: func.func @loss(%x: tensor<4x8xf32>, %w: tensor<8x8xf32> {ck.param}, %b: tensor<8xf32> {ck.param}) -> tensor<f32>
// CHECK-DAG: %[[X:.*]] = "ck.cast"(%x) : (tensor<4x8xf32>) -> tensor<4x8xbf16>
// CHECK-DAG: %[[W:.*]] = "ck.cast"(%w) {ck.mirror} : (tensor<8x8xf32>) -> tensor<8x8xbf16>
// CHECK: "ck.matmul"(%[[X]], %[[W]]) : (tensor<4x8xbf16>, tensor<8x8xbf16>) -> tensor<4x8xbf16>
// CHECK: %[[B:.*]] = "ck.cast"(%b) {ck.mirror} : (tensor<8xf32>) -> tensor<8xbf16>
// CHECK-NEXT: "ck.broadcast"(%[[B]]) {dims = [1]} : (tensor<8xbf16>) -> tensor<4x8xbf16>
// CHECK: "ck.add"({{.*}}) : (tensor<4x8xbf16>, tensor<4x8xbf16>) -> tensor<4x8xbf16>
// CHECK: %[[A:.*]] = "ck.tanh"({{.*}}) : (tensor<4x8xbf16>) -> tensor<4x8xbf16>
// CHECK: "ck.cast"(%[[A]]) : (tensor<4x8xbf16>) -> tensor<4x8xf32>
// CHECK: "ck.exp"({{.*}}) : (tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK: "ck.reduce_sum"({{.*}}) {dims = [0, 1]} : (tensor<4x8xf32>) -> tensor<f32>

// GRAD-LABEL: func.func @loss_grad(
// GRAD-SAME: -> (tensor<f32>, tensor<8x8xf32>, tensor<8xf32>)

/// Bad options are errors naming the option.
// RUN: not ckopt-opt %s --pass-pipeline='autocast{dtype=f64}' 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: option 'dtype' of pass 'autocast'

module {
  func.func @loss(%x: tensor<4x8xf32>, %w: tensor<8x8xf32> {ck.param}, %b: tensor<8xf32> {ck.param}) -> tensor<f32> {
    %h = "ck.matmul"(%x, %w) : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
    %bb = "ck.broadcast"(%b) {dims = [1]} : (tensor<8xf32>) -> tensor<4x8xf32>
    %z = "ck.add"(%h, %bb) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    %a = "ck.tanh"(%z) : (tensor<4x8xf32>) -> tensor<4x8xf32>
    %e = "ck.exp"(%a) : (tensor<4x8xf32>) -> tensor<4x8xf32>
    %loss = "ck.reduce_sum"(%e) {dims = [0, 1]} : (tensor<4x8xf32>) -> tensor<f32>
    "ck.return"(%loss) : (tensor<f32>) -> ()
  }
}
