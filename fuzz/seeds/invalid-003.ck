/// An unknown ck op with no close match lists the ops.
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{'ck.frobnicate' is not an op of the ck dialect (ops: neg, exp, log,}}
  %y = "ck.frobnicate"(%x) : (tensor<2xf32>) -> tensor<2xf32>
  "ck.return"(%y) : (tensor<2xf32>) -> ()
}
