/// slice: the window must lie inside the operand.
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{slice window [1, 1+2) is outside dim 0 of size 2}}
  %y = "ck.slice"(%x) {offsets = [1]} : (tensor<2xf32>) -> tensor<2xf32>
  "ck.return"(%x) : (tensor<2xf32>) -> ()
}
