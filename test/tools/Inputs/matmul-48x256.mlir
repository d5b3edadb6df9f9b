// A matmul large enough for the register-tiled schedule (mithril-run-target-cpu.test).
mithril.model @MM(data %a: tensor<48x256xf32>, param %b: tensor<256x256xf32>) -> (y: tensor<48x256xf32>) {
  %0 = mithril.matmul %a, %b : (tensor<48x256xf32>, tensor<256x256xf32>) -> tensor<48x256xf32>
  mithril.output %0 : tensor<48x256xf32>
}
