/// Unranked tensors are rejected.
// expected-error@+1 {{unranked tensors are not supported}}
func.func @f(%x: tensor<*xf32>) {
  "ck.return"() : () -> ()
}
