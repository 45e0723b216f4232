// RUN: ckopt-opt %s --split-input-file --verify-diagnostics

/// The type rules of the language-model ops (ir/src/mixed.rs): each case
/// is an independent chunk; every expected diagnostic must be produced.

/// A float index operand.
func.func @f(%x: tensor<3x2xf32>, %i: tensor<2xf32>) -> tensor<2x2xf32> {
  // expected-error@+1 {{'ck.gather' op the index operand must have an integer element type (i64 or i32), got tensor<2xf32>}}
  %y = "ck.gather"(%x, %i) {axis = 0} : (tensor<3x2xf32>, tensor<2xf32>) -> tensor<2x2xf32>
  "ck.return"(%y) : (tensor<2x2xf32>) -> ()
}

// -----

/// axis out of range.
func.func @f(%x: tensor<3x2xf32>, %i: tensor<2xi64>) -> tensor<2x2xf32> {
  // expected-error@+1 {{'axis' = 2 is out of range for rank 2}}
  %y = "ck.gather"(%x, %i) {axis = 2} : (tensor<3x2xf32>, tensor<2xi64>) -> tensor<2x2xf32>
  "ck.return"(%y) : (tensor<2x2xf32>) -> ()
}

// -----

/// gather's result shape is x.shape[:axis] ++ idx.shape ++ x.shape[axis+1:].
func.func @f(%x: tensor<3x2xf32>, %i: tensor<2xi64>) -> tensor<2x3xf32> {
  // expected-error@+1 {{result type tensor<2x3xf32> does not match the inferred type tensor<2x2xf32>}}
  %y = "ck.gather"(%x, %i) {axis = 0} : (tensor<3x2xf32>, tensor<2xi64>) -> tensor<2x3xf32>
  "ck.return"(%y) : (tensor<2x3xf32>) -> ()
}

// -----

/// gather_grad: dy must be what gather of the result would give.
func.func @f(%i: tensor<2xi64>, %dy: tensor<3x2xf32>) -> tensor<3x2xf32> {
  // expected-error@+1 {{gather of tensor<3x2xf32> at indices tensor<2xi64> along axis 0 gives tensor<2x2xf32>, not the type of dy tensor<3x2xf32>}}
  %y = "ck.gather_grad"(%i, %dy) {axis = 0} : (tensor<2xi64>, tensor<3x2xf32>) -> tensor<3x2xf32>
  "ck.return"(%y) : (tensor<3x2xf32>) -> ()
}

// -----

/// take_along needs an index of x's rank.
func.func @f(%x: tensor<3x2xf32>, %i: tensor<2xi64>) -> tensor<2xf32> {
  // expected-error@+1 {{the index operand tensor<2xi64> must have the rank of tensor<3x2xf32>}}
  %y = "ck.take_along"(%x, %i) {axis = 0} : (tensor<3x2xf32>, tensor<2xi64>) -> tensor<2xf32>
  "ck.return"(%y) : (tensor<2xf32>) -> ()
}

// -----

/// A comparison gives i1.
func.func @f(%a: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{result type tensor<2xf32> does not match the inferred type tensor<2xi1>}}
  %y = "ck.lt"(%a, %a) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  "ck.return"(%y) : (tensor<2xf32>) -> ()
}

// -----

/// Comparison operands share one element type.
func.func @f(%a: tensor<2xf32>, %b: tensor<2xi64>) -> tensor<2xi1> {
  // expected-error@+1 {{operand element types differ: tensor<2xf32> and tensor<2xi64>}}
  %y = "ck.eq"(%a, %b) : (tensor<2xf32>, tensor<2xi64>) -> tensor<2xi1>
  "ck.return"(%y) : (tensor<2xi1>) -> ()
}

// -----

/// Logic is on i1.
func.func @f(%a: tensor<2xi64>) -> tensor<2xi64> {
  // expected-error@+1 {{operand 0 must have element type i1, got tensor<2xi64>}}
  %y = "ck.not"(%a) : (tensor<2xi64>) -> tensor<2xi64>
  "ck.return"(%y) : (tensor<2xi64>) -> ()
}

// -----

/// select's condition is i1.
func.func @f(%c: tensor<2xf32>, %a: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{the condition (operand 0) must have element type i1, got tensor<2xf32>}}
  %y = "ck.select"(%c, %a, %a) : (tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  "ck.return"(%y) : (tensor<2xf32>) -> ()
}

// -----

/// select's values share one element type.
func.func @f(%c: tensor<2xi1>, %a: tensor<2xf32>, %b: tensor<2xi64>) -> tensor<2xf32> {
  // expected-error@+1 {{the selected operands' element types differ: tensor<2xf32> and tensor<2xi64>}}
  %y = "ck.select"(%c, %a, %b) : (tensor<2xi1>, tensor<2xf32>, tensor<2xi64>) -> tensor<2xf32>
  "ck.return"(%y) : (tensor<2xf32>) -> ()
}

// -----

/// cast keeps the shape.
func.func @f(%x: tensor<2xf32>) -> tensor<3xi64> {
  // expected-error@+1 {{operand and result shapes must be equal (no implicit broadcasting), got tensor<2xf32> and tensor<3xi64>}}
  %y = "ck.cast"(%x) : (tensor<2xf32>) -> tensor<3xi64>
  "ck.return"(%y) : (tensor<3xi64>) -> ()
}

// -----

/// iota needs its dim attribute.
func.func @f() -> tensor<3xi64> {
  // expected-error@+1 {{requires attribute 'dim' (i64 integer)}}
  %y = "ck.iota"() : () -> tensor<3xi64>
  "ck.return"(%y) : (tensor<3xi64>) -> ()
}

// -----

/// cross_entropy's labels are integers, one per row.
func.func @f(%l: tensor<4x3xf32>, %y: tensor<4xf32>) -> tensor<f32> {
  // expected-error@+1 {{the labels (operand 1) must have an integer element type (i64 or i32), got tensor<4xf32>}}
  %z = "ck.cross_entropy"(%l, %y) : (tensor<4x3xf32>, tensor<4xf32>) -> tensor<f32>
  "ck.return"(%z) : (tensor<f32>) -> ()
}

// -----

func.func @f(%l: tensor<4x3xf32>, %y: tensor<3xi64>) -> tensor<f32> {
  // expected-error@+1 {{cross_entropy needs logits [N, C] and labels [N], got tensor<4x3xf32> and tensor<3xi64>}}
  %z = "ck.cross_entropy"(%l, %y) : (tensor<4x3xf32>, tensor<3xi64>) -> tensor<f32>
  "ck.return"(%z) : (tensor<f32>) -> ()
}

// -----

/// ignore_index is an integer.
func.func @f(%l: tensor<4x3xf32>, %y: tensor<4xi64>) -> tensor<f32> {
  // expected-error@+1 {{attribute 'ignore_index' must be i64 integer, got}}
  %z = "ck.cross_entropy"(%l, %y) {ignore_index = 0.5 : f32} : (tensor<4x3xf32>, tensor<4xi64>) -> tensor<f32>
  "ck.return"(%z) : (tensor<f32>) -> ()
}
