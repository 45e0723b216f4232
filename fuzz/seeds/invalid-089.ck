/// avg_pool2d needs a window.
func.func @f(%x: tensor<2xf32>, %i: tensor<1x3x8x8xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{'ck.avg_pool2d' op requires attribute 'window' (array of integers)}}
  %y = "ck.avg_pool2d"(%i) : (tensor<1x3x8x8xf32>) -> tensor<1x3x4x4xf32>
  "ck.return"(%x) : (tensor<2xf32>) -> ()
}
