/// conv2d: the declared result must be the convolution's shape.
func.func @f(%x: tensor<2xf32>, %i: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{result type tensor<1x4x8x8xf32> does not match the inferred type tensor<1x4x6x6xf32>}}
  %y = "ck.conv2d"(%i, %w) : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32>
  "ck.return"(%x) : (tensor<2xf32>) -> ()
}
