// RUN: mithril-opt %s -mithril-autodiff -mithril-all-reduce-gradients | FileCheck %s

// Each parameter gradient is summed over the ranks right after the op that
// computes it, and that sum is what the model outputs; the forward output is
// left alone.
// CHECK-LABEL: mithril.model @Linear(
// CHECK: %[[DB:.+]] = reshape
// CHECK-NEXT: %[[SB:.+]] = all_reduce %[[DB]] : (tensor<3xf32>) -> tensor<3xf32>
// CHECK: %[[DW:.+]] = matmul %{{.+}}, %arg0
// CHECK-NEXT: %[[SW:.+]] = all_reduce %[[DW]] : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK: output %{{.+}}, %[[SW]], %[[SB]]
mithril.model @Linear(data %input: tensor<4x2xf32>, param %weight: tensor<2x3xf32>, param %bias: tensor<3xf32>) -> (output: tensor<4x3xf32>) {
  %mm = mithril.matmul %input, %weight : (tensor<4x2xf32>, tensor<2x3xf32>) -> tensor<4x3xf32>
  %y = mithril.add %mm, %bias : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
  mithril.output %y : tensor<4x3xf32>
}
