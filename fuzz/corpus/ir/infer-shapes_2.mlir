

// A convolution fixes its weight's input channels; pooling follows.
// CHECK-LABEL: mithril.model @Conv(
// CHECK-SAME: data %input: tensor<4x8xf32>, param %w: tensor<6x4x3xf32>
// CHECK-SAME: -> (y: tensor<6x6xf32>)
mithril.model @Conv(data %input: tensor<?x?xf32>, param %w: tensor<6x?x3xf32>) -> (y: tensor<?x?xf32>) {
  %r = mithril.reshape %input {shape = array<i64: 1, 4, -1>} : (tensor<?x?xf32>) -> tensor<1x4x?xf32>
  %c = mithril.conv1d %r, %w {dilation = array<i64: 1>, padding = array<i64: 0, 0>, stride = array<i64: 1>} : (tensor<1x4x?xf32>, tensor<6x?x3xf32>) -> tensor<1x6x?xf32>
  %s = mithril.squeeze %c {axes = array<i64: 0>} : (tensor<1x6x?xf32>) -> tensor<6x?xf32>
  mithril.output %s : tensor<6x?xf32>
}


