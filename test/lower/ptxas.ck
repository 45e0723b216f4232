/// The emitted PTX is accepted by NVIDIA's ptxas (offline, no GPU needed):
/// a function with a convolution (im2col + GEMM library steps), a
/// sigmoid (ckopt_ir::math's exp: f32 arithmetic and bit operations, no
/// libdevice), a pool and dropout (single-op kernels), and a row reduction
/// (one block per row, a shared-memory tree). --to=mlir --target=cuda shows
/// the gpu-dialect kernels.
// REQUIRES: lower, ptxas
// RUN: ckopt-translate --to=ptx %s -o %t.ptx
// RUN: %ptxas -arch=sm_90 %t.ptx -o %t.cubin
// RUN: ckopt-translate --to=mlir --target=cuda %s | FileCheck %s

module {
  func.func @c(%x: tensor<1x2x6x6xf32>, %w: tensor<3x2x3x3xf32>) -> (tensor<1x3x3x3xf32>, tensor<1x3xf32>) attributes {ck.arena_bytes = 640 : i64} {
    %y = "ck.conv2d"(%x, %w) {padding = [1, 1], stride = [1, 1], ck.offset = 0 : i64} : (tensor<1x2x6x6xf32>, tensor<3x2x3x3xf32>) -> tensor<1x3x6x6xf32>
    %s = "ck.sigmoid"(%y) {ck.inplace = 0 : i64, ck.offset = 0 : i64} : (tensor<1x3x6x6xf32>) -> tensor<1x3x6x6xf32>
    %p = "ck.max_pool2d"(%s) {window = [2, 2], ck.offset = 448 : i64} : (tensor<1x3x6x6xf32>) -> tensor<1x3x3x3xf32>
    %d = "ck.dropout"(%p) {rate = 0.5 : f32, seed = 3 : i64, ck.offset = 0 : i64} : (tensor<1x3x3x3xf32>) -> tensor<1x3x3x3xf32>
    %r = "ck.reduce_sum"(%p) {dims = [2, 3], ck.offset = 576 : i64} : (tensor<1x3x3x3xf32>) -> tensor<1x3xf32>
    "ck.return"(%d, %r) : (tensor<1x3x3x3xf32>, tensor<1x3xf32>) -> ()
  }
}

// CHECK: // step program of @c: 5 steps
// CHECK: conv Forward n 1 c 2 6x6 f 3 k 3x3 stride 1x1 pad 1x1
// CHECK: module attributes {gpu.container_module}
// CHECK: gpu.module @ck_kernels
// CHECK: // loop over 108 elements (32-bit indices)
// CHECK-NEXT: gpu.func @ck_k0(%in0: memref<108xf32>, %out0: memref<108xf32>) kernel
// CHECK: arith.fptosi
// CHECK-NOT: math.exp
// CHECK: // ck.max_pool2d per element (27)
// CHECK-NEXT: gpu.func @ck_k1(%in0: memref<108xf32>, %out0: memref<27xf32>) kernel
// CHECK: // row reduction: 3 rows of 9, 32 threads per row (32-bit indices)
// CHECK-NEXT: gpu.func @ck_k3(%in0: memref<27xf32>, %out0: memref<3xf32>) workgroup(%sh : memref<32xf32, #gpu.address_space<workgroup>>) kernel
// CHECK: gpu.barrier
// CHECK: gpu.func @ck_lib_gemm(
// CHECK: gpu.func @ck_lib_im2col(
// CHECK: gpu.func @ck_lib_col2im(
