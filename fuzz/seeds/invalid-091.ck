/// max_pool2d: window entries >= 1.
func.func @f(%x: tensor<2xf32>, %i: tensor<1x3x8x8xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{attribute 'window' elements must be >= 1, got [0, 2]}}
  %y = "ck.max_pool2d"(%i) {window = [0, 2]} : (tensor<1x3x8x8xf32>) -> tensor<1x3x4x4xf32>
  "ck.return"(%x) : (tensor<2xf32>) -> ()
}
