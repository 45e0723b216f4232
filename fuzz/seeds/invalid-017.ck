/// Element types other than the six ck knows are rejected.
// expected-error@+1 {{unsupported element type 'i8' (ck supports f32, bf16, f16, i64, i32, i1)}}
func.func @f(%x: tensor<2xi8>) {
  "ck.return"() : () -> ()
}
