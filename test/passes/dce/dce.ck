// RUN: ckopt-opt %s --split-input-file --pass-pipeline=dce | FileCheck %s
// RUN: ckopt-opt %s --split-input-file --pass-pipeline=dce --pass-statistics 2>&1 >/dev/null | FileCheck %s --check-prefix=STATS

// STATS: Pass statistics report
// STATS: dce
// STATS-NEXT: (S) 4 num-dce'd

/// An op whose result nothing reads is removed; the others keep their order.
// CHECK-LABEL: func.func @unused_op
// CHECK-NEXT:    %a = "ck.exp"(%x)
// CHECK-NEXT:    %c = "ck.tanh"(%a)
// CHECK-NEXT:    "ck.return"(%c)
module {
  func.func @unused_op(%x: tensor<4xf32>) -> tensor<4xf32> {
    %a = "ck.exp"(%x) : (tensor<4xf32>) -> tensor<4xf32>
    %b = "ck.neg"(%a) : (tensor<4xf32>) -> tensor<4xf32>
    %c = "ck.tanh"(%a) : (tensor<4xf32>) -> tensor<4xf32>
    "ck.return"(%c) : (tensor<4xf32>) -> ()
  }
}

// -----

/// A dead chain goes as a whole: removing its last op kills its producers.
// CHECK-LABEL: func.func @dead_chain
// CHECK-NEXT:    "ck.return"(%x)
module {
  func.func @dead_chain(%x: tensor<2x2xf32>) -> tensor<2x2xf32> {
    %a = "ck.exp"(%x) : (tensor<2x2xf32>) -> tensor<2x2xf32>
    %b = "ck.transpose"(%a) {perm = [1, 0]} : (tensor<2x2xf32>) -> tensor<2x2xf32>
    %c = "ck.reduce_sum"(%b) {dims = [0]} : (tensor<2x2xf32>) -> tensor<2xf32>
    "ck.return"(%x) : (tensor<2x2xf32>) -> ()
  }
}

// -----

/// Unused arguments stay (the signature is the interface); attributes of
/// surviving ops are untouched.
// CHECK-LABEL: func.func @keeps_args(%x: tensor<3xf32>, %unused: tensor<3xf32> {ck.param}) -> tensor<3xf32>
// CHECK-NEXT:    %y = "ck.relu"(%x) {ck.checkpoint}
// CHECK-NEXT:    "ck.return"(%y)
module {
  func.func @keeps_args(%x: tensor<3xf32>, %unused: tensor<3xf32> {ck.param}) -> tensor<3xf32> {
    %y = "ck.relu"(%x) {ck.checkpoint} : (tensor<3xf32>) -> tensor<3xf32>
    "ck.return"(%y) : (tensor<3xf32>) -> ()
  }
}

// -----

/// A function with nothing dead is printed unchanged.
// CHECK-LABEL: func.func @nothing_dead
// CHECK-NEXT:    %a = "ck.fill"() {value = 2.0 : f32} : () -> tensor<f32>
// CHECK-NEXT:    "ck.return"(%a, %a)
module {
  func.func @nothing_dead() -> (tensor<f32>, tensor<f32>) {
    %a = "ck.fill"() {value = 2.0 : f32} : () -> tensor<f32>
    "ck.return"(%a, %a) : (tensor<f32>, tensor<f32>) -> ()
  }
}
