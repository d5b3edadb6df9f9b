

// Small constant expressions fold; transposes compose.
// CHECK-LABEL: @constants
// CHECK-NEXT: %[[C:.+]] = constant dense<[4.000000e+00, 6.000000e+00]> : tensor<2xf32>
// CHECK-NEXT: %[[T:.+]] = transpose %y {permutation = array<i64: 1, 2, 0>}
// CHECK-NEXT: output %[[C]], %[[T]]
mithril.model @constants(data %y: tensor<2x3x4xf32>) -> (a: tensor<2xf32>, b: tensor<3x4x2xf32>) {
  %a = mithril.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %b = mithril.constant dense<[3.0, 4.0]> : tensor<2xf32>
  %0 = mithril.add %a, %b : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %1 = mithril.transpose %y {permutation = array<i64: 1, 0, 2>} : (tensor<2x3x4xf32>) -> tensor<3x2x4xf32>
  %2 = mithril.transpose %1 {permutation = array<i64: 0, 2, 1>} : (tensor<3x2x4xf32>) -> tensor<3x4x2xf32>
  mithril.output %0, %2 : tensor<2xf32>, tensor<3x4x2xf32>
}

