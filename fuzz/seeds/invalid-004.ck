/// Ops of other dialects are rejected.
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{'arith.negf' is not a ck op: function bodies may only contain ops of the ck dialect}}
  %y = "arith.negf"(%x) : (tensor<2xf32>) -> tensor<2xf32>
  "ck.return"(%y) : (tensor<2xf32>) -> ()
}
