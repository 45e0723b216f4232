/// A float that does not fit in f32.
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{float 1.0e39 is out of range for f32}}
  %y = "ck.scale"(%x) {value = 1.0e39 : f32} : (tensor<2xf32>) -> tensor<2xf32>
  "ck.return"(%y) : (tensor<2xf32>) -> ()
}
