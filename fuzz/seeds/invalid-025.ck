/// A duplicate attribute key.
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{duplicate key 'value' in dictionary attribute}}
  %y = "ck.scale"(%x) {value = 1.0 : f32, value = 2.0 : f32} : (tensor<2xf32>) -> tensor<2xf32>
  "ck.return"(%y) : (tensor<2xf32>) -> ()
}
