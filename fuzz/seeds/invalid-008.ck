/// An op result may not redefine an argument.
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{redefinition of value '%x'}}
  %x = "ck.neg"(%x) : (tensor<2xf32>) -> tensor<2xf32>
  "ck.return"(%x) : (tensor<2xf32>) -> ()
}
