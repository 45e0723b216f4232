/// broadcast: dims index result dims.
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{'dims' entry 2 is out of range for rank 2}}
  %y = "ck.broadcast"(%x) {dims = [2]} : (tensor<2xf32>) -> tensor<3x2xf32>
  "ck.return"(%x) : (tensor<2xf32>) -> ()
}
