/// ck ops have at most one result.
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{ck ops have at most one result, the type lists 2}}
  %y = "ck.relu"(%x) : (tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>)
  "ck.return"(%y) : (tensor<2xf32>) -> ()
}
