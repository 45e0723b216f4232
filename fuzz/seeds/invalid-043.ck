/// fill takes no operand.
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{'ck.fill' op expects 0 operands, got 1}}
  %y = "ck.fill"(%x) {value = 1.0 : f32} : (tensor<2xf32>) -> tensor<2xf32>
  "ck.return"(%y) : (tensor<2xf32>) -> ()
}
