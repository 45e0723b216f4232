/// An unknown undotted attribute.
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{'ck.relu' op unknown attribute 'bogus' (ck.relu takes none)}}
  %y = "ck.relu"(%x) {bogus} : (tensor<2xf32>) -> tensor<2xf32>
  "ck.return"(%y) : (tensor<2xf32>) -> ()
}
