/// matmul: contraction dims equal (after transposes).
func.func @f(%x: tensor<2xf32>, %a: tensor<2x3xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{matmul contraction dims differ: 3 vs 2 (tensor<2x3xf32> x tensor<2x3xf32>)}}
  %y = "ck.matmul"(%a, %a) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  "ck.return"(%x) : (tensor<2xf32>) -> ()
}
