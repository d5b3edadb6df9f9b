mithril.model @Linear(data %input: tensor<?x?xf32>, param %weight: tensor<16x?xf32>) -> (output: tensor<?x16xf32>) {
  %wt = mithril.transpose %weight : (tensor<16x?xf32>) -> tensor<?x16xf32>
  %mm = mithril.matmul %input, %wt : (tensor<?x?xf32>, tensor<?x16xf32>) -> tensor<?x16xf32>
  mithril.output %mm : tensor<?x16xf32>
}
mithril.model @Net(data %x: tensor<?x?xf32>) -> (y: tensor<?x16xf32>) {
  %0 = mithril.instance "fc" @Linear(input = %x) : (tensor<?x?xf32>) -> tensor<?x16xf32>
  mithril.output %0 : tensor<?x16xf32>
}
