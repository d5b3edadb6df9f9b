// A residual block with named terminals: y = relu(x + fc2(relu(fc1(x)))).
mithril.model @Dense(data %input: tensor<?x?xf64>, param %weight: tensor<?x?xf64>, param %bias: tensor<?xf64>) -> (output: tensor<?x?xf64>) {
  %wt = mithril.transpose %weight : (tensor<?x?xf64>) -> tensor<?x?xf64>
  %mm = mithril.matmul %input, %wt : (tensor<?x?xf64>, tensor<?x?xf64>) -> tensor<?x?xf64>
  %y = mithril.add %mm, %bias : (tensor<?x?xf64>, tensor<?xf64>) -> tensor<?x?xf64>
  mithril.output %y : tensor<?x?xf64>
}

mithril.model @Residual(data %x: tensor<?x16xf64>, param %fc1.weight: tensor<32x16xf64>, param %fc2.weight: tensor<16x32xf64>) -> (y: tensor<?x16xf64>, hidden: tensor<?x32xf64>) {
  %h = mithril.instance "fc1" @Dense(input = %x, weight = %fc1.weight) : (tensor<?x16xf64>, tensor<32x16xf64>) -> tensor<?x?xf64>
  %hr = mithril.relu %h : (tensor<?x?xf64>) -> tensor<?x?xf64>
  %o = mithril.instance "fc2" @Dense(input = %hr, weight = %fc2.weight) : (tensor<?x?xf64>, tensor<16x32xf64>) -> tensor<?x?xf64>
  %s = mithril.add %x, %o : (tensor<?x16xf64>, tensor<?x?xf64>) -> tensor<?x16xf64>
  %y = mithril.relu %s : (tensor<?x16xf64>) -> tensor<?x16xf64>
  mithril.output %y, %hr : tensor<?x16xf64>, tensor<?x?xf64>
}

