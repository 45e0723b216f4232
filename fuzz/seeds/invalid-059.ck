/// A declared result type must match the inferred one.
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{'ck.neg' op result type tensor<3xf32> does not match the inferred type tensor<2xf32>}}
  %y = "ck.neg"(%x) : (tensor<2xf32>) -> tensor<3xf32>
  "ck.return"(%x) : (tensor<2xf32>) -> ()
}
