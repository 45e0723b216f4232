/// --to=llvm: the cpu kernels as LLVM IR after the step program (`;`
/// comments). A kernel takes bare float pointers and the i64 range of its
/// outer loop; exp is ckopt_ir::math's arithmetic (as the interpreter's),
/// so the elementwise loop runs 8 or 16 lanes at a time with no call.
// REQUIRES: lower
// RUN: ckopt-translate --to=llvm %s | FileCheck %s

module {
  func.func @f(%x: tensor<64xf32>, %y: tensor<64xf32>) -> tensor<64xf32> attributes {ck.arena_bytes = 256 : i64} {
    %e = "ck.exp"(%x) {ck.fusion = 0 : i64} : (tensor<64xf32>) -> tensor<64xf32>
    %s = "ck.add"(%e, %y) {ck.fusion = 0 : i64, ck.offset = 0 : i64} : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32>
    "ck.return"(%s) : (tensor<64xf32>) -> ()
  }
}

// CHECK: ; step program of @f: 1 steps, arena 256 bytes, workspace 0 bytes
// CHECK-NEXT: ;   0: call ck_k0(arg0[0..+256], arg1[0..+256], arena[0..+256])  ; fusion of ck.exp, ck.add
// CHECK: define void @ck_k0(ptr %0, ptr %1, ptr %2, i64 %3, i64 %4)
// CHECK-NOT: call
// CHECK-DAG: fptosi <{{8|16}} x float>
// CHECK-DAG: fadd <{{8|16}} x float>
