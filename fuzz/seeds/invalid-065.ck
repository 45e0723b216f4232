/// reduce_max: dims must be strictly increasing.
func.func @f(%x: tensor<2xf32>, %m: tensor<2x2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{'dims' must be strictly increasing, got [1, 0]}}
  %y = "ck.reduce_max"(%m) {dims = [1, 0]} : (tensor<2x2xf32>) -> tensor<f32>
  "ck.return"(%x) : (tensor<2xf32>) -> ()
}
