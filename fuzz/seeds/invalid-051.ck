/// ck.inplace is an integer.
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{attribute 'ck.inplace' must be i64 integer, got bool}}
  %y = "ck.relu"(%x) {ck.inplace = true} : (tensor<2xf32>) -> tensor<2xf32>
  "ck.return"(%y) : (tensor<2xf32>) -> ()
}
