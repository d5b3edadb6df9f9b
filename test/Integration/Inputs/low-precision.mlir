// float16 and bfloat16 terminals (low-precision.test).
mithril.model @LowPrecision(data %x: tensor<4x8xf16>, param %w: tensor<8x3xf16>,
                            data %b: tensor<5xbf16>) -> (y: tensor<4x3xf16>, z: tensor<5xbf16>) {
  %0 = mithril.matmul %x, %w : (tensor<4x8xf16>, tensor<8x3xf16>) -> tensor<4x3xf16>
  %1 = mithril.tanh %0 : (tensor<4x3xf16>) -> tensor<4x3xf16>
  %2 = mithril.multiply %b, %b : (tensor<5xbf16>, tensor<5xbf16>) -> tensor<5xbf16>
  mithril.output %1, %2 : tensor<4x3xf16>, tensor<5xbf16>
}
