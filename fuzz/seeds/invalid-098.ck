/// The returned count must be the declared count.
func.func @f(%x: tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>) {
  // expected-error@+1 {{'ck.return' op returns (tensor<2xf32>) but @f is declared to return (tensor<2xf32>, tensor<2xf32>)}}
  "ck.return"(%x) : (tensor<2xf32>) -> ()
}
