// C = A B in float32: the GPU's tiled GEMM on its own.
mithril.model @Sgemm(data %a: tensor<?x?xf32>, data %b: tensor<?x?xf32>) -> (c: tensor<?x?xf32>) {
  %c = mithril.matmul %a, %b : (tensor<?x?xf32>, tensor<?x?xf32>) -> tensor<?x?xf32>
  mithril.output %c : tensor<?x?xf32>
}
