/// An unknown escape in a string.
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{unknown escape in string literal}}
  %y = "ck.relu"(%x) {user.s = "a\qb"} : (tensor<2xf32>) -> tensor<2xf32>
  "ck.return"(%y) : (tensor<2xf32>) -> ()
}
