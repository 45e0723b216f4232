/// The returned types must be the declared result types.
func.func @f(%x: tensor<2xf32>) -> tensor<3xf32> {
  // expected-error@+1 {{'ck.return' op returns (tensor<2xf32>) but @f is declared to return (tensor<3xf32>)}}
  "ck.return"(%x) : (tensor<2xf32>) -> ()
}
