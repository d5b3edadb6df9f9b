// A Linear layer on a few rows (here one) reads its weight [out, in] in its
// own layout: no transpose is materialized; the reduction is split into 49
// steps of 16 lanes of partial sums held in registers (8 output columns x 16
// lanes, starting from zero), and each tile sums its lanes in registers once
// the steps are done: the partial sums never go to memory. The 8 accumulators
// are summed together, pairs of registers combining half their lanes at each
// level, into one register of the 8 sums in order.
// RUN: mithril-opt %s --mithril-cpu-pipeline="vector-bits=512 stop-after=fusion" | FileCheck %s
// RUN: mithril-opt %s --mithril-cpu-pipeline="vector-bits=512 stop-after=loops" | FileCheck %s --check-prefix=LOOPS

mithril.model @Linear1(data %x: tensor<1x784xf32>, param %w: tensor<512x784xf32>) -> (y: tensor<1x512xf32>) {
  %wt = mithril.transpose %w : (tensor<512x784xf32>) -> tensor<784x512xf32>
  %y = mithril.matmul %x, %wt : (tensor<1x784xf32>, tensor<784x512xf32>) -> tensor<1x512xf32>
  mithril.output %y : tensor<1x512xf32>
}

// Rows that do not divide the register tile get the largest tile that does
// (5 of 65), so every tile keeps a static shape and is vectorized.
mithril.model @Rows65(data %x: tensor<65x64xf32>, param %w: tensor<64x64xf32>) -> (y: tensor<65x64xf32>) {
  %y = mithril.matmul %x, %w : (tensor<65x64xf32>, tensor<64x64xf32>) -> tensor<65x64xf32>
  mithril.output %y : tensor<65x64xf32>
}

// CHECK-LABEL: func.func @Linear1(
// CHECK-NOT: linalg.transpose
// CHECK-DAG: %[[W:.+]] = tensor.expand_shape %arg1 {{.*}} into tensor<512x49x16xf32>
// CHECK-DAG: %[[X:.+]] = tensor.expand_shape %arg0 {{.*}} into tensor<1x49x16xf32>
// CHECK: scf.for %[[N:.+]] = %c0 to %c512 step %c8
// CHECK: scf.for %[[K:.+]] = %c0 to %c49 step %c1 iter_args(%{{.+}} = %{{.+}}) -> (vector<1x8x16xf32>)
// CHECK: vector.transfer_read %[[W]][%[[N]], %[[K]], %c0]{{.*}} : tensor<512x49x16xf32>, vector<8x1x16xf32>
// CHECK: arith.addf {{.*}} : vector<1x8x16xf32>
// CHECK-NOT: vector.multi_reduction
// CHECK: %[[ACC0:.+]] = vector.extract %[[SUMS:.+]][0, 0] : vector<16xf32> from vector<1x8x16xf32>
// CHECK: %[[ACC4:.+]] = vector.extract %[[SUMS]][0, 4] : vector<16xf32> from vector<1x8x16xf32>
// CHECK: %[[HIGH:.+]] = vector.shuffle %[[ACC0]], %[[ACC4]] [8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31]
// CHECK: %[[LOW:.+]] = vector.shuffle %[[ACC0]], %[[ACC4]] [0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23]
// CHECK: arith.addf %[[LOW]], %[[HIGH]] : vector<16xf32>
// CHECK: %[[EIGHT:.+]] = arith.addf {{.*}} : vector<8xf32>
// CHECK: %[[TOTAL:.+]] = arith.addf %[[EIGHT]], {{.*}} : vector<8xf32>
// CHECK: vector.transfer_write %[[TOTAL]], {{.*}} : vector<8xf32>, tensor<1x512xf32>

// CHECK-LABEL: func.func @Rows65(
// CHECK: scf.for %{{.+}} = %c0 to %c65 step %c5
// CHECK: vector<5x32xf32>

// A weight of fewer than 16 columns (a classifier's 10 outputs) takes the
// matrix-vector kernel for any number of rows: tiles of 4 rows x 2 columns x
// 16 lanes over both operands' own rows, no transpose and no packed panel.
mithril.model @Narrow10(data %x: tensor<256x512xf32>, param %w: tensor<10x512xf32>) -> (y: tensor<256x10xf32>) {
  %wt = mithril.transpose %w : (tensor<10x512xf32>) -> tensor<512x10xf32>
  %y = mithril.matmul %x, %wt : (tensor<256x512xf32>, tensor<512x10xf32>) -> tensor<256x10xf32>
  mithril.output %y : tensor<256x10xf32>
}

// CHECK-LABEL: func.func @Narrow10(
// CHECK-NOT: linalg.transpose
// CHECK-DAG: %[[X:.+]] = tensor.expand_shape %arg0 {{.*}} into tensor<256x32x16xf32>
// CHECK-DAG: %[[W:.+]] = tensor.expand_shape %arg1 {{.*}} into tensor<10x32x16xf32>
// CHECK: scf.for %[[N:.+]] = %c0 to %c10 step %c2
// CHECK: scf.for %[[M:.+]] = %c0 to %c256 step %c4
// CHECK: scf.for %[[K:.+]] = %c0 to %c32 step %c1 iter_args(%{{.+}} = %{{.+}}) -> (vector<4x2x16xf32>)
// CHECK: vector.transfer_read %[[X]][%[[M]], %[[K]], %c0]{{.*}} : tensor<256x32x16xf32>, vector<4x1x16xf32>
// CHECK: vector.transfer_read %[[W]][%[[N]], %[[K]], %c0]{{.*}} : tensor<10x32x16xf32>, vector<2x1x16xf32>

// The same with the weight compiled in: its transpose folds into a constant
// [512, 10], which becomes a constant [10, 512] read by the same kernel (it
// took the packed kernels' path, A's columns gathered element by element).
mithril.model @Narrow10Constant(data %x: tensor<256x64xf32>) -> (y: tensor<256x10xf32>) {
  %w = mithril.constant dense<0.5> : tensor<10x64xf32>
  %wt = mithril.transpose %w : (tensor<10x64xf32>) -> tensor<64x10xf32>
  %y = mithril.matmul %x, %wt : (tensor<256x64xf32>, tensor<64x10xf32>) -> tensor<256x10xf32>
  mithril.output %y : tensor<256x10xf32>
}

// CHECK-LABEL: func.func @Narrow10Constant(
// CHECK-NOT: linalg.transpose
// CHECK: tensor.expand_shape %arg0 {{.*}} into tensor<256x4x16xf32>
// CHECK: scf.for %{{.+}} = %c0 to %c10 step %c2
// CHECK: scf.for %{{.+}} = %c0 to %c256 step %c4
// CHECK: scf.for %{{.+}} = %c0 to %c4 step %c1 iter_args(%{{.+}} = %{{.+}}) -> (vector<4x2x16xf32>)

// The transfers are unrolled to 1-D: no stack buffers inside the loops.
// LOOPS-NOT: memref.alloca
