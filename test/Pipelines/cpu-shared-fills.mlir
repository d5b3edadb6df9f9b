// Two products of the same output shape start from zero fills that CSE
// merges into one. The schedule gives the second its own fill, into an
// alloc_tensor (which CSE leaves apart), so that bufferization writes each
// product in place: before, the shared fill was copied (a 256 x 512 output:
// 512 KiB written and read again per layer). An 8-bit product whose
// reduction is one block then writes its first values without any fill.
// RUN: mithril-opt %s --mithril-cpu-pipeline="target-cpu=znver4 stop-after=fusion" | FileCheck %s --check-prefix=FUSION
// RUN: mithril-opt %s --mithril-cpu-pipeline="target-cpu=znver4 stop-after=bufferize" | FileCheck %s --check-prefix=BUF
// RUN: mithril-opt %s --mithril-cpu-pipeline="target-cpu=znver4 quantize=int8 stop-after=bufferize" | FileCheck %s --check-prefix=INT8

mithril.model @TwoLayers(data %x: tensor<256x512xf32>, param %w1: tensor<512x512xf32>, param %w2: tensor<512x512xf32>) -> (y: tensor<256x512xf32>) {
  %t1 = mithril.transpose %w1 : (tensor<512x512xf32>) -> tensor<512x512xf32>
  %h = mithril.matmul %x, %t1 : (tensor<256x512xf32>, tensor<512x512xf32>) -> tensor<256x512xf32>
  %r = mithril.relu %h : (tensor<256x512xf32>) -> tensor<256x512xf32>
  %t2 = mithril.transpose %w2 : (tensor<512x512xf32>) -> tensor<512x512xf32>
  %y = mithril.matmul %r, %t2 : (tensor<256x512xf32>, tensor<512x512xf32>) -> tensor<256x512xf32>
  mithril.output %y : tensor<256x512xf32>
}

// FUSION-LABEL: func.func @TwoLayers(
// FUSION-COUNT-1: bufferization.alloc_tensor() : tensor<256x512xf32>

// BUF-LABEL: func.func @TwoLayers(
// BUF-NOT: memref.copy
// BUF: return

// The offset products (-128 times each column's sum of the weight) are the
// first values written: no zero fill of the 256 x 512 sums, and no copy.
// INT8-LABEL: func.func @TwoLayers(
// INT8-NOT: memref.copy {{.*}} memref<256x512xi32>
// INT8-NOT: vector.transfer_write {{.*}} : vector<8x32xi32>, memref<256x512xi32>
// INT8: arith.muli {{.*}} : vector<1x8x32xi32>
// INT8-NOT: arith.subi {{.*}} : vector<1x8x32xi32>
// INT8: return
