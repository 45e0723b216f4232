/// Redefining an op result.
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  %y = "ck.relu"(%x) : (tensor<2xf32>) -> tensor<2xf32>
  // expected-error@+1 {{redefinition of value '%y' (previously defined at line}}
  %y = "ck.neg"(%x) : (tensor<2xf32>) -> tensor<2xf32>
  "ck.return"(%y) : (tensor<2xf32>) -> ()
}
