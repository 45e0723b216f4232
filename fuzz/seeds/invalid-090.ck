/// max_pool2d: the window must fit.
func.func @f(%x: tensor<2xf32>, %i: tensor<1x3x8x8xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{pool window [9, 9] does not fit input tensor<1x3x8x8xf32>}}
  %y = "ck.max_pool2d"(%i) {window = [9, 9]} : (tensor<1x3x8x8xf32>) -> tensor<1x3x1x1xf32>
  "ck.return"(%x) : (tensor<2xf32>) -> ()
}
