// RUN: mithril-opt %s --mithril-cpu-pipeline="target-cpu=znver4 threads=1 stop-after=bufferize" | FileCheck %s

// Two products of a batch by a matrix with results of one shape (two
// layers' projections): each zero-fills its own tiles. Their zero inits,
// alike, were once shared by CSE behind a collapse the schedule could not
// fuse through, and each product began with a copy of a whole zero buffer.
// The second product writes the caller's buffer through a collapsed view of
// it (mithril-reshaped-results): no copy of the result either.
// CHECK-LABEL: func.func @TwoLayers(
// CHECK-SAME: %[[OUT:[^:]+]]: memref<8x64x32xf32> {mithril.name = "y"})
// CHECK-NOT: memref.copy
// CHECK: memref.collapse_shape %[[OUT]] {{\[}}[0, 1], [2]] : memref<8x64x32xf32> into memref<512x32xf32>
// CHECK-NOT: memref.copy
// CHECK: return
mithril.model @TwoLayers(data %x: tensor<8x64x32xf32>, param %w1: tensor<32x32xf32>, param %w2: tensor<32x32xf32>) -> (y: tensor<8x64x32xf32>) {
  %h = mithril.matmul %x, %w1 : (tensor<8x64x32xf32>, tensor<32x32xf32>) -> tensor<8x64x32xf32>
  %r = mithril.relu %h : (tensor<8x64x32xf32>) -> tensor<8x64x32xf32>
  %y = mithril.matmul %r, %w2 : (tensor<8x64x32xf32>, tensor<32x32xf32>) -> tensor<8x64x32xf32>
  mithril.output %y : tensor<8x64x32xf32>
}
