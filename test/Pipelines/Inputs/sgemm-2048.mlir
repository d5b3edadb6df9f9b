mithril.model @Large(data %a: tensor<2048x2048xf32>, data %b: tensor<2048x2048xf32>) -> (c: tensor<2048x2048xf32>) {
  %0 = matmul %a, %b : (tensor<2048x2048xf32>, tensor<2048x2048xf32>) -> tensor<2048x2048xf32>
  output %0 : tensor<2048x2048xf32>
}
