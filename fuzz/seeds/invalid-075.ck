/// matmul: rank >= 2.
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{matmul needs operands of equal rank >= 2, got tensor<2xf32> and tensor<2xf32>}}
  %y = "ck.matmul"(%x, %x) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  "ck.return"(%y) : (tensor<2xf32>) -> ()
}
