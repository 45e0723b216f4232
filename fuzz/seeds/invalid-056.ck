/// The result element type is the operands'.
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{'ck.relu' op result element type f16 differs from operand type tensor<2xf32>}}
  %y = "ck.relu"(%x) : (tensor<2xf32>) -> tensor<2xf16>
  "ck.return"(%x) : (tensor<2xf32>) -> ()
}
