mithril.model @Features(data %input: tensor<256x784xf32>, param %linear_0.weight: tensor<512x784xf32>, param %linear_0.bias: tensor<512xf32>, param %linear_1.weight: tensor<512x512xf32>, param %linear_1.bias: tensor<512xf32>, param %linear_2.weight: tensor<10x512xf32>, param %linear_2.bias: tensor<10xf32>) -> (logits: tensor<256x10xf32>, hidden_0: tensor<256x512xf32>, hidden_1: tensor<256x512xf32>) {
  %0 = transpose %linear_0.weight : (tensor<512x784xf32>) -> tensor<784x512xf32>
  %1 = matmul %input, %0 : (tensor<256x784xf32>, tensor<784x512xf32>) -> tensor<256x512xf32>
  %2 = add %1, %linear_0.bias : (tensor<256x512xf32>, tensor<512xf32>) -> tensor<256x512xf32>
  %3 = relu %2 : (tensor<256x512xf32>) -> tensor<256x512xf32>
  %4 = transpose %linear_1.weight : (tensor<512x512xf32>) -> tensor<512x512xf32>
  %5 = matmul %3, %4 : (tensor<256x512xf32>, tensor<512x512xf32>) -> tensor<256x512xf32>
  %6 = add %5, %linear_1.bias : (tensor<256x512xf32>, tensor<512xf32>) -> tensor<256x512xf32>
  %7 = relu %6 : (tensor<256x512xf32>) -> tensor<256x512xf32>
  %8 = transpose %linear_2.weight : (tensor<10x512xf32>) -> tensor<512x10xf32>
  %9 = matmul %7, %8 : (tensor<256x512xf32>, tensor<512x10xf32>) -> tensor<256x10xf32>
  %10 = add %9, %linear_2.bias : (tensor<256x10xf32>, tensor<10xf32>) -> tensor<256x10xf32>
  output %10, %3, %7 : tensor<256x10xf32>, tensor<256x512xf32>, tensor<256x512xf32>
}
