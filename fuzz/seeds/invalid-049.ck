/// ck.mirror is a unit attribute.
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{attribute 'ck.mirror' must be unit, got i64 integer}}
  %y = "ck.relu"(%x) {ck.mirror = 1 : i64} : (tensor<2xf32>) -> tensor<2xf32>
  "ck.return"(%y) : (tensor<2xf32>) -> ()
}
