// bf16 matmuls large enough for the packed, cache-blocked schedule, one of
// them on a Linear layer's transposed weight (mithril-run-target-cpu.test).
mithril.model @MMBF16(data %a: tensor<48x512xbf16>, param %b: tensor<512x512xbf16>,
                      param %w: tensor<128x512xbf16>)
    -> (y: tensor<48x512xbf16>, z: tensor<48x128xbf16>) {
  %0 = mithril.matmul %a, %b : (tensor<48x512xbf16>, tensor<512x512xbf16>) -> tensor<48x512xbf16>
  %t = mithril.transpose %w {permutation = array<i64: 1, 0>} : (tensor<128x512xbf16>) -> tensor<512x128xbf16>
  %1 = mithril.matmul %a, %t : (tensor<48x512xbf16>, tensor<512x128xbf16>) -> tensor<48x128xbf16>
  mithril.output %0, %1 : tensor<48x512xbf16>, tensor<48x128xbf16>
}
