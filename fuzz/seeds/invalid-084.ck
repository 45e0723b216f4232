/// conv2d: the filter must fit the (padded) input.
func.func @f(%x: tensor<2xf32>, %i: tensor<1x3x8x8xf32>, %w: tensor<4x3x9x9xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{conv2d filter tensor<4x3x9x9xf32> does not fit input tensor<1x3x8x8xf32> with padding [0, 0]}}
  %y = "ck.conv2d"(%i, %w) : (tensor<1x3x8x8xf32>, tensor<4x3x9x9xf32>) -> tensor<1x4x1x1xf32>
  "ck.return"(%x) : (tensor<2xf32>) -> ()
}
