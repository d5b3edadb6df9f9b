// RUN: mithril-opt %s -canonicalize -split-input-file | FileCheck %s

// CHECK-LABEL: @identities
// CHECK-NEXT: output %x, %x, %x, %x
mithril.model @identities(data %x: tensor<4x8xf32>) -> (a: tensor<4x8xf32>, b: tensor<4x8xf32>, c: tensor<4x8xf32>, d: tensor<4x8xf32>) {
  %zero = mithril.constant dense<0.0> : tensor<f32>
  %one = mithril.constant dense<1.0> : tensor<8xf32>
  %0 = mithril.add %x, %zero : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %1 = mithril.multiply %one, %x : (tensor<8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %2 = mithril.transpose %x : (tensor<4x8xf32>) -> tensor<8x4xf32>
  %3 = mithril.transpose %2 : (tensor<8x4xf32>) -> tensor<4x8xf32>
  %4 = mithril.negate %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %5 = mithril.negate %4 : (tensor<4x8xf32>) -> tensor<4x8xf32>
  mithril.output %0, %1, %3, %5 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}


