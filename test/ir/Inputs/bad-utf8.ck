func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  %y = "ck.relu"(%x) {user.s = "cafÃ© ÿ"} : (tensor<2xf32>) -> tensor<2xf32>
  "ck.return"(%y) : (tensor<2xf32>) -> ()
}
