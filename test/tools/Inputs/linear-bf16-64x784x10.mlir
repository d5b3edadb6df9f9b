// Two bf16 Linear layers whose shapes do not fill AMX tiles: a reduction of
// 784 (24 steps of 32 and 16 more) and 10 output columns
// (mithril-run-target-cpu.test).
mithril.model @LinearBF16(data %x: tensor<64x784xbf16>, param %w: tensor<64x784xbf16>,
                          param %v: tensor<10x64xbf16>) -> (y: tensor<64x10xbf16>) {
  %t = mithril.transpose %w {permutation = array<i64: 1, 0>} : (tensor<64x784xbf16>) -> tensor<784x64xbf16>
  %h = mithril.matmul %x, %t : (tensor<64x784xbf16>, tensor<784x64xbf16>) -> tensor<64x64xbf16>
  %u = mithril.transpose %v {permutation = array<i64: 1, 0>} : (tensor<10x64xbf16>) -> tensor<64x10xbf16>
  %y = mithril.matmul %h, %u : (tensor<64x64xbf16>, tensor<64x10xbf16>) -> tensor<64x10xbf16>
  mithril.output %y : tensor<64x10xbf16>
}
