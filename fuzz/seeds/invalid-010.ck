/// An operand's type in the op signature must be the value's type.
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{use of value '%x' expects different type than prior uses: 'tensor<3xf32>' vs 'tensor<2xf32>'}}
  %y = "ck.relu"(%x) : (tensor<3xf32>) -> tensor<3xf32>
  "ck.return"(%y) : (tensor<2xf32>) -> ()
}
