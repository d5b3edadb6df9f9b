mithril.model @M(data %x: tensor<4xf32>) -> (y: tensor<4xf32>) {
  %0 = mithril.exp %x : (tensor<4xf32>) -> tensor<4xf64>
  mithril.output %0 : tensor<4xf64>
}
