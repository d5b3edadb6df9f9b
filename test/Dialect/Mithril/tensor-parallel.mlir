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
// expected-error@+1 {{mithril-tensor-parallel: @single has no pair of Linear layers (joined by elementwise ops) or attention block to split across the tensor group}}
mithril.model @single(data %x: tensor<2x3xf32>, param %w: tensor<4x3xf32>) -> (y: tensor<2x4xf32>) {
  %wt = mithril.transpose %w : (tensor<4x3xf32>) -> tensor<3x4xf32>
  %o = mithril.matmul %x, %wt : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  mithril.output %o : tensor<2x4xf32>
}

// -----

// An attention block: each rank keeps its heads. The qkv projection's rows
// are three blocks (q, k, v), each split; the thirds, the head count of the
// reshapes and the merged width shrink; the output projection is split by
// columns and summed over the group.
// CHECK-LABEL: mithril.model @attention(
// CHECK-SAME: param %wqkv: tensor<12x8xf32> {mithril.tensor_blocks = 3 : i64, mithril.tensor_split = 0 : i64}
// CHECK-SAME: param %bqkv: tensor<12xf32> {mithril.tensor_blocks = 3 : i64, mithril.tensor_split = 0 : i64}
// CHECK-SAME: param %wo: tensor<8x4xf32> {mithril.tensor_split = 1 : i64}
// CHECK: replicate %x
// CHECK: slice %{{.+}} {axes = array<i64: 2>, start = array<i64: 0>, step = array<i64: 1>, stop = array<i64: 4>}
// CHECK: slice %{{.+}} {axes = array<i64: 2>, start = array<i64: 4>, step = array<i64: 1>, stop = array<i64: 8>}
// CHECK: slice %{{.+}} {axes = array<i64: 2>, start = array<i64: 8>, step = array<i64: 1>, stop = array<i64: 12>}
// CHECK: reshape %{{.+}} {shape = array<i64: 2, 3, 1, -1>} : (tensor<2x3x4xf32>) -> tensor<2x3x1x4xf32>
// CHECK: softmax %{{.+}} : (tensor<2x1x3x3xf32>) -> tensor<2x1x3x3xf32>
// CHECK: reshape %{{.+}} {shape = array<i64: 2, 3, 4>} : (tensor<2x3x1x4xf32>) -> tensor<2x3x4xf32>
// CHECK: %[[P:.+]] = matmul %{{.+}}, %{{.+}} : (tensor<2x3x4xf32>, tensor<4x8xf32>) -> tensor<2x3x8xf32>
// CHECK-NEXT: all_reduce %[[P]] {group = "tensor"}
mithril.model @attention(data %x: tensor<2x3x8xf32>, param %wqkv: tensor<24x8xf32>, param %bqkv: tensor<24xf32>,
                         param %wo: tensor<8x8xf32>) -> (y: tensor<2x3x8xf32>) {
  %wt = mithril.transpose %wqkv : (tensor<24x8xf32>) -> tensor<8x24xf32>
  %p = mithril.matmul %x, %wt : (tensor<2x3x8xf32>, tensor<8x24xf32>) -> tensor<2x3x24xf32>
  %pb = mithril.add %p, %bqkv : (tensor<2x3x24xf32>, tensor<24xf32>) -> tensor<2x3x24xf32>
  %q = mithril.slice %pb {axes = array<i64: 2>, start = array<i64: 0>, step = array<i64: 1>, stop = array<i64: 8>} : (tensor<2x3x24xf32>) -> tensor<2x3x8xf32>
  %k = mithril.slice %pb {axes = array<i64: 2>, start = array<i64: 8>, step = array<i64: 1>, stop = array<i64: 16>} : (tensor<2x3x24xf32>) -> tensor<2x3x8xf32>
  %v = mithril.slice %pb {axes = array<i64: 2>, start = array<i64: 16>, step = array<i64: 1>, stop = array<i64: 24>} : (tensor<2x3x24xf32>) -> tensor<2x3x8xf32>
  %qh = mithril.reshape %q {shape = array<i64: 2, 3, 2, -1>} : (tensor<2x3x8xf32>) -> tensor<2x3x2x4xf32>
  %kh = mithril.reshape %k {shape = array<i64: 2, 3, 2, -1>} : (tensor<2x3x8xf32>) -> tensor<2x3x2x4xf32>
  %vh = mithril.reshape %v {shape = array<i64: 2, 3, 2, -1>} : (tensor<2x3x8xf32>) -> tensor<2x3x2x4xf32>
  %qt = mithril.transpose %qh {permutation = array<i64: 0, 2, 1, 3>} : (tensor<2x3x2x4xf32>) -> tensor<2x2x3x4xf32>
  %kt = mithril.transpose %kh {permutation = array<i64: 0, 2, 3, 1>} : (tensor<2x3x2x4xf32>) -> tensor<2x2x4x3xf32>
  %vt = mithril.transpose %vh {permutation = array<i64: 0, 2, 1, 3>} : (tensor<2x3x2x4xf32>) -> tensor<2x2x3x4xf32>
  %s = mithril.matmul %qt, %kt : (tensor<2x2x3x4xf32>, tensor<2x2x4x3xf32>) -> tensor<2x2x3x3xf32>
  %a = mithril.softmax %s : (tensor<2x2x3x3xf32>) -> tensor<2x2x3x3xf32>
  %o = mithril.matmul %a, %vt : (tensor<2x2x3x3xf32>, tensor<2x2x3x4xf32>) -> tensor<2x2x3x4xf32>
  %ot = mithril.transpose %o {permutation = array<i64: 0, 2, 1, 3>} : (tensor<2x2x3x4xf32>) -> tensor<2x3x2x4xf32>
  %m = mithril.reshape %ot {shape = array<i64: 2, 3, 8>} : (tensor<2x3x2x4xf32>) -> tensor<2x3x8xf32>
  %wot = mithril.transpose %wo : (tensor<8x8xf32>) -> tensor<8x8xf32>
  %y = mithril.matmul %m, %wot : (tensor<2x3x8xf32>, tensor<8x8xf32>) -> tensor<2x3x8xf32>
  mithril.output %y : tensor<2x3x8xf32>
}
