/// A body cut short by the end of the file.
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  "ck.return"(%x) : (tensor<2xf32>) -> () // expected-error {{unexpected end of file in the body of @f (missing '}')}}
