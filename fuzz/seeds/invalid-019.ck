/// A dimension that does not fit in u64.
// expected-error@+1 {{tensor dimension does not fit in u64}}
func.func @f(%x: tensor<18446744073709551616xf32>) {
  "ck.return"() : () -> ()
}
