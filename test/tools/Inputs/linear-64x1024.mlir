// A Linear layer large enough for the packed, cache-blocked schedule
// (mithril-run-target-cpu.test: --quantize=int8 per target CPU).
mithril.model @Linear(data %x: tensor<64x1024xf32>, param %w: tensor<512x1024xf32>)
    -> (y: tensor<64x512xf32>) {
  %t = mithril.transpose %w {permutation = array<i64: 1, 0>} : (tensor<512x1024xf32>) -> tensor<1024x512xf32>
  %0 = mithril.matmul %x, %t : (tensor<64x1024xf32>, tensor<1024x512xf32>) -> tensor<64x512xf32>
  mithril.output %0 : tensor<64x512xf32>
}
