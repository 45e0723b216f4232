/// Element types: both backends lower an f16 value (loaded, widened to
/// f32, computed, rounded back on store; in the PTX, LLVM folds the
/// widened negation back to `neg.f16`, the same bits); on cuda a
/// convolution computes f32 only (the cpu backend widens it), and the error
/// points at the op.
// REQUIRES: lower
// RUN: ckopt-translate --to=mlir --func half %s | FileCheck %s --check-prefix=CPU
// RUN: ckopt-translate --to=ptx --func half %s | FileCheck %s --check-prefix=PTX
// RUN: not ckopt-translate --to=ptx --func conv %s 2>&1 | FileCheck %s

module {
  func.func @half(%x: tensor<4xf16>) -> tensor<4xf16> attributes {ck.arena_bytes = 64 : i64} {
    %y = "ck.neg"(%x) {ck.offset = 0 : i64} : (tensor<4xf16>) -> tensor<4xf16>
    "ck.return"(%y) : (tensor<4xf16>) -> ()
  }
  func.func @conv(%x: tensor<1x1x3x3xf16>, %w: tensor<1x1x3x3xf16>) -> tensor<1x1x1x1xf16> attributes {ck.arena_bytes = 64 : i64} {
    %y = "ck.conv2d"(%x, %w) {padding = [0, 0], stride = [1, 1], ck.offset = 0 : i64} : (tensor<1x1x3x3xf16>, tensor<1x1x3x3xf16>) -> tensor<1x1x1x1xf16>
    "ck.return"(%y) : (tensor<1x1x1x1xf16>) -> ()
  }
}
// CPU: func.func @ck_k0(%in0: memref<4xf16>, %out0: memref<4xf16>
// CPU: arith.extf {{.*}} : f16 to f32
// CPU: arith.negf
// CPU: arith.truncf {{.*}} : f32 to f16
// PTX: .visible .entry ck_k0(
// PTX: ld.global.b16
// PTX: neg.f16
// PTX: st.global.b16
// CHECK: error-dtype.ck:17:5: error: 'ck.conv2d' op is not supported by the cuda lowering on non-f32 values (convolutions are f32 on cuda
