/// An element type the kernels do not implement: the error points at the op.
// REQUIRES: lower
// RUN: not ckopt-translate --to=mlir %s 2>&1 | FileCheck %s
// RUN: not ckopt-translate --to=ptx %s 2>&1 | FileCheck %s

module {
  func.func @half(%x: tensor<4xf16>) -> tensor<4xf16> attributes {ck.arena_bytes = 64 : i64} {
    %y = "ck.neg"(%x) {ck.offset = 0 : i64} : (tensor<4xf16>) -> tensor<4xf16>
    "ck.return"(%y) : (tensor<4xf16>) -> ()
  }
}
// CHECK: error-dtype.ck:8:5: error: 'ck.neg' op operand %x: element type f16 is not supported by the lowering (f32 only)
