/// Dictionary attribute values are not supported.
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{dictionary attribute values are not supported}}
  %y = "ck.relu"(%x) {user.d = {a = 1}} : (tensor<2xf32>) -> tensor<2xf32>
  "ck.return"(%y) : (tensor<2xf32>) -> ()
}
