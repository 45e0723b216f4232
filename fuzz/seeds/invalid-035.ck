/// A function without a name.
// expected-error@+1 {{expected a function name '@name', found '('}}
func.func (%x: tensor<2xf32>) {
  "ck.return"() : () -> ()
}
