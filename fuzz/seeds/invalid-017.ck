/// Element types other than f32/f16/bf16 are rejected.
// expected-error@+1 {{unsupported element type 'i32' (ck supports f32, f16, bf16)}}
func.func @f(%x: tensor<2xi32>) {
  "ck.return"() : () -> ()
}
