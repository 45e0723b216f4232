/// An integer attribute that does not fit in i64.
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{integer 9223372036854775808 does not fit in i64}}
  %y = "ck.relu"(%x) {ck.offset = 9223372036854775808 : i64} : (tensor<2xf32>) -> tensor<2xf32>
  "ck.return"(%y) : (tensor<2xf32>) -> ()
}
