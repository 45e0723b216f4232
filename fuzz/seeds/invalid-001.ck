/// Ops must be in generic form; a custom-form return gets a hint.
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  %y = "ck.relu"(%x) : (tensor<2xf32>) -> tensor<2xf32>
  // expected-error@+1 {{expected an op in generic form "ck.name"(...), found 'return' (write the return as "ck.return"(%v)}}
  return %y : tensor<2xf32>
}
