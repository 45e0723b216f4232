/// Arrays hold integers only.
func.func @f(%x: tensor<2xf32>) -> tensor<f32> {
  // expected-error@+1 {{array attributes must hold integers, found array of integers}}
  %y = "ck.reduce_sum"(%x) {dims = [[0]]} : (tensor<2xf32>) -> tensor<f32>
  "ck.return"(%y) : (tensor<f32>) -> ()
}
