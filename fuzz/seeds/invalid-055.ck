/// Operand element types must agree.
func.func @f(%x: tensor<2xf32>, %h: tensor<2xf16>) -> tensor<2xf32> {
  // expected-error@+1 {{'ck.add' op operand element types differ: tensor<2xf32> and tensor<2xf16>}}
  %y = "ck.add"(%x, %h) : (tensor<2xf32>, tensor<2xf16>) -> tensor<2xf32>
  "ck.return"(%y) : (tensor<2xf32>) -> ()
}
