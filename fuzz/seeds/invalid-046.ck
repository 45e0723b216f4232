/// An attribute of the wrong kind.
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{'ck.scale' op attribute 'value' must be f32 float, got i64 integer}}
  %y = "ck.scale"(%x) {value = 1 : i64} : (tensor<2xf32>) -> tensor<2xf32>
  "ck.return"(%y) : (tensor<2xf32>) -> ()
}
