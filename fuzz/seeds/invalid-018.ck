/// Values are tensors, not scalars.
// expected-error@+1 {{expected a tensor type, found 'f32' (ck values are tensors: write tensor<f32>)}}
func.func @f(%x: f32) {
  "ck.return"() : () -> ()
}
