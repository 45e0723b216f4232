/// reduce_sum: dims must be an integer array.
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{attribute 'dims' must be array of integers, got i64 integer}}
  %y = "ck.reduce_sum"(%x) {dims = 0 : i64} : (tensor<2xf32>) -> tensor<f32>
  "ck.return"(%x) : (tensor<2xf32>) -> ()
}
