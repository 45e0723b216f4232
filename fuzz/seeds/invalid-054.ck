/// dropout needs a seed.
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{requires attribute 'seed' (i64 integer)}}
  %y = "ck.dropout"(%x) {rate = 0.5 : f32} : (tensor<2xf32>) -> tensor<2xf32>
  "ck.return"(%y) : (tensor<2xf32>) -> ()
}
