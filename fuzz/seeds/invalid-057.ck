/// No implicit broadcasting in elementwise ops.
func.func @f(%x: tensor<2xf32>, %o: tensor<1xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{'ck.mul' op operand shapes must be equal (no implicit broadcasting), got tensor<2xf32> and tensor<1xf32>}}
  %y = "ck.mul"(%x, %o) : (tensor<2xf32>, tensor<1xf32>) -> tensor<2xf32>
  "ck.return"(%y) : (tensor<2xf32>) -> ()
}
