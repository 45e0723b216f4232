/// An unterminated tensor type.
// expected-error@+1 {{unterminated tensor type (missing '>')}}
func.func @f(%x: tensor<2xf32) {
  "ck.return"() : () -> ()
}
