

// A given shape that conflicts with the declared one names the terminal.
// expected-error @+1 {{input terminal 'input' is declared as 3x8 but was given shape 4x8}}
mithril.model @Declared(data %input: tensor<3x8xf32>) -> (y: tensor<3x8xf32>) {
  mithril.output %input : tensor<3x8xf32>
}


