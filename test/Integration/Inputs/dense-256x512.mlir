// A dense layer big enough that the CPU pipeline splits it across threads.
mithril.model @Big(data %x: tensor<256x512xf32>, param %w: tensor<512x512xf32>, param %b: tensor<512xf32>) -> (y: tensor<256x512xf32>) {
  %mm = mithril.matmul %x, %w : (tensor<256x512xf32>, tensor<512x512xf32>) -> tensor<256x512xf32>
  %a = mithril.add %mm, %b : (tensor<256x512xf32>, tensor<512xf32>) -> tensor<256x512xf32>
  %y = mithril.relu %a : (tensor<256x512xf32>) -> tensor<256x512xf32>
  mithril.output %y : tensor<256x512xf32>
}
