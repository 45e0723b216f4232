/// A decimal integer where an f32 is declared (floats need a '.').
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{unexpected decimal integer literal for a floating point value}}
  %y = "ck.scale"(%x) {value = 2 : f32} : (tensor<2xf32>) -> tensor<2xf32>
  "ck.return"(%y) : (tensor<2xf32>) -> ()
}
