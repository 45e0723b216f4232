/// max_pool2d: rank-4 operand.
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{pooling needs a rank-4 NCHW input, got tensor<2xf32>}}
  %y = "ck.max_pool2d"(%x) {window = [2, 2]} : (tensor<2xf32>) -> tensor<2xf32>
  "ck.return"(%x) : (tensor<2xf32>) -> ()
}
