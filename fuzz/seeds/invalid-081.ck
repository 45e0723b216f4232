/// conv2d: stride has 2 entries.
func.func @f(%x: tensor<2xf32>, %i: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{attribute 'stride' must have 2 elements, got 1}}
  %y = "ck.conv2d"(%i, %w) {stride = [1]} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  "ck.return"(%x) : (tensor<2xf32>) -> ()
}
