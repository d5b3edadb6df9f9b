// A small CNN on 1x28x28 images: conv 32 + ReLU + max pool, conv 64 + ReLU
// + max pool, flatten, linear 10. Channel counts of the weights follow from
// the input by shape inference.
mithril.model @Conv(data %input: tensor<?x?x?x?xf32>, param %weight: tensor<?x?x3x3xf32>, param %bias: tensor<?xf32>) -> (output: tensor<?x?x?x?xf32>) {
  %c = mithril.conv2d %input, %weight, %bias {stride = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilation = array<i64: 1, 1>} : (tensor<?x?x?x?xf32>, tensor<?x?x3x3xf32>, tensor<?xf32>) -> tensor<?x?x?x?xf32>
  %r = mithril.relu %c : (tensor<?x?x?x?xf32>) -> tensor<?x?x?x?xf32>
  %p = mithril.max_pool2d %r {kernel_size = array<i64: 2, 2>, stride = array<i64: 2, 2>, padding = array<i64: 0, 0, 0, 0>, dilation = array<i64: 1, 1>} : (tensor<?x?x?x?xf32>) -> tensor<?x?x?x?xf32>
  mithril.output %p : tensor<?x?x?x?xf32>
}

mithril.model @CNN(data %input: tensor<?x1x28x28xf32>, param %block1.weight: tensor<32x1x3x3xf32>, param %block2.weight: tensor<64x32x3x3xf32>, param %fc.weight: tensor<10x3136xf32>, param %fc.bias: tensor<10xf32>) -> (logits: tensor<?x10xf32>) {
  %b1 = mithril.instance "block1" @Conv(input = %input, weight = %block1.weight) : (tensor<?x1x28x28xf32>, tensor<32x1x3x3xf32>) -> tensor<?x?x?x?xf32>
  %b2 = mithril.instance "block2" @Conv(input = %b1, weight = %block2.weight) : (tensor<?x?x?x?xf32>, tensor<64x32x3x3xf32>) -> tensor<?x?x?x?xf32>
  %f = mithril.flatten %b2 {start_dim = 1 : i64} : (tensor<?x?x?x?xf32>) -> tensor<?x?xf32>
  %wt = mithril.transpose %fc.weight : (tensor<10x3136xf32>) -> tensor<3136x10xf32>
  %mm = mithril.matmul %f, %wt : (tensor<?x?xf32>, tensor<3136x10xf32>) -> tensor<?x10xf32>
  %y = mithril.add %mm, %fc.bias : (tensor<?x10xf32>, tensor<10xf32>) -> tensor<?x10xf32>
  mithril.output %y : tensor<?x10xf32>
}

