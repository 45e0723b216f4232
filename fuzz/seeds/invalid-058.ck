/// relu_grad operands have equal shapes.
func.func @f(%x: tensor<2xf32>, %o: tensor<1xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{'ck.relu_grad' op operand shapes must be equal}}
  %y = "ck.relu_grad"(%x, %o) : (tensor<2xf32>, tensor<1xf32>) -> tensor<2xf32>
  "ck.return"(%y) : (tensor<2xf32>) -> ()
}
