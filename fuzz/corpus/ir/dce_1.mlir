// RUN: mithril-opt %s -mithril-dce="discard=aux" | FileCheck %s

// The discarded output goes, and so does everything only it needed,
// instances included; what feeds a kept output stays.
mithril.model @Leaf(data %input: tensor<4xf32>) -> (output: tensor<4xf32>) {
  %0 = mithril.exp %input : (tensor<4xf32>) -> tensor<4xf32>
  mithril.output %0 : tensor<4xf32>
}
// CHECK-LABEL: mithril.model @Top(data %x: tensor<4xf32>) -> (y: tensor<4xf32>)
// CHECK-NEXT: %[[R:.+]] = relu %x
// CHECK-NEXT: output %[[R]]
mithril.model @Top(data %x: tensor<4xf32>) -> (y: tensor<4xf32>, aux: tensor<4xf32>) {
  %dead = mithril.sin %x : (tensor<4xf32>) -> tensor<4xf32>
  %r = mithril.relu %x : (tensor<4xf32>) -> tensor<4xf32>
  %l = mithril.instance "leaf" @Leaf(input = %x) : (tensor<4xf32>) -> tensor<4xf32>
  mithril.output %r, %l : tensor<4xf32>, tensor<4xf32>
}

