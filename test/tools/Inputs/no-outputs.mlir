// A broken model for bad-inputs.test.
mithril.model @M(data %x: tensor<4xf32>) -> () {
  mithril.output
}
