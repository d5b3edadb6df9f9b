// A bf16 product whose left operand's rows are 2 KiB apart
// (mithril-run-target-cpu.test: AMX tiles read it from a padded copy).
mithril.model @MMBF16(data %a: tensor<32x1024xbf16>, param %b: tensor<1024x64xbf16>)
    -> (y: tensor<32x64xbf16>) {
  %0 = mithril.matmul %a, %b : (tensor<32x1024xbf16>, tensor<1024x64xbf16>) -> tensor<32x64xbf16>
  mithril.output %0 : tensor<32x64xbf16>
}
