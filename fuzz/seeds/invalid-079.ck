/// conv2d: rank-4 operands.
func.func @f(%x: tensor<2xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{conv2d needs rank-4 input (NCHW) and filter (FCHW)}}
  %y = "ck.conv2d"(%x, %w) : (tensor<2xf32>, tensor<4x3x3x3xf32>) -> tensor<2xf32>
  "ck.return"(%x) : (tensor<2xf32>) -> ()
}
