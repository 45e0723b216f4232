/// slice: one offset per dim.
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{needs 1 offsets and a result of the same rank}}
  %y = "ck.slice"(%x) {offsets = [0, 0]} : (tensor<2xf32>) -> tensor<1xf32>
  "ck.return"(%x) : (tensor<2xf32>) -> ()
}
