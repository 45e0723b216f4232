/// broadcast: operand dims must equal the result dims they map to.
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{operand dim 0 (2) does not match result dim 0 (3)}}
  %y = "ck.broadcast"(%x) {dims = [0]} : (tensor<2xf32>) -> tensor<3x2xf32>
  "ck.return"(%x) : (tensor<2xf32>) -> ()
}
