/// concat: dim in range.
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{'dim' = 1 is out of range for rank 1}}
  %y = "ck.concat"(%x) {dim = 1 : i64} : (tensor<2xf32>) -> tensor<2xf32>
  "ck.return"(%x) : (tensor<2xf32>) -> ()
}
