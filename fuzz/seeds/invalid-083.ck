/// conv2d: padding >= 0.
func.func @f(%x: tensor<2xf32>, %i: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{attribute 'padding' elements must be >= 0, got [-1, 0]}}
  %y = "ck.conv2d"(%i, %w) {padding = [-1, 0]} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  "ck.return"(%x) : (tensor<2xf32>) -> ()
}
