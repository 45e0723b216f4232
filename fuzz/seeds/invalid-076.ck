/// matmul: batch dims equal.
func.func @f(%x: tensor<2xf32>, %a: tensor<2x2x3xf32>, %b: tensor<3x3x2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{matmul batch dims differ: tensor<2x2x3xf32> and tensor<3x3x2xf32>}}
  %y = "ck.matmul"(%a, %b) : (tensor<2x2x3xf32>, tensor<3x3x2xf32>) -> tensor<2x2x2xf32>
  "ck.return"(%x) : (tensor<2xf32>) -> ()
}
