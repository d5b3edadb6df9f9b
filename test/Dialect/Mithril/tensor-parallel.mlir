// RUN: mithril-opt %s -split-input-file -verify-diagnostics -mithril-tensor-parallel="size=2" | FileCheck %s

// Two Linear layers joined by a bias and an activation: the first keeps its
// rows (output columns) of W1 and b1, the second the matching columns of W2;
// the pair's input is replicated (summed in the backward pass) and the
// second layer's partial products are summed over the tensor group before
// its bias. The slices carry the axis of the global parameter they cut.
// CHECK-LABEL: mithril.model @mlp(
// CHECK-SAME: param %w1: tensor<3x8xf32> {mithril.tensor_split = 0 : i64}
// CHECK-SAME: param %b1: tensor<3xf32> {mithril.tensor_split = 0 : i64}
// CHECK-SAME: param %w2: tensor<4x3xf32> {mithril.tensor_split = 1 : i64}
// CHECK-SAME: param %b2: tensor<4xf32>)
// CHECK: %[[X:.+]] = replicate %x : (tensor<5x8xf32>) -> tensor<5x8xf32>
// CHECK: matmul %[[X]], %{{.+}} : (tensor<5x8xf32>, tensor<8x3xf32>) -> tensor<5x3xf32>
// CHECK: %[[P:.+]] = matmul %{{.+}}, %{{.+}} : (tensor<5x3xf32>, tensor<3x4xf32>) -> tensor<5x4xf32>
// CHECK-NEXT: %[[S:.+]] = all_reduce %[[P]] {group = "tensor"} : (tensor<5x4xf32>) -> tensor<5x4xf32>
// CHECK-NEXT: add %[[S]], %b2
mithril.model @mlp(data %x: tensor<5x8xf32>, param %w1: tensor<6x8xf32>, param %b1: tensor<6xf32>,
                   param %w2: tensor<4x6xf32>, param %b2: tensor<4xf32>) -> (y: tensor<5x4xf32>) {
  %w1t = mithril.transpose %w1 : (tensor<6x8xf32>) -> tensor<8x6xf32>
  %h = mithril.matmul %x, %w1t : (tensor<5x8xf32>, tensor<8x6xf32>) -> tensor<5x6xf32>
  %hb = mithril.add %h, %b1 : (tensor<5x6xf32>, tensor<6xf32>) -> tensor<5x6xf32>
  %a = mithril.gelu %hb : (tensor<5x6xf32>) -> tensor<5x6xf32>
  %w2t = mithril.transpose %w2 : (tensor<4x6xf32>) -> tensor<6x4xf32>
  %o = mithril.matmul %a, %w2t : (tensor<5x6xf32>, tensor<6x4xf32>) -> tensor<5x4xf32>
  %y = mithril.add %o, %b2 : (tensor<5x4xf32>, tensor<4xf32>) -> tensor<5x4xf32>
  mithril.output %y : tensor<5x4xf32>
}

// -----

// A hidden size the ranks do not divide.
// expected-error@+1 {{mithril-tensor-parallel: parameter 'w1' has 5 rows of the split layer on axis 0, not a multiple of the 2 ranks}}
mithril.model @odd(data %x: tensor<2x3xf32>, param %w1: tensor<5x3xf32>, param %w2: tensor<4x5xf32>) -> (y: tensor<2x4xf32>) {
  %w1t = mithril.transpose %w1 : (tensor<5x3xf32>) -> tensor<3x5xf32>
  %h = mithril.matmul %x, %w1t : (tensor<2x3xf32>, tensor<3x5xf32>) -> tensor<2x5xf32>
  %w2t = mithril.transpose %w2 : (tensor<4x5xf32>) -> tensor<5x4xf32>
  %o = mithril.matmul %h, %w2t : (tensor<2x5xf32>, tensor<5x4xf32>) -> tensor<2x4xf32>
  mithril.output %o : tensor<2x4xf32>
}

// -----

// Nothing to split: one Linear layer.
// expected-error@+1 {{mithril-tensor-parallel: @single has no pair of Linear layers (joined by elementwise ops) to split across the tensor group}}
mithril.model @single(data %x: tensor<2x3xf32>, param %w: tensor<4x3xf32>) -> (y: tensor<2x4xf32>) {
  %wt = mithril.transpose %w : (tensor<4x3xf32>) -> tensor<3x4xf32>
  %o = mithril.matmul %x, %wt : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  mithril.output %o : tensor<2x4xf32>
}
