

// CHECK-LABEL: @reshapes
// CHECK-NEXT: %[[R:.+]] = reshape %x {shape = array<i64: 2, -1>}
// CHECK-NEXT: output %[[R]]
mithril.model @reshapes(data %x: tensor<4x8xf32>) -> (a: tensor<2x16xf32>) {
  %0 = mithril.reshape %x {shape = array<i64: 32>} : (tensor<4x8xf32>) -> tensor<32xf32>
  %1 = mithril.reshape %0 {shape = array<i64: 2, -1>} : (tensor<32xf32>) -> tensor<2x16xf32>
  mithril.output %1 : tensor<2x16xf32>
}


