// The sum of an outer product: a 10^7 x 10^7 temporary (400 TB, more than any
// address space) between two inputs of 40 MB.
mithril.model @Huge(data %a: tensor<10000000x1xf32>, data %b: tensor<1x10000000xf32>) -> (s: tensor<f32>) {
  %0 = mithril.matmul %a, %b : (tensor<10000000x1xf32>, tensor<1x10000000xf32>) -> tensor<10000000x10000000xf32>
  %1 = mithril.sum %0 : (tensor<10000000x10000000xf32>) -> tensor<f32>
  mithril.output %1 : tensor<f32>
}
