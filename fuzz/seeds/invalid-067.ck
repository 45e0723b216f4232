/// transpose: perm has one entry per dim.
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{'perm' has 2 entries but the operand has rank 1}}
  %y = "ck.transpose"(%x) {perm = [0, 1]} : (tensor<2xf32>) -> tensor<2xf32>
  "ck.return"(%x) : (tensor<2xf32>) -> ()
}
