mithril.model @R(data %k: tensor<i64>, data %x: tensor<4x8xf32>) -> (z: tensor<4x8xf32>) {
  %0 = mithril.random_normal %k {shape = array<i64: 4, 8>, element_type = f32} : (tensor<i64>) -> tensor<4x8xf32>
  %1 = mithril.add %0, %x : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  mithril.output %1 : tensor<4x8xf32>
}
