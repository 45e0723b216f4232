/// sqrt and rsqrt on cuda are correctly rounded, as on the cpu and in the
/// interpreter: `sqrt.rn.f32`, and rsqrt as `1 / sqrt` with a correctly
/// rounded reciprocal; no approximate sqrt or rsqrt, and no libdevice needed
/// (MLIR's math.sqrt would become libdevice's __nv_sqrtf, `sqrt.approx.f32`
/// in this pipeline). `-o -` writes to stdout.
// REQUIRES: lower
// RUN: ckopt-translate --to=ptx %s -o - | FileCheck %s

module {
  func.func @f(%x: tensor<64xf32>) -> tensor<64xf32> attributes {ck.arena_bytes = 256 : i64} {
    %s = "ck.sqrt"(%x) {ck.fusion = 0 : i64} : (tensor<64xf32>) -> tensor<64xf32>
    %r = "ck.rsqrt"(%s) {ck.fusion = 0 : i64, ck.offset = 0 : i64} : (tensor<64xf32>) -> tensor<64xf32>
    "ck.return"(%r) : (tensor<64xf32>) -> ()
  }
}

// CHECK: .visible .entry ck_k0(
// CHECK-NOT: approx
// CHECK: sqrt.rn.f32
// CHECK-NOT: approx
// CHECK: sqrt.rn.f32
// CHECK-NOT: approx
// CHECK: rcp.rn.f32
// CHECK-NOT: approx
// CHECK-NOT: __nv_
