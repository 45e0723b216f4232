/// ck.offset is a non-negative byte offset.
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{'ck.offset' must be a non-negative byte offset}}
  %y = "ck.relu"(%x) {ck.offset = -8 : i64} : (tensor<2xf32>) -> tensor<2xf32>
  "ck.return"(%y) : (tensor<2xf32>) -> ()
}
