/// An unknown ck op gets a did-you-mean hint.
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{'ck.relux' is not an op of the ck dialect; did you mean 'ck.relu'?}}
  %y = "ck.relux"(%x) : (tensor<2xf32>) -> tensor<2xf32>
  "ck.return"(%y) : (tensor<2xf32>) -> ()
}
