mithril.model @Small(data %a: tensor<64x64xf32>, data %b: tensor<64x64xf32>) -> (c: tensor<64x64xf32>) {
  %0 = matmul %a, %b : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
  output %0 : tensor<64x64xf32>
}
