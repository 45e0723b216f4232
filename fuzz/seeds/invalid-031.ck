/// A hexadecimal float needs 32 bits.
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{hexadecimal float 0x1FFFFFFFF does not fit in 32 bits}}
  %y = "ck.scale"(%x) {value = 0x1FFFFFFFF : f32} : (tensor<2xf32>) -> tensor<2xf32>
  "ck.return"(%y) : (tensor<2xf32>) -> ()
}
