/// The emitted PTX is accepted by NVIDIA's ptxas (offline, no GPU needed):
/// a conv/pool/dropout function and a math function linked with libdevice.
// REQUIRES: lower, ptxas, libdevice
// RUN: ckopt-translate --to=ptx %s -o %t.ptx
// RUN: %ptxas -arch=sm_90 %t.ptx -o %t.cubin
// RUN: ckopt-translate --to=mlir --target=cuda %s | FileCheck %s

module {
  func.func @c(%x: tensor<1x2x6x6xf32>, %w: tensor<3x2x3x3xf32>) -> tensor<1x3x3x3xf32> attributes {ck.arena_bytes = 576 : i64} {
    %y = "ck.conv2d"(%x, %w) {padding = [1, 1], stride = [1, 1], ck.offset = 0 : i64} : (tensor<1x2x6x6xf32>, tensor<3x2x3x3xf32>) -> tensor<1x3x6x6xf32>
    %s = "ck.sigmoid"(%y) {ck.inplace = 0 : i64, ck.offset = 0 : i64} : (tensor<1x3x6x6xf32>) -> tensor<1x3x6x6xf32>
    %p = "ck.max_pool2d"(%s) {window = [2, 2], ck.offset = 448 : i64} : (tensor<1x3x6x6xf32>) -> tensor<1x3x3x3xf32>
    %d = "ck.dropout"(%p) {rate = 0.5 : f32, seed = 3 : i64, ck.offset = 0 : i64} : (tensor<1x3x3x3xf32>) -> tensor<1x3x3x3xf32>
    "ck.return"(%d) : (tensor<1x3x3x3xf32>) -> ()
  }
}

// CHECK: module attributes {gpu.container_module}
// CHECK: gpu.module @ck_kernels
// CHECK: gpu.func @c_k0_conv2d(%p0: memref<72xf32>, %p1: memref<54xf32>, %y: memref<108xf32>) kernel
// CHECK: gpu.func @c_k1_sigmoid(%p0: memref<108xf32>, %y: memref<108xf32>) kernel
// CHECK: gpu.func @c_k2_max_pool2d(
// CHECK: gpu.func @c_k3_dropout(
