/// reshape keeps the element count.
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{reshape from tensor<2xf32> to tensor<3xf32> changes the element count}}
  %y = "ck.reshape"(%x) : (tensor<2xf32>) -> tensor<3xf32>
  "ck.return"(%x) : (tensor<2xf32>) -> ()
}
