/// conv2d_grad_filter: dy must have the shape conv2d(x, dw) would give.
func.func @f(%x: tensor<2xf32>, %i: tensor<1x3x8x8xf32>, %dy: tensor<1x4x5x5xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{conv2d of tensor<1x3x8x8xf32> with tensor<4x3x3x3xf32> gives [1, 4, 6, 6], not the shape of dy tensor<1x4x5x5xf32>}}
  %y = "ck.conv2d_grad_filter"(%i, %dy) : (tensor<1x3x8x8xf32>, tensor<1x4x5x5xf32>) -> tensor<4x3x3x3xf32>
  "ck.return"(%x) : (tensor<2xf32>) -> ()
}
