

// Adding zero that broadcasts to a larger shape is not an identity.
// CHECK-LABEL: @broadcasting_zero
// CHECK: add
mithril.model @broadcasting_zero(data %x: tensor<8xf32>) -> (a: tensor<4x8xf32>) {
  %zero = mithril.constant dense<0.0> : tensor<4x8xf32>
  %0 = mithril.add %x, %zero : (tensor<8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  mithril.output %0 : tensor<4x8xf32>
}


