/// --to=mlir: a planned function becomes one func.func over the arena:
/// arguments are separate i8 buffers viewed as flat f32 memrefs, every op
/// result is a memref.view of the arena at its ck.offset, an in-place op
/// writes into its operand's view, each op is one linalg.generic; the text is
/// valid upstream MLIR (mlir-opt parses and verifies it).
// REQUIRES: lower
// RUN: ckopt-translate --to=mlir %s | FileCheck %s
// RUN: ckopt-translate --to=mlir %s | %mlir-opt --verify-diagnostics > /dev/null

module {
  func.func @mlp(%x: tensor<2x3xf32>, %w: tensor<3x4xf32> {ck.param}) -> tensor<f32> attributes {ck.arena_bytes = 128 : i64} {
    %h = "ck.matmul"(%x, %w) {ck.offset = 0 : i64} : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
    %a = "ck.tanh"(%h) {ck.inplace = 0 : i64, ck.offset = 0 : i64} : (tensor<2x4xf32>) -> tensor<2x4xf32>
    %l = "ck.reduce_sum"(%a) {dims = [0, 1], ck.offset = 64 : i64} : (tensor<2x4xf32>) -> tensor<f32>
    "ck.return"(%l) : (tensor<f32>) -> ()
  }
}

// CHECK-LABEL: func.func @mlp(%arena: memref<128xi8>, %in0: memref<24xi8>, %in1: memref<48xi8>) attributes {llvm.emit_c_interface}
// CHECK: %[[X:.*]] = memref.view %in0[%c0][] : memref<24xi8> to memref<6xf32>
// CHECK: %[[W:.*]] = memref.view %in1[%c0][] : memref<48xi8> to memref<12xf32>
/// matmul at offset 0, called with its operands and its result view.
// CHECK: // ck.matmul %h : tensor<2x4xf32>
// CHECK-NEXT: %[[O0:.*]] = arith.constant 0 : index
// CHECK-NEXT: %[[H:.*]] = memref.view %arena[%[[O0]]][] : memref<128xi8> to memref<8xf32>
// CHECK-NEXT: func.call @mlp_k0_matmul(%[[X]], %[[W]], %[[H]]) : (memref<6xf32>, memref<12xf32>, memref<8xf32>) -> ()
/// tanh in place: its result is a view at the same offset 0.
// CHECK: // ck.tanh %a
// CHECK-NEXT: arith.constant 0 : index
// CHECK-NEXT: %[[A:.*]] = memref.view %arena
// CHECK-NEXT: func.call @mlp_k1_tanh(%[[H]], %[[A]])
/// The scalar loss lives at offset 64.
// CHECK: // ck.reduce_sum %l : tensor<f32>
// CHECK-NEXT: arith.constant 64 : index
// CHECK-NEXT: %[[L:.*]] = memref.view %arena{{.*}} to memref<1xf32>
// CHECK-NEXT: func.call @mlp_k2_reduce_sum(%[[A]], %[[L]])
// CHECK: return
/// One private noinline function per op: one linalg.generic over the result
/// with the element code (a K = 3 reduction loop for matmul).
// CHECK: func.func private @mlp_k0_matmul(%p0: memref<6xf32>, %p1: memref<12xf32>, %y: memref<8xf32>) attributes {passthrough = ["noinline"]}
// CHECK-NEXT: linalg.generic {indexing_maps = [#ck_id], iterator_types = ["parallel"]} outs(%y : memref<8xf32>)
// CHECK: scf.for
// CHECK: memref.load %p0
// CHECK: memref.load %p1
// CHECK: func.func private @mlp_k1_tanh(%p0: memref<8xf32>, %y: memref<8xf32>)
// CHECK: math.tanh
// CHECK: func.func private @mlp_k2_reduce_sum(%p0: memref<8xf32>, %y: memref<1xf32>)
