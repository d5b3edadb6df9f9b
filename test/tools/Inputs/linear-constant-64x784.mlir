// A Linear layer whose weight is compiled in (a splat, to keep the file
// small), for the packed int8 schedule of constant weights
// (mithril-run-target-cpu.test: a reduction of no whole AMX steps).
mithril.model @Linear(data %x: tensor<64x784xf32>) -> (y: tensor<64x512xf32>) {
  %w = mithril.constant dense<0.5> : tensor<512x784xf32>
  %t = mithril.transpose %w {permutation = array<i64: 1, 0>} : (tensor<512x784xf32>) -> tensor<784x512xf32>
  %0 = mithril.matmul %x, %t : (tensor<64x784xf32>, tensor<784x512xf32>) -> tensor<64x512xf32>
  mithril.output %0 : tensor<64x512xf32>
}
