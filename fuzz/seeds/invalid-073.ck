/// concat: operands agree outside dim.
func.func @f(%x: tensor<2xf32>, %a: tensor<2x2xf32>, %b: tensor<2x3xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{concat operands tensor<2x2xf32> and tensor<2x3xf32> differ outside dim 0}}
  %y = "ck.concat"(%a, %b) {dim = 0 : i64} : (tensor<2x2xf32>, tensor<2x3xf32>) -> tensor<4x2xf32>
  "ck.return"(%x) : (tensor<2xf32>) -> ()
}
