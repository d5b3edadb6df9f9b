// A lookup table of 5 rows, indexed by data.
mithril.model @Lookup(data %ids: tensor<4xi64>, param %table: tensor<5x3xf32>) -> (y: tensor<4x3xf32>) {
  %0 = mithril.embedding %ids, %table : (tensor<4xi64>, tensor<5x3xf32>) -> tensor<4x3xf32>
  mithril.output %0 : tensor<4x3xf32>
}
