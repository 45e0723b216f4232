/// Function names are unique.
func.func @f() {
  "ck.return"() : () -> ()
}
// expected-error@+1 {{redefinition of function @f}}
func.func @f() {
  "ck.return"() : () -> ()
}
