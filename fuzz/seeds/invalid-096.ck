/// A function must end with ck.return.
// expected-error@+1 {{function @f must end with 'ck.return'}}
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  %y = "ck.relu"(%x) : (tensor<2xf32>) -> tensor<2xf32>
}
