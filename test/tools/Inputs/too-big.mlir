// A broken model for bad-inputs.test.
mithril.model @M(data %x: tensor<100000000000000xf32>) -> (y: tensor<100000000000000xf32>) {
  %0 = mithril.relu %x : (tensor<100000000000000xf32>) -> tensor<100000000000000xf32>
  mithril.output %0 : tensor<100000000000000xf32>
}
