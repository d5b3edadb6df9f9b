

// Shapes that conflict inside the model name both terminals and shapes.
mithril.model @Conflict(data %input: tensor<?x?xf32>, param %other: tensor<5x9xf32>) -> (y: tensor<?x?xf32>) {
  // expected-error @+1 {{'mithril.add' cannot broadcast terminal 'input' (4x8) with terminal 'other' (5x9)}}
  %0 = mithril.add %input, %other : (tensor<?x?xf32>, tensor<5x9xf32>) -> tensor<?x?xf32>
  mithril.output %0 : tensor<?x?xf32>
}


