// RUN: mithril-opt %s -mithril-decompose | FileCheck %s

// CHECK-LABEL: @softmax
// CHECK: %[[MAX:.+]] = max %x {axes = array<i64: 1>, keepdim = true}
// CHECK: %[[STOP:.+]] = stop_gradient %[[MAX]]
// CHECK: %[[SH:.+]] = subtract %x, %[[STOP]]
// CHECK: %[[E:.+]] = exp %[[SH]]
// CHECK: %[[S:.+]] = sum %[[E]] {axes = array<i64: 1>, keepdim = true}
// CHECK: divide %[[E]], %[[S]]
// CHECK-NOT: softmax
mithril.model @softmax(data %x: tensor<2x5xf32>) -> (y: tensor<2x5xf32>) {
  %0 = mithril.softmax %x {axis = 1 : i64} : (tensor<2x5xf32>) -> tensor<2x5xf32>
  mithril.output %0 : tensor<2x5xf32>
}

// CHECK-LABEL: @cross_entropy
// CHECK: %[[L:.+]] = log %{{.+}} : (tensor<4x1xf32>)
// CHECK: %[[LS:.+]] = subtract %{{.+}}, %[[L]] : (tensor<4x3xf32>, tensor<4x1xf32>)
// CHECK: cross_entropy %[[LS]], %t {from_log_probs = true}
mithril.model @cross_entropy(data %p: tensor<4x3xf32>, data %t: tensor<4xi64>) -> (l: tensor<4xf32>) {
  %0 = mithril.cross_entropy %p, %t {from_logits = true} : (tensor<4x3xf32>, tensor<4xi64>) -> tensor<4xf32>
  mithril.output %0 : tensor<4xf32>
}

// CHECK-LABEL: @layer_norm
// CHECK: %[[EPS:.+]] = constant dense<9.99999974E-6> : tensor<f32>
// CHECK: %[[MEAN:.+]] = mean %x {axes = array<i64: 1>, keepdim = true}
// CHECK: %[[C:.+]] = subtract %x, %[[MEAN]]
// CHECK: %[[SQ:.+]] = square %[[C]]
// CHECK: %[[VAR:.+]] = mean %[[SQ]]
// CHECK: %[[VE:.+]] = add %[[VAR]], %[[EPS]]
// CHECK: %[[D:.+]] = sqrt %[[VE]]
// CHECK: divide %[[C]], %[[D]]
mithril.model @layer_norm(data %x: tensor<2x5xf32>) -> (y: tensor<2x5xf32>) {
  %0 = mithril.layer_norm %x : (tensor<2x5xf32>) -> tensor<2x5xf32>
  mithril.output %0 : tensor<2x5xf32>
}

