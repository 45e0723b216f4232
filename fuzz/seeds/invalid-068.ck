/// transpose: perm is a permutation.
func.func @f(%x: tensor<2xf32>, %m: tensor<2x2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{'perm' [0, 0] is not a permutation of 0..2}}
  %y = "ck.transpose"(%m) {perm = [0, 0]} : (tensor<2x2xf32>) -> tensor<2x2xf32>
  "ck.return"(%x) : (tensor<2xf32>) -> ()
}
