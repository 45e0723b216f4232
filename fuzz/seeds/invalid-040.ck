/// Several parse errors in one body are all reported (recovery at the next line); uses of a failed definition are not reported again.
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{'ck.nope' is not an op of the ck dialect}}
  %a = "ck.nope"(%x) : (tensor<2xf32>) -> tensor<2xf32>
  %b = "ck.relu"(%a) : (tensor<2xf32>) -> tensor<2xf32>
  // expected-error@+1 {{use of undefined value '%c'}}
  %y = "ck.relu"(%c) : (tensor<2xf32>) -> tensor<2xf32>
  "ck.return"(%x) : (tensor<2xf32>) -> ()
}
