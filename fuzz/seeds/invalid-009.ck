/// Two arguments with one name.
// expected-error@+1 {{redefinition of value '%x'}}
func.func @f(%x: tensor<2xf32>, %x: tensor<2xf32>) {
  "ck.return"() : () -> ()
}
