/// max_pool2d_grad: dy has the pooled shape.
func.func @f(%x: tensor<2xf32>, %i: tensor<1x3x8x8xf32>, %dy: tensor<1x3x2x2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{pooling tensor<1x3x8x8xf32> gives [1, 3, 4, 4], not the shape of dy tensor<1x3x2x2xf32>}}
  %y = "ck.max_pool2d_grad"(%i, %dy) {window = [2, 2]} : (tensor<1x3x8x8xf32>, tensor<1x3x2x2xf32>) -> tensor<1x3x8x8xf32>
  "ck.return"(%x) : (tensor<2xf32>) -> ()
}
