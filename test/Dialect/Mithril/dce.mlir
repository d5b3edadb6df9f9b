// RUN: mithril-opt %s -mithril-dce="discard=aux" | FileCheck %s

// The discarded output goes, and so does everything only it needed,
// instances included; what feeds a kept output stays.
mithril.model @Leaf(data %input: tensor<4xf32>) -> (output: tensor<4xf32>) {
  %0 = mithril.exp %input : (tensor<4xf32>) -> tensor<4xf32>
  mithril.output %0 : tensor<4xf32>
}
// CHECK-LABEL: mithril.model @Top(data %x: tensor<4xf32>) -> (y: tensor<4xf32>) attributes {mithril.discarded = ["aux"]}
// CHECK-NEXT: %[[R:.+]] = relu %x
// CHECK-NEXT: output %[[R]]
mithril.model @Top(data %x: tensor<4xf32>) -> (y: tensor<4xf32>, aux: tensor<4xf32>) {
  %dead = mithril.sin %x : (tensor<4xf32>) -> tensor<4xf32>
  %r = mithril.relu %x : (tensor<4xf32>) -> tensor<4xf32>
  %l = mithril.instance "leaf" @Leaf(input = %x) : (tensor<4xf32>) -> tensor<4xf32>
  mithril.output %r, %l : tensor<4xf32>, tensor<4xf32>
}

// A root that loses an output also loses the inputs only it read; an
// instantiated model keeps its terminals.
// CHECK-LABEL: mithril.model @Head(data %x: tensor<4xf32>) -> (y: tensor<4xf32>) attributes {mithril.discarded = ["aux", "w"]}
// CHECK-NEXT: %[[E:.+]] = exp %x
// CHECK-NEXT: output %[[E]]
mithril.model @Head(data %x: tensor<4xf32>, param %w: tensor<4xf32>) -> (y: tensor<4xf32>, aux: tensor<4xf32>) {
  %e = mithril.exp %x : (tensor<4xf32>) -> tensor<4xf32>
  %m = mithril.multiply %x, %w : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  mithril.output %e, %m : tensor<4xf32>, tensor<4xf32>
}
