/// matmul: transpose flags are bools.
func.func @f(%x: tensor<2xf32>, %a: tensor<3x3xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{attribute 'transpose_a' must be bool, got i64 integer}}
  %y = "ck.matmul"(%a, %a) {transpose_a = 1 : i64} : (tensor<3x3xf32>, tensor<3x3xf32>) -> tensor<3x3xf32>
  "ck.return"(%x) : (tensor<2xf32>) -> ()
}
