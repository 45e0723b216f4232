/// broadcast: one dims entry per operand dim.
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{'dims' has 2 entries but the operand has rank 1}}
  %y = "ck.broadcast"(%x) {dims = [0, 1]} : (tensor<2xf32>) -> tensor<3x2xf32>
  "ck.return"(%x) : (tensor<2xf32>) -> ()
}
