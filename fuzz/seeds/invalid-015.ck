/// Dynamic dimensions are rejected: shapes are static.
// expected-error@+1 {{dynamic dimensions ('?') are not supported: ck shapes are static}}
func.func @f(%x: tensor<?x2xf32>) {
  "ck.return"() : () -> ()
}
