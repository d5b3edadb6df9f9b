// A hierarchical logical model: one Block definition used twice. Shapes are
// left open; `mithril-opt --mithril-flatten --mithril-infer-shapes` inlines
// the instances, names each parameter by its instance path and fills every
// shape in from the input's.
mithril.model @Linear(data %input: tensor<?x?xf32>, param %weight: tensor<16x?xf32>, param %bias: tensor<?xf32>) -> (output: tensor<?x16xf32>) {
  %wt = mithril.transpose %weight : (tensor<16x?xf32>) -> tensor<?x16xf32>
  %mm = mithril.matmul %input, %wt : (tensor<?x?xf32>, tensor<?x16xf32>) -> tensor<?x16xf32>
  %y = mithril.add %mm, %bias : (tensor<?x16xf32>, tensor<?xf32>) -> tensor<?x16xf32>
  mithril.output %y : tensor<?x16xf32>
}
mithril.model @Block(data %input: tensor<?x?xf32>) -> (output: tensor<?x16xf32>) {
  %h = mithril.instance "fc" @Linear(input = %input) : (tensor<?x?xf32>) -> tensor<?x16xf32>
  %r = mithril.relu %h : (tensor<?x16xf32>) -> tensor<?x16xf32>
  mithril.output %r : tensor<?x16xf32>
}
mithril.model @Net(data %x: tensor<?x?xf32>) -> (y: tensor<?x16xf32>) {
  %a = mithril.instance "block1" @Block(input = %x) : (tensor<?x?xf32>) -> tensor<?x16xf32>
  %b = mithril.instance "block2" @Block(input = %a) : (tensor<?x16xf32>) -> tensor<?x16xf32>
  mithril.output %b : tensor<?x16xf32>
}

