/// reduce_sum: dims must be in range.
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{'ck.reduce_sum' op 'dims' entry 1 is out of range for rank 1}}
  %y = "ck.reduce_sum"(%x) {dims = [1]} : (tensor<2xf32>) -> tensor<f32>
  "ck.return"(%x) : (tensor<2xf32>) -> ()
}
