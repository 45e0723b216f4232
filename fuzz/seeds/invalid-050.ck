/// ck.inplace names an operand index.
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{'ck.inplace' = 1 is not an operand index (op has 1)}}
  %y = "ck.relu"(%x) {ck.inplace = 1 : i64} : (tensor<2xf32>) -> tensor<2xf32>
  "ck.return"(%y) : (tensor<2xf32>) -> ()
}
