/// --to=ptx: the cuda kernels of the module as ONE PTX module, after `//`
/// comments giving each kernel's launches and each function's step
/// program. A matmul is a GEMM step (cuBLAS at run time, or the fallback
/// kernel ck_lib_gemm, which the module carries); the log is a loop kernel
/// with 32-bit indices and bare-pointer parameters (its input, then its
/// output). log links libdevice (no __nv_ call remains).
// REQUIRES: lower, libdevice
// RUN: ckopt-translate --to=ptx --sm=90 %s | FileCheck %s
// RUN: ckopt-translate --to=ptx --sm=80 %s | FileCheck %s --check-prefix=SM80

module {
  func.func @f(%x: tensor<4x300xf32>, %w: tensor<300x8xf32>) -> tensor<4x8xf32> attributes {ck.arena_bytes = 256 : i64} {
    %h = "ck.matmul"(%x, %w) {ck.offset = 0 : i64} : (tensor<4x300xf32>, tensor<300x8xf32>) -> tensor<4x8xf32>
    %t = "ck.log"(%h) {ck.offset = 128 : i64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
    "ck.return"(%t) : (tensor<4x8xf32>) -> ()
  }
}

// CHECK: // ckopt cuda module for sm_90: 1 kernels
// CHECK-NEXT: // kernel 0: loop over 32 elements (32-bit indices): ck_k0 grid [1, 1, 1] block [256, 1, 1]
// CHECK-NEXT: // step program of @f: 2 steps, arena 256 bytes, workspace 0 bytes
// CHECK-NEXT: //   0: gemm batch 1 m 4 n 8 k 300: arena[0..+128] = arg0[0..+4800] x arg1[0..+9600]  ; ck.matmul at {{.*}}ptx.ck:13:5
// CHECK-NEXT: //   1: call ck_k0(arena[0..+128], arena[128..+128])  ; ck.log at {{.*}}ptx.ck:14:5
// CHECK-NEXT: //   result 0: arena[128..+128]
// CHECK: .target sm_90
// CHECK: .visible .entry ck_k0(
// CHECK-NEXT: .param .u64 .ptr .align 1 ck_k0_param_0,
// CHECK-NEXT: .param .u64 .ptr .align 1 ck_k0_param_1
// CHECK-NEXT: )
// CHECK-NEXT: .maxntid 256, 1, 1
// CHECK: mad.lo.s32
// CHECK: .visible .entry ck_lib_gemm(
// CHECK-NOT: __nv_
// SM80: .target sm_80
