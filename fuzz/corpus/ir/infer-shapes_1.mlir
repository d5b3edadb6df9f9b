// RUN: mithril-opt %s -split-input-file -mithril-infer-shapes="shapes=input:4x8" -verify-diagnostics | FileCheck %s

// Forward rules fix the batch; backward rules fix the weight's input
// dimension from the data it multiplies.
// CHECK-LABEL: mithril.model @Linear(
// CHECK-SAME: data %input: tensor<4x8xf32>, param %weight: tensor<32x8xf32>, param %bias: tensor<32xf32>) -> (output: tensor<4x32xf32>)
// CHECK: transpose %weight : (tensor<32x8xf32>) -> tensor<8x32xf32>
// CHECK: matmul %input, %{{.*}} : (tensor<4x8xf32>, tensor<8x32xf32>) -> tensor<4x32xf32>
// CHECK: add %{{.*}}, %bias : (tensor<4x32xf32>, tensor<32xf32>) -> tensor<4x32xf32>
mithril.model @Linear(data %input: tensor<?x?xf32>, param %weight: tensor<32x?xf32>, param %bias: tensor<32xf32>) -> (output: tensor<?x32xf32>) {
  %wt = mithril.transpose %weight : (tensor<32x?xf32>) -> tensor<?x32xf32>
  %mm = mithril.matmul %input, %wt : (tensor<?x?xf32>, tensor<?x32xf32>) -> tensor<?x32xf32>
  %y = mithril.add %mm, %bias : (tensor<?x32xf32>, tensor<32xf32>) -> tensor<?x32xf32>
  mithril.output %y : tensor<?x32xf32>
}


