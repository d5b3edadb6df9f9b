// RUN: mithril-opt %s -mithril-autodiff -canonicalize -cse | FileCheck %s

// Gradients are mithril ops appended to the model: seeds come in as
// grad:<output>, gradients leave as grad:<input>; data inputs get none.
// CHECK-LABEL: mithril.model @Linear(
// CHECK-SAME: data "grad:output" %[[SEED:[^:]+]]: tensor<4x3xf32>)
// CHECK-SAME: -> (output: tensor<4x3xf32>, "grad:weight": tensor<3x2xf32>, "grad:bias": tensor<3xf32>)
// CHECK-DAG: %[[DB:.+]] = sum %[[SEED]] {axes = array<i64: 0>, keepdim = true}
// CHECK-DAG: %[[XT:.+]] = transpose %input {permutation = array<i64: 1, 0>}
// CHECK-DAG: %[[DWT:.+]] = matmul %[[XT]], %[[SEED]]
// CHECK-DAG: %[[DW:.+]] = transpose %[[DWT]] {permutation = array<i64: 1, 0>}
// CHECK: output %{{.+}}, %[[DW]], %{{.+}}
mithril.model @Linear(data %input: tensor<4x2xf32>, param %weight: tensor<3x2xf32>, param %bias: tensor<3xf32>) -> (output: tensor<4x3xf32>) {
  %wt = mithril.transpose %weight : (tensor<3x2xf32>) -> tensor<2x3xf32>
  %mm = mithril.matmul %input, %wt : (tensor<4x2xf32>, tensor<2x3xf32>) -> tensor<4x3xf32>
  %y = mithril.add %mm, %bias : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
  mithril.output %y : tensor<4x3xf32>
}

