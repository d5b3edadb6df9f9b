

// expected-error @+1 {{has no input terminal 'input' (its inputs are 'x', 'y')}}
mithril.model @Unknown(data %x: tensor<?xf32>, data %y: tensor<?xf32>) -> (z: tensor<?xf32>) {
  mithril.output %x : tensor<?xf32>
}

