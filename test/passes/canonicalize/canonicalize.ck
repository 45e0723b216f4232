// RUN: ckopt-opt %s --split-input-file --pass-pipeline=canonicalize | FileCheck %s

/// scale by 1.0 is its operand.
// CHECK-LABEL: func.func @scale_one
// CHECK-NEXT:    %y = "ck.exp"(%x)
// CHECK-NEXT:    "ck.return"(%y)
module {
  func.func @scale_one(%x: tensor<4xf32>) -> tensor<4xf32> {
    %s = "ck.scale"(%x) {value = 1.0 : f32} : (tensor<4xf32>) -> tensor<4xf32>
    %y = "ck.exp"(%s) : (tensor<4xf32>) -> tensor<4xf32>
    "ck.return"(%y) : (tensor<4xf32>) -> ()
  }
}

// -----

/// scale by -1.0 becomes neg; other scales stay.
// CHECK-LABEL: func.func @scale_minus_one
// CHECK-NEXT:    %a = "ck.neg"(%x) : (tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT:    %b = "ck.scale"(%x) {value = 2.0 : f32}
// CHECK-NEXT:    "ck.return"(%a, %b)
module {
  func.func @scale_minus_one(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
    %a = "ck.scale"(%x) {value = -1.0 : f32} : (tensor<4xf32>) -> tensor<4xf32>
    %b = "ck.scale"(%x) {value = 2.0 : f32} : (tensor<4xf32>) -> tensor<4xf32>
    "ck.return"(%a, %b) : (tensor<4xf32>, tensor<4xf32>) -> ()
  }
}

// -----

/// neg(neg x) is x; the inner neg, now unused, is erased.
// CHECK-LABEL: func.func @double_neg
// CHECK-NEXT:    %y = "ck.relu"(%x)
// CHECK-NEXT:    "ck.return"(%y)
module {
  func.func @double_neg(%x: tensor<4xf32>) -> tensor<4xf32> {
    %a = "ck.neg"(%x) : (tensor<4xf32>) -> tensor<4xf32>
    %b = "ck.neg"(%a) : (tensor<4xf32>) -> tensor<4xf32>
    %y = "ck.relu"(%b) : (tensor<4xf32>) -> tensor<4xf32>
    "ck.return"(%y) : (tensor<4xf32>) -> ()
  }
}

// -----

/// neg(neg x) with the inner neg still used elsewhere: the inner one stays.
// CHECK-LABEL: func.func @double_neg_shared
// CHECK-NEXT:    %a = "ck.neg"(%x)
// CHECK-NEXT:    "ck.return"(%x, %a)
module {
  func.func @double_neg_shared(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
    %a = "ck.neg"(%x) : (tensor<4xf32>) -> tensor<4xf32>
    %b = "ck.neg"(%a) : (tensor<4xf32>) -> tensor<4xf32>
    "ck.return"(%b, %a) : (tensor<4xf32>, tensor<4xf32>) -> ()
  }
}

// -----

/// A reshape to the operand's own type is the operand; reshape(reshape x)
/// is one reshape of x.
// CHECK-LABEL: func.func @reshapes
// CHECK-NEXT:    %b = "ck.reshape"(%x) : (tensor<2x6xf32>) -> tensor<12xf32>
// CHECK-NEXT:    "ck.return"(%b, %x)
module {
  func.func @reshapes(%x: tensor<2x6xf32>) -> (tensor<12xf32>, tensor<2x6xf32>) {
    %a = "ck.reshape"(%x) : (tensor<2x6xf32>) -> tensor<3x4xf32>
    %b = "ck.reshape"(%a) : (tensor<3x4xf32>) -> tensor<12xf32>
    %c = "ck.reshape"(%x) : (tensor<2x6xf32>) -> tensor<2x6xf32>
    "ck.return"(%b, %c) : (tensor<12xf32>, tensor<2x6xf32>) -> ()
  }
}

// -----

/// Transpose with the identity permutation is its operand; two transposes
/// compose (result dim i = x dim p[q[i]]); inverse permutations cancel.
// CHECK-LABEL: func.func @transposes
// CHECK-NEXT:    %d = "ck.transpose"(%x) {perm = [1, 2, 0]} : (tensor<2x3x4xf32>) -> tensor<3x4x2xf32>
// CHECK-NEXT:    "ck.return"(%x, %x, %d)
module {
  func.func @transposes(%x: tensor<2x3x4xf32>) -> (tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<3x4x2xf32>) {
    %i = "ck.transpose"(%x) {perm = [0, 1, 2]} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
    %a = "ck.transpose"(%x) {perm = [1, 2, 0]} : (tensor<2x3x4xf32>) -> tensor<3x4x2xf32>
    %b = "ck.transpose"(%a) {perm = [2, 0, 1]} : (tensor<3x4x2xf32>) -> tensor<2x3x4xf32>
    %c = "ck.transpose"(%x) {perm = [1, 0, 2]} : (tensor<2x3x4xf32>) -> tensor<3x2x4xf32>
    %d = "ck.transpose"(%c) {perm = [0, 2, 1]} : (tensor<3x2x4xf32>) -> tensor<3x4x2xf32>
    "ck.return"(%i, %b, %d) : (tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<3x4x2xf32>) -> ()
  }
}

// -----

/// Whole-tensor slice, same-shape broadcast, empty reduction, one-operand
/// concat and dropout with rate 0 are all the operand.
// CHECK-LABEL: func.func @identity_data_movement
// CHECK-NEXT:    "ck.return"(%x)
module {
  func.func @identity_data_movement(%x: tensor<2x2xf32>) -> tensor<2x2xf32> {
    %a = "ck.slice"(%x) {offsets = [0, 0]} : (tensor<2x2xf32>) -> tensor<2x2xf32>
    %b = "ck.broadcast"(%a) {dims = [0, 1]} : (tensor<2x2xf32>) -> tensor<2x2xf32>
    %c = "ck.reduce_sum"(%b) {dims = []} : (tensor<2x2xf32>) -> tensor<2x2xf32>
    %d = "ck.concat"(%c) {dim = 0 : i64} : (tensor<2x2xf32>) -> tensor<2x2xf32>
    %e = "ck.dropout"(%d) {rate = 0.0 : f32, seed = 1 : i64} : (tensor<2x2xf32>) -> tensor<2x2xf32>
    "ck.return"(%e) : (tensor<2x2xf32>) -> ()
  }
}

// -----

/// Folds never extend the life of a value overwritten in place later.
// CHECK-LABEL: func.func @inplace_blocks_fold
// CHECK-NEXT:    %e = "ck.exp"(%x)
// CHECK-NEXT:    %s = "ck.scale"(%e) {value = 1.0 : f32}
// CHECK-NEXT:    %t = "ck.tanh"(%e) {ck.inplace = 0 : i64}
// CHECK-NEXT:    %y = "ck.add"(%s, %t)
module {
  func.func @inplace_blocks_fold(%x: tensor<4xf32>) -> tensor<4xf32> {
    %e = "ck.exp"(%x) : (tensor<4xf32>) -> tensor<4xf32>
    %s = "ck.scale"(%e) {value = 1.0 : f32} : (tensor<4xf32>) -> tensor<4xf32>
    %t = "ck.tanh"(%e) {ck.inplace = 0 : i64} : (tensor<4xf32>) -> tensor<4xf32>
    %y = "ck.add"(%s, %t) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    "ck.return"(%y) : (tensor<4xf32>) -> ()
  }
}

// -----

/// Nor fold a value that is overwritten in place onto one still read later:
/// the tanh would overwrite %e, which the add reads after it.
// CHECK-LABEL: func.func @inplace_user_blocks_fold
// CHECK-NEXT:    %e = "ck.exp"(%x)
// CHECK-NEXT:    %s = "ck.scale"(%e) {value = 1.0 : f32}
// CHECK-NEXT:    %t = "ck.tanh"(%s) {ck.inplace = 0 : i64}
// CHECK-NEXT:    %y = "ck.add"(%e, %t)
module {
  func.func @inplace_user_blocks_fold(%x: tensor<4xf32>) -> tensor<4xf32> {
    %e = "ck.exp"(%x) : (tensor<4xf32>) -> tensor<4xf32>
    %s = "ck.scale"(%e) {value = 1.0 : f32} : (tensor<4xf32>) -> tensor<4xf32>
    %t = "ck.tanh"(%s) {ck.inplace = 0 : i64} : (tensor<4xf32>) -> tensor<4xf32>
    %y = "ck.add"(%e, %t) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    "ck.return"(%y) : (tensor<4xf32>) -> ()
  }
}

// -----

/// Nothing to fold: the function is printed unchanged.
// CHECK-LABEL: func.func @unchanged
// CHECK-NEXT:    %a = "ck.transpose"(%x) {perm = [1, 0]}
// CHECK-NEXT:    %b = "ck.scale"(%a) {value = 0.5 : f32}
// CHECK-NEXT:    %c = "ck.dropout"(%b) {rate = 0.25 : f32, seed = 1 : i64}
// CHECK-NEXT:    "ck.return"(%c)
module {
  func.func @unchanged(%x: tensor<2x3xf32>) -> tensor<3x2xf32> {
    %a = "ck.transpose"(%x) {perm = [1, 0]} : (tensor<2x3xf32>) -> tensor<3x2xf32>
    %b = "ck.scale"(%a) {value = 0.5 : f32} : (tensor<3x2xf32>) -> tensor<3x2xf32>
    %c = "ck.dropout"(%b) {rate = 0.25 : f32, seed = 1 : i64} : (tensor<3x2xf32>) -> tensor<3x2xf32>
    "ck.return"(%c) : (tensor<3x2xf32>) -> ()
  }
}
