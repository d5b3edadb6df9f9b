mithril.model @Linear(data %x: tensor<16x784xf32>, param %w: tensor<512x784xf32>, param %b: tensor<512xf32>) -> (y: tensor<16x512xf32>) {
  %wt = mithril.transpose %w : (tensor<512x784xf32>) -> tensor<784x512xf32>
  %mm = mithril.matmul %x, %wt : (tensor<16x784xf32>, tensor<784x512xf32>) -> tensor<16x512xf32>
  %a = mithril.add %mm, %b : (tensor<16x512xf32>, tensor<512xf32>) -> tensor<16x512xf32>
  %y = mithril.relu %a : (tensor<16x512xf32>) -> tensor<16x512xf32>
  mithril.output %y : tensor<16x512xf32>
}
