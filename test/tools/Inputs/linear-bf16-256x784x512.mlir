// A bf16 Linear layer of the MLP 784-512-512-10 at batch 256, with its bias
// and ReLU (mithril-run-target-cpu.test).
mithril.model @LinearReLUBF16(data %x: tensor<256x784xbf16>, param %w: tensor<512x784xbf16>,
                              param %b: tensor<512xbf16>) -> (y: tensor<256x512xbf16>) {
  %t = mithril.transpose %w {permutation = array<i64: 1, 0>} : (tensor<512x784xbf16>) -> tensor<784x512xbf16>
  %h = mithril.matmul %x, %t : (tensor<256x784xbf16>, tensor<784x512xbf16>) -> tensor<256x512xbf16>
  %s = mithril.add %h, %b : (tensor<256x512xbf16>, tensor<512xbf16>) -> tensor<256x512xbf16>
  %y = mithril.relu %s : (tensor<256x512xbf16>) -> tensor<256x512xbf16>
  mithril.output %y : tensor<256x512xbf16>
}
