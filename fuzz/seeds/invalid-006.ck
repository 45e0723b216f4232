/// Using a value before its definition (no forward references).
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{use of undefined value '%z'}}
  %y = "ck.relu"(%z) : (tensor<2xf32>) -> tensor<2xf32>
  %z = "ck.relu"(%x) : (tensor<2xf32>) -> tensor<2xf32>
  "ck.return"(%y) : (tensor<2xf32>) -> ()
}
