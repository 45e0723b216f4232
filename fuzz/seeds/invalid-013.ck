/// A bound name needs a result.
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{operation defines 0 results but was provided 1 to bind}}
  %y = "ck.relu"(%x) : (tensor<2xf32>) -> ()
  "ck.return"(%x) : (tensor<2xf32>) -> ()
}
