/// concat: a result size that overflows is an error.
func.func @f(%x: tensor<2xf32>, %a: tensor<2305843009213693951xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{has a size that overflows}}
  %y = "ck.concat"(%a, %a, %a) {dim = 0 : i64} : (tensor<2305843009213693951xf32>, tensor<2305843009213693951xf32>, tensor<2305843009213693951xf32>) -> tensor<2xf32>
  "ck.return"(%x) : (tensor<2xf32>) -> ()
}
