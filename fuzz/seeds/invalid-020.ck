/// A tensor whose byte size overflows u64 (checked arithmetic).
// expected-error@+1 {{size of tensor<4294967296x4294967296xf32> overflows u64 bytes}}
func.func @f(%x: tensor<4294967296x4294967296xf32>) {
  "ck.return"() : () -> ()
}
