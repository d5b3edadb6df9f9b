// A bf16 Linear layer at batch 4: a matrix-vector product on the weight's own
// layout (mithril-run-target-cpu.test).
mithril.model @LinearBF16(data %x: tensor<4x784xbf16>, param %w: tensor<512x784xbf16>)
    -> (y: tensor<4x512xbf16>) {
  %t = mithril.transpose %w {permutation = array<i64: 1, 0>} : (tensor<512x784xbf16>) -> tensor<784x512xbf16>
  %0 = mithril.matmul %x, %t : (tensor<4x784xbf16>, tensor<784x512xbf16>) -> tensor<4x512xbf16>
  mithril.output %0 : tensor<4x512xbf16>
}
