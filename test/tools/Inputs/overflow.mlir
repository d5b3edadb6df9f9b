// A broken model for bad-inputs.test.
mithril.model @M(data %x: tensor<4611686018427387904x8xf32>) -> (y: tensor<4611686018427387904x8xf32>) {
  %0 = mithril.relu %x : (tensor<4611686018427387904x8xf32>) -> tensor<4611686018427387904x8xf32>
  mithril.output %0 : tensor<4611686018427387904x8xf32>
}
