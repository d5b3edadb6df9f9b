// An MLP 784-512-512-10 with ReLU, written as a hierarchy: the Linear
// definition is instantiated three times and each instance owns its weight
// and bias (layer1.weight, ...). The batch size comes from the data.
mithril.model @Linear(data %input: tensor<?x?xf32>, param %weight: tensor<?x?xf32>, param %bias: tensor<?xf32>) -> (output: tensor<?x?xf32>) {
  %wt = mithril.transpose %weight : (tensor<?x?xf32>) -> tensor<?x?xf32>
  %mm = mithril.matmul %input, %wt : (tensor<?x?xf32>, tensor<?x?xf32>) -> tensor<?x?xf32>
  %y = mithril.add %mm, %bias : (tensor<?x?xf32>, tensor<?xf32>) -> tensor<?x?xf32>
  mithril.output %y : tensor<?x?xf32>
}

mithril.model @MLP(data %input: tensor<?x784xf32>, param %layer1.weight: tensor<512x784xf32>, param %layer2.weight: tensor<512x512xf32>, param %layer3.weight: tensor<10x512xf32>) -> (output: tensor<?x10xf32>) {
  %h1 = mithril.instance "layer1" @Linear(input = %input, weight = %layer1.weight) : (tensor<?x784xf32>, tensor<512x784xf32>) -> tensor<?x?xf32>
  %r1 = mithril.relu %h1 : (tensor<?x?xf32>) -> tensor<?x?xf32>
  %h2 = mithril.instance "layer2" @Linear(input = %r1, weight = %layer2.weight) : (tensor<?x?xf32>, tensor<512x512xf32>) -> tensor<?x?xf32>
  %r2 = mithril.relu %h2 : (tensor<?x?xf32>) -> tensor<?x?xf32>
  %o = mithril.instance "layer3" @Linear(input = %r2, weight = %layer3.weight) : (tensor<?x?xf32>, tensor<10x512xf32>) -> tensor<?x?xf32>
  mithril.output %o : tensor<?x?xf32>
}

