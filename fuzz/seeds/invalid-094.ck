/// An op without a result where the op defines one.
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{'ck.relu' op has the wrong number of results}}
  "ck.relu"(%x) : (tensor<2xf32>) -> ()
  "ck.return"(%x) : (tensor<2xf32>) -> ()
}
