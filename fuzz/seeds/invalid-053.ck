/// dropout rate is in [0, 1).
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{dropout 'rate' must be in [0, 1), got 1}}
  %y = "ck.dropout"(%x) {rate = 1.0 : f32, seed = 1 : i64} : (tensor<2xf32>) -> tensor<2xf32>
  "ck.return"(%y) : (tensor<2xf32>) -> ()
}
