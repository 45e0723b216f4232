/// The signature lists one type per operand.
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{the type lists 2 operand type(s) but the op has 1 operand(s)}}
  %y = "ck.relu"(%x) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  "ck.return"(%y) : (tensor<2xf32>) -> ()
}
