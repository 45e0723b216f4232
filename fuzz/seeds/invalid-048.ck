/// An unknown attribute lists the ones the op takes.
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{unknown attribute 'valu' (ck.scale takes: value)}}
  %y = "ck.scale"(%x) {value = 1.0 : f32, valu = 2.0 : f32} : (tensor<2xf32>) -> tensor<2xf32>
  "ck.return"(%y) : (tensor<2xf32>) -> ()
}
