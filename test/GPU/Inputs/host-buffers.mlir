// Embeddings with positions from a constant table, a layer norm, and a mean
// over everything: a constant global and a reduction without a parallel
// dimension, the two kinds of host code that once read device memory.
mithril.model @HostBuffers(data %ids: tensor<4x8xi64>, param %table: tensor<16x32xf32>, param %positions: tensor<8x32xf32>) -> (loss: tensor<f32>) {
  %pos = mithril.constant dense<[0, 1, 2, 3, 4, 5, 6, 7]> : tensor<8xi64>
  %tok = mithril.embedding %ids, %table : (tensor<4x8xi64>, tensor<16x32xf32>) -> tensor<4x8x32xf32>
  %p = mithril.embedding %pos, %positions : (tensor<8xi64>, tensor<8x32xf32>) -> tensor<8x32xf32>
  %x = mithril.add %tok, %p : (tensor<4x8x32xf32>, tensor<8x32xf32>) -> tensor<4x8x32xf32>
  %n = mithril.layer_norm %x {eps = 1.000000e-05 : f64} : (tensor<4x8x32xf32>) -> tensor<4x8x32xf32>
  %l = mithril.mean %n : (tensor<4x8x32xf32>) -> tensor<f32>
  mithril.output %l : tensor<f32>
}
