// RUN: ckopt-opt %s --split-input-file --pass-pipeline=cse | FileCheck %s

/// Two identical ops merge; the later one's uses read the earlier one.
// CHECK-LABEL: func.func @simple
// CHECK-NEXT:    %a = "ck.exp"(%x)
// CHECK-NEXT:    %s = "ck.add"(%a, %a)
// CHECK-NEXT:    "ck.return"(%s)
module {
  func.func @simple(%x: tensor<4xf32>) -> tensor<4xf32> {
    %a = "ck.exp"(%x) : (tensor<4xf32>) -> tensor<4xf32>
    %b = "ck.exp"(%x) : (tensor<4xf32>) -> tensor<4xf32>
    %s = "ck.add"(%a, %b) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    "ck.return"(%s) : (tensor<4xf32>) -> ()
  }
}

// -----

/// Merges cascade: once the matmuls merge, the relus of them are identical too.
// CHECK-LABEL: func.func @cascade
// CHECK-NEXT:    %m = "ck.matmul"(%x, %w)
// CHECK-NEXT:    %r = "ck.relu"(%m)
// CHECK-NEXT:    "ck.return"(%r, %r)
module {
  func.func @cascade(%x: tensor<2x3xf32>, %w: tensor<3x2xf32>) -> (tensor<2x2xf32>, tensor<2x2xf32>) {
    %m = "ck.matmul"(%x, %w) : (tensor<2x3xf32>, tensor<3x2xf32>) -> tensor<2x2xf32>
    %n = "ck.matmul"(%x, %w) : (tensor<2x3xf32>, tensor<3x2xf32>) -> tensor<2x2xf32>
    %r = "ck.relu"(%m) : (tensor<2x2xf32>) -> tensor<2x2xf32>
    %q = "ck.relu"(%n) : (tensor<2x2xf32>) -> tensor<2x2xf32>
    "ck.return"(%r, %q) : (tensor<2x2xf32>, tensor<2x2xf32>) -> ()
  }
}

// -----

/// Different attributes or operand order keep ops apart (no commutativity).
// CHECK-LABEL: func.func @different
// CHECK-NEXT:    "ck.scale"(%x) {value = 2.0 : f32}
// CHECK-NEXT:    "ck.scale"(%x) {value = 3.0 : f32}
// CHECK-NEXT:    "ck.sub"(%x, %y)
// CHECK-NEXT:    "ck.sub"(%y, %x)
// CHECK-NEXT:    "ck.matmul"(%x, %y) {transpose_b = true}
// CHECK-NEXT:    "ck.matmul"(%x, %y) {transpose_a = true}
// CHECK-NEXT:    "ck.return"
module {
  func.func @different(%x: tensor<2x2xf32>, %y: tensor<2x2xf32>) -> (tensor<2x2xf32>, tensor<2x2xf32>, tensor<2x2xf32>, tensor<2x2xf32>, tensor<2x2xf32>, tensor<2x2xf32>) {
    %a = "ck.scale"(%x) {value = 2.0 : f32} : (tensor<2x2xf32>) -> tensor<2x2xf32>
    %b = "ck.scale"(%x) {value = 3.0 : f32} : (tensor<2x2xf32>) -> tensor<2x2xf32>
    %c = "ck.sub"(%x, %y) : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
    %d = "ck.sub"(%y, %x) : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
    %e = "ck.matmul"(%x, %y) {transpose_b = true} : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
    %f = "ck.matmul"(%x, %y) {transpose_a = true} : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
    "ck.return"(%a, %b, %c, %d, %e, %f) : (tensor<2x2xf32>, tensor<2x2xf32>, tensor<2x2xf32>, tensor<2x2xf32>, tensor<2x2xf32>, tensor<2x2xf32>) -> ()
  }
}

// -----

/// Dropout is pure: the same seed gives the same mask, so equal dropouts
/// merge; a different seed does not.
// CHECK-LABEL: func.func @dropout
// CHECK-NEXT:    %a = "ck.dropout"(%x) {rate = 0.5 : f32, seed = 7 : i64}
// CHECK-NEXT:    %c = "ck.dropout"(%x) {rate = 0.5 : f32, seed = 8 : i64}
// CHECK-NEXT:    "ck.return"(%a, %a, %c)
module {
  func.func @dropout(%x: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) {
    %a = "ck.dropout"(%x) {rate = 0.5 : f32, seed = 7 : i64} : (tensor<8xf32>) -> tensor<8xf32>
    %b = "ck.dropout"(%x) {rate = 0.5 : f32, seed = 7 : i64} : (tensor<8xf32>) -> tensor<8xf32>
    %c = "ck.dropout"(%x) {rate = 0.5 : f32, seed = 8 : i64} : (tensor<8xf32>) -> tensor<8xf32>
    "ck.return"(%a, %b, %c) : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> ()
  }
}

// -----

/// A recomputed op (ck.recompute, from remat) is not merged back into the
/// original: that would undo the rematerialization. Two recomputes merge.
// CHECK-LABEL: func.func @recompute
// CHECK-NEXT:    %a = "ck.tanh"(%x) : 
// CHECK-NEXT:    %r = "ck.tanh"(%x) {ck.recompute}
// CHECK-NEXT:    "ck.return"(%a, %r, %r)
module {
  func.func @recompute(%x: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) {
    %a = "ck.tanh"(%x) : (tensor<8xf32>) -> tensor<8xf32>
    %r = "ck.tanh"(%x) {ck.recompute} : (tensor<8xf32>) -> tensor<8xf32>
    %s = "ck.tanh"(%x) {ck.recompute} : (tensor<8xf32>) -> tensor<8xf32>
    "ck.return"(%a, %r, %s) : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> ()
  }
}

// -----

/// In-place ops are never merged (they overwrite an operand's buffer), and
/// a value that is later overwritten in place is not given more uses.
// CHECK-LABEL: func.func @inplace
// CHECK-NEXT:    %a = "ck.exp"(%x)
// CHECK-NEXT:    %b = "ck.exp"(%x)
// CHECK-NEXT:    %c = "ck.neg"(%a) {ck.inplace = 0 : i64}
// CHECK-NEXT:    %d = "ck.neg"(%b) {ck.inplace = 0 : i64}
// CHECK-NEXT:    "ck.return"(%c, %d)
module {
  func.func @inplace(%x: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
    %a = "ck.exp"(%x) : (tensor<8xf32>) -> tensor<8xf32>
    %b = "ck.exp"(%x) : (tensor<8xf32>) -> tensor<8xf32>
    %c = "ck.neg"(%a) {ck.inplace = 0 : i64} : (tensor<8xf32>) -> tensor<8xf32>
    %d = "ck.neg"(%b) {ck.inplace = 0 : i64} : (tensor<8xf32>) -> tensor<8xf32>
    "ck.return"(%c, %d) : (tensor<8xf32>, tensor<8xf32>) -> ()
  }
}

// -----

/// Ops with declared result types (fill, reshape) merge only at equal types.
// CHECK-LABEL: func.func @declared_types
// CHECK-NEXT:    %a = "ck.fill"() {value = 0.0 : f32} : () -> tensor<2xf32>
// CHECK-NEXT:    %b = "ck.fill"() {value = 0.0 : f32} : () -> tensor<3xf32>
// CHECK-NEXT:    "ck.return"(%a, %b, %b)
module {
  func.func @declared_types() -> (tensor<2xf32>, tensor<3xf32>, tensor<3xf32>) {
    %a = "ck.fill"() {value = 0.0 : f32} : () -> tensor<2xf32>
    %b = "ck.fill"() {value = 0.0 : f32} : () -> tensor<3xf32>
    %c = "ck.fill"() {value = 0.0 : f32} : () -> tensor<3xf32>
    "ck.return"(%a, %b, %c) : (tensor<2xf32>, tensor<3xf32>, tensor<3xf32>) -> ()
  }
}

// -----

/// A duplicate that is overwritten in place is not merged either: its
/// in-place user would then overwrite the earlier value, still returned.
// CHECK-LABEL: func.func @inplace_later
// CHECK-NEXT:    %a = "ck.exp"(%x)
// CHECK-NEXT:    %b = "ck.exp"(%x)
// CHECK-NEXT:    %d = "ck.neg"(%b) {ck.inplace = 0 : i64}
// CHECK-NEXT:    "ck.return"(%a, %d)
module {
  func.func @inplace_later(%x: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
    %a = "ck.exp"(%x) : (tensor<8xf32>) -> tensor<8xf32>
    %b = "ck.exp"(%x) : (tensor<8xf32>) -> tensor<8xf32>
    %d = "ck.neg"(%b) {ck.inplace = 0 : i64} : (tensor<8xf32>) -> tensor<8xf32>
    "ck.return"(%a, %d) : (tensor<8xf32>, tensor<8xf32>) -> ()
  }
}
