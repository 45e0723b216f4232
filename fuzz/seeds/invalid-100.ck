/// The verifier reports one error per op, for every bad op.
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{'ck.relu' op expects 1 operand, got 2}}
  %a = "ck.relu"(%x, %x) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  // expected-error@+1 {{'ck.scale' op requires attribute 'value'}}
  %b = "ck.scale"(%a) : (tensor<2xf32>) -> tensor<2xf32>
  %y = "ck.neg"(%b) : (tensor<2xf32>) -> tensor<3xf32> // expected-error {{does not match the inferred type}}
  "ck.return"(%b) : (tensor<2xf32>) -> ()
}
