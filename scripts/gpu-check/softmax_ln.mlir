// The reductions and math functions of a transformer block (layer norm,
// GELU, softmax, exp, mean) on the GPU, with their gradients.
mithril.model @SoftmaxLN(data %x: tensor<?x384xf32>, param %scale: tensor<384xf32>, param %shift: tensor<384xf32>, param %w: tensor<384x384xf32>) -> (y: tensor<?x384xf32>, m: tensor<1x1xf32>) {
  %n = mithril.layer_norm %x, %scale, %shift {scaled = true, shifted = true} : (tensor<?x384xf32>, tensor<384xf32>, tensor<384xf32>) -> tensor<?x384xf32>
  %h = mithril.matmul %n, %w : (tensor<?x384xf32>, tensor<384x384xf32>) -> tensor<?x384xf32>
  %g = mithril.gelu %h {approximate = true} : (tensor<?x384xf32>) -> tensor<?x384xf32>
  %y = mithril.softmax %g {axis = 1 : i64} : (tensor<?x384xf32>) -> tensor<?x384xf32>
  %e = mithril.exp %y : (tensor<?x384xf32>) -> tensor<?x384xf32>
  %m = mithril.mean %e {axes = array<i64: 0, 1>, keepdim = true} : (tensor<?x384xf32>) -> tensor<1x1xf32>
  mithril.output %y, %m : tensor<?x384xf32>, tensor<1x1xf32>
}
