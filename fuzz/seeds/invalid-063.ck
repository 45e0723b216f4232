/// broadcast needs dims.
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{requires attribute 'dims' (array of integers)}}
  %y = "ck.broadcast"(%x) : (tensor<2xf32>) -> tensor<3x2xf32>
  "ck.return"(%x) : (tensor<2xf32>) -> ()
}
