/// conv2d: channels agree.
func.func @f(%x: tensor<2xf32>, %i: tensor<1x3x8x8xf32>, %w: tensor<4x2x3x3xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{conv2d input channels 3 do not match filter channels 2}}
  %y = "ck.conv2d"(%i, %w) : (tensor<1x3x8x8xf32>, tensor<4x2x3x3xf32>) -> tensor<1x4x6x6xf32>
  "ck.return"(%x) : (tensor<2xf32>) -> ()
}
