/// A float literal where an i64 is declared.
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{floating point literal for an i64 attribute}}
  %y = "ck.relu"(%x) {ck.offset = 1.5 : i64} : (tensor<2xf32>) -> tensor<2xf32>
  "ck.return"(%y) : (tensor<2xf32>) -> ()
}
