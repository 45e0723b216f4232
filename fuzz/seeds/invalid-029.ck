/// Attribute types other than i64/f32/f64 are rejected.
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{unsupported attribute type 'i32'}}
  %y = "ck.scale"(%x) {value = 2 : i32} : (tensor<2xf32>) -> tensor<2xf32>
  "ck.return"(%y) : (tensor<2xf32>) -> ()
}
