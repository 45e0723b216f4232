/// Op properties are not part of ck's syntax.
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{op properties '<{...}>' are not supported}}
  %y = "ck.relu"(%x) <{a = 1}> : (tensor<2xf32>) -> tensor<2xf32>
  "ck.return"(%y) : (tensor<2xf32>) -> ()
}
