/// ck.return must be the last op.
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{'ck.return' op must be the last op of the function}}
  "ck.return"(%x) : (tensor<2xf32>) -> ()
  "ck.return"(%x) : (tensor<2xf32>) -> ()
}
