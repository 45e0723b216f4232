/// inplace marks: an op overwrites an operand only when that operand dies
/// at it; arguments, results and values read later are never overwritten.

// RUN: ckopt-opt %s --pass-pipeline='inplace' | FileCheck %s
// RUN: ckopt-opt %s --pass-pipeline='inplace,memplan' --memory-report=- -o /dev/null | FileCheck %s --check-prefix=REPORT

/// Backward-like code: relu_grad overwrites one of its operands (both die
/// there); the gradient sum accumulates in place; the relu may not
/// overwrite %x (relu_grad reads it later).
// CHECK-LABEL: func.func @grad(
// CHECK-NEXT:    %x = "ck.exp"(%a)
// CHECK-NEXT:    %y = "ck.relu"(%x) :
// CHECK-NEXT:    %dy = "ck.tanh"(%y) {ck.inplace = 0 : i64}
// CHECK-NEXT:    %dx = "ck.relu_grad"(%x, %dy) {ck.inplace = {{[01]}} : i64}
// CHECK-NEXT:    %e = "ck.exp"(%b) :
// CHECK-NEXT:    %acc = "ck.add"(%e, %dx) {ck.inplace = {{[01]}} : i64}

/// Arguments are never overwritten; neither is a returned value.
// CHECK-LABEL: func.func @keep(
// CHECK-NEXT:    %n = "ck.neg"(%a) :
// CHECK-NEXT:    %t = "ck.tanh"(%n) :
// CHECK-NEXT:    %s = "ck.sigmoid"(%t) {ck.inplace = 0 : i64}

// REPORT: "function": "grad"
// REPORT: "inplace_ops": 3
// REPORT: "function": "keep"
// REPORT: "inplace_ops": 1

module {
  func.func @grad(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
    %x = "ck.exp"(%a) : (tensor<4xf32>) -> tensor<4xf32>
    %y = "ck.relu"(%x) : (tensor<4xf32>) -> tensor<4xf32>
    %dy = "ck.tanh"(%y) : (tensor<4xf32>) -> tensor<4xf32>
    %dx = "ck.relu_grad"(%x, %dy) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %e = "ck.exp"(%b) : (tensor<4xf32>) -> tensor<4xf32>
    %acc = "ck.add"(%e, %dx) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    "ck.return"(%acc) : (tensor<4xf32>) -> ()
  }
  func.func @keep(%a: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
    %n = "ck.neg"(%a) : (tensor<4xf32>) -> tensor<4xf32>
    %t = "ck.tanh"(%n) : (tensor<4xf32>) -> tensor<4xf32>
    %s = "ck.sigmoid"(%t) : (tensor<4xf32>) -> tensor<4xf32>
    "ck.return"(%n, %s) : (tensor<4xf32>, tensor<4xf32>) -> ()
  }
}
