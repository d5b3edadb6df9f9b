module {
  mithril.model @Model(data %a: tensor<1x1000xf32>, data %b: tensor<1000x1000xf32>) -> (c: tensor<1x1000xf32>) {
    %0 = matmul %a, %b : (tensor<1x1000xf32>, tensor<1000x1000xf32>) -> tensor<1x1000xf32>
    output %0 : tensor<1x1000xf32>
  }
}
