/// concat takes at least one operand.
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{'ck.concat' op expects at least 1 operand, got 0}}
  %y = "ck.concat"() {dim = 0 : i64} : () -> tensor<2xf32>
  "ck.return"(%y) : (tensor<2xf32>) -> ()
}
