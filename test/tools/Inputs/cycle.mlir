// A broken model for bad-inputs.test.
mithril.model @M(data %x: tensor<4xf32>) -> (y: tensor<4xf32>) {
  %0 = mithril.instance "self" @M(x = %x) : (tensor<4xf32>) -> tensor<4xf32>
  mithril.output %0 : tensor<4xf32>
}
