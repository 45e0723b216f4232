/// --to=mlir (cpu): the step program of each function as comments (GEMM
/// library calls and kernel calls with the arena/argument bytes they read
/// and write), then every distinct kernel as one func.func taking bare
/// buffers and the [lo, hi) range of its outer loop; a fusion group is one
/// kernel whose internal values (the broadcast, the add) are never stored,
/// and an in-place result is stored into its operand's buffer. The text is
/// valid upstream MLIR (mlir-opt parses and verifies it).
// REQUIRES: lower
// RUN: ckopt-translate --to=mlir %s | FileCheck %s
// RUN: ckopt-translate --to=mlir %s | %mlir-opt --verify-diagnostics > /dev/null

module {
  func.func @mlp(%x: tensor<2x3xf32>, %w: tensor<3x4xf32> {ck.param}, %b: tensor<4xf32>) -> (tensor<2x4xf32>, tensor<f32>) attributes {ck.arena_bytes = 128 : i64} {
    %h = "ck.matmul"(%x, %w) {ck.offset = 0 : i64} : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
    %bb = "ck.broadcast"(%b) {dims = [1], ck.fusion = 0 : i64} : (tensor<4xf32>) -> tensor<2x4xf32>
    %z = "ck.add"(%h, %bb) {ck.fusion = 0 : i64, ck.inplace = 0 : i64} : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
    %a = "ck.tanh"(%z) {ck.fusion = 0 : i64, ck.inplace = 0 : i64, ck.offset = 0 : i64} : (tensor<2x4xf32>) -> tensor<2x4xf32>
    %l = "ck.reduce_sum"(%a) {dims = [0, 1], ck.offset = 64 : i64} : (tensor<2x4xf32>) -> tensor<f32>
    "ck.return"(%a, %l) : (tensor<2x4xf32>, tensor<f32>) -> ()
  }
}

// CHECK: // step program of @mlp: 3 steps, arena 128 bytes, workspace 0 bytes
// CHECK-NEXT: //   0: gemm batch 1 m 2 n 4 k 3: arena[0..+32] = arg0[0..+24] x arg1[0..+48]  ; ck.matmul at {{.*}}cpu-mlir.ck:14:5
/// The fused kernel reads the bias and the matmul result, and writes in place.
// CHECK-NEXT: //   1: call ck_k0(arg2[0..+16], arena[0..+32], arena[0..+32])  ; fusion of ck.broadcast, ck.add, ck.tanh at {{.*}}:15:5
// CHECK-NEXT: //   2: call ck_k1(arena[0..+32], arena[64..+4])  ; ck.reduce_sum at {{.*}}:18:5
// CHECK-NEXT: //   result 0: arena[0..+32]
// CHECK-NEXT: //   result 1: arena[64..+4]
// CHECK: module {
// CHECK: // kind Loop { shape: [2, 4], flat: false } alias [Some(1)]
// CHECK-NEXT: func.func @ck_k0(%in0: memref<4xf32>, %in1: memref<8xf32>, %out0: memref<8xf32>, %lo: index, %hi: index)
// CHECK: scf.for %{{.*}} = %lo to %hi
/// tanh is ckopt_ir::math's arithmetic (exp's 2^k from an integer), not a call.
// CHECK: arith.fptosi
// CHECK-NOT: memref.store {{.*}}%in
// CHECK: memref.store %{{.*}}, %out0
/// A full reduction: lane-wise partial sums in a vector, combined in a fixed order.
// CHECK: // kind Reduce { reduce: 0, rows: true } alias [None]
// CHECK-NEXT: func.func @ck_k1(%in0: memref<8xf32>, %out0: memref<1xf32>, %lo: index, %hi: index)
// CHECK: vector.reduction <add>
