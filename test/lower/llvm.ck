/// --to=llvm: host LLVM IR of the cpu backend; the C interface takes one
/// descriptor pointer for the arena and one per argument.
// REQUIRES: lower
// RUN: ckopt-translate --to=llvm %s | FileCheck %s

module {
  func.func @f(%x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> attributes {ck.arena_bytes = 16 : i64} {
    %e = "ck.exp"(%x) {ck.offset = 0 : i64} : (tensor<4xf32>) -> tensor<4xf32>
    %s = "ck.add"(%e, %y) {ck.inplace = 0 : i64, ck.offset = 0 : i64} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    "ck.return"(%s) : (tensor<4xf32>) -> ()
  }
}

// CHECK-DAG: define void @f(ptr %{{.*}}, ptr %{{.*}}, i64 %{{.*}}, i64 %{{.*}}, i64 %{{.*}}, ptr
// CHECK-DAG: define void @_mlir_ciface_f(ptr %{{.*}}, ptr %{{.*}}, ptr %{{.*}})
// CHECK-DAG: call float @llvm.exp.f32(float
// CHECK-DAG: fadd float
/// Each op is its own noinline function, called in schedule order.
// CHECK-DAG: call void @f_k0_exp(
// CHECK-DAG: call void @f_k1_add(
// CHECK-DAG: define void @f_k0_exp(ptr %{{.*}}) #[[NI:[0-9]+]]
// CHECK-DAG: attributes #[[NI]] = { noinline }
