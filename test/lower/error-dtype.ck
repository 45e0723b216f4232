/// Element types: the cpu backend lowers an f16 value (loaded, widened to
/// f32, computed, rounded back on store); cuda computes f32 only and the
/// error points at the op.
// REQUIRES: lower
// RUN: ckopt-translate --to=mlir %s | FileCheck %s --check-prefix=CPU
// RUN: not ckopt-translate --to=ptx %s 2>&1 | FileCheck %s

module {
  func.func @half(%x: tensor<4xf16>) -> tensor<4xf16> attributes {ck.arena_bytes = 64 : i64} {
    %y = "ck.neg"(%x) {ck.offset = 0 : i64} : (tensor<4xf16>) -> tensor<4xf16>
    "ck.return"(%y) : (tensor<4xf16>) -> ()
  }
}
// CPU: func.func @ck_k0(%in0: memref<4xf16>, %out0: memref<4xf16>
// CPU: arith.extf {{.*}} : f16 to f32
// CPU: arith.negf
// CPU: arith.truncf {{.*}} : f32 to f16
// CHECK: error-dtype.ck:10:5: error: 'ck.neg' op operand %x: element type f16 is not supported by the cuda lowering (f32 only)
