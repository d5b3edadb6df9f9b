// RUN: mithril-opt %s --convert-mithril-to-linalg="threads=1" | FileCheck %s --check-prefix=ONE
// RUN: mithril-opt %s --convert-mithril-to-linalg="threads=2" | FileCheck %s --check-prefix=TWO
// RUN: mithril-opt %s --convert-mithril-to-linalg | FileCheck %s --check-prefix=WHOLE
// RUN: mithril-opt %s --convert-mithril-to-linalg="threads=1 bf16-products=true" | FileCheck %s --check-prefix=BF16

// For a CPU schedule (threads set), a pooled Winograd convolution computes
// its products and pooled output transform in blocks of tiles (here 128 tiles
// in blocks of 64 rows), so that a block's products [16, rows, F] stay in the
// cache for the transform that reads them: one loop over the blocks, or with
// two threads an scf.forall of two chunks of tiles, each a loop over its
// blocks (the tiles whose inputs that thread's share of the input transform
// wrote). Without threads (the GPU pipeline) the products stay one op.

// ONE-LABEL: func.func @Blocks(
// ONE-NOT: scf.forall
// ONE: %[[OUT:.+]] = tensor.empty() : tensor<128x32xf32>
// ONE: scf.for %[[ROW:.+]] = %{{.+}} to %c128 step %c64 iter_args(%[[ACC:.+]] = %[[OUT]]) -> (tensor<128x32xf32>)
// ONE: %[[ROWS:.+]] = tensor.extract_slice %{{.+}}[0, %{{.+}}, 0] [16, 64, 16] [1, 1, 1] : tensor<16x128x16xf32> to tensor<16x64x16xf32>
// ONE: linalg.batch_matmul ins(%[[ROWS]], %{{.+}} : tensor<16x64x16xf32>, tensor<16x16x32xf32>) outs(%{{.+}} : tensor<16x64x32xf32>)
// ONE: %[[P:.+]] = linalg.generic {{.*}} outs(%{{.+}} : tensor<64x32xf32>)
// ONE: tensor.insert_slice %[[P]] into %[[ACC]][%[[ROW]], 0] [64, 32] [1, 1]

// TWO-LABEL: func.func @Blocks(
// TWO: scf.forall (%[[FIRST:.+]]) = (0) to (128) step (64) shared_outs(%[[SHARED:.+]] = %{{.+}}) -> (tensor<128x32xf32>)
// TWO: %[[MINE:.+]] = tensor.extract_slice %[[SHARED]][%[[FIRST]], 0] [64, 32] [1, 1]
// TWO: %[[CHUNK:.+]] = scf.for %{{.+}} iter_args(%{{.+}} = %[[MINE]]) -> (tensor<64x32xf32>)
// TWO: linalg.batch_matmul
// TWO: scf.forall.in_parallel
// TWO-NEXT: tensor.parallel_insert_slice %[[CHUNK]] into %[[SHARED]][%[[FIRST]], 0] [64, 32] [1, 1]

// WHOLE-LABEL: func.func @Blocks(
// WHOLE-NOT: scf.for
// WHOLE: linalg.batch_matmul ins(%{{.+}}, %{{.+}} : tensor<16x128x16xf32>, tensor<16x16x32xf32>) outs(%{{.+}} : tensor<16x128x32xf32>)
// With bf16 products (32 output channels: one whole panel) the same blocks,
// channels-last: the points rounded to bf16 and stacked [16, tiles, C], each
// block's rows read as channel pairs in place, [16, rows, C / 2, 2], and only
// the filters packed into pairs, [16, F / 32, C / 2, 32, 2], once.
// BF16-LABEL: func.func @Blocks(
// BF16: %[[U:.+]] = linalg.transpose ins(%{{.+}} : tensor<16x8x2x1x32xbf16>) outs(%{{.+}} : tensor<16x1x8x32x2xbf16>) permutation = [0, 3, 1, 4, 2]
// BF16: tensor.empty() : tensor<16x128x16xbf16>
// BF16: scf.for %{{.+}} to %c128 step %c64
// BF16: %[[ROWS:.+]] = tensor.extract_slice %{{.+}}[0, %{{.+}}, 0] [16, 64, 16] [1, 1, 1] : tensor<16x128x16xbf16> to tensor<16x64x16xbf16>
// BF16: %[[PAIRS:.+]] = tensor.expand_shape %[[ROWS]] {{\[}}[0], [1], [2, 3]] output_shape [16, 64, 8, 2]
// BF16: linalg.generic {{.*}} ins(%[[PAIRS]], %[[U]] : tensor<16x64x8x2xbf16>, tensor<16x1x8x32x2xbf16>) outs(%{{.+}} : tensor<16x64x1x32xf32>) attrs = {mithril.lowering_config = #mithril.lowering_config<kernel = packed_matmul>}
// BF16-NOT: linalg.transpose {{.*}} tensor<16x128x16xbf16>
mithril.model @Blocks(data %x: tensor<2x16x16x16xf32>, param %w: tensor<32x16x3x3xf32>, param %b: tensor<32xf32>) -> (y: tensor<2x32x8x8xf32>) {
  %c = mithril.conv2d %x, %w, %b {dilation = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, stride = array<i64: 1, 1>} : (tensor<2x16x16x16xf32>, tensor<32x16x3x3xf32>, tensor<32xf32>) -> tensor<2x32x16x16xf32>
  %r = mithril.relu %c : (tensor<2x32x16x16xf32>) -> tensor<2x32x16x16xf32>
  %y = mithril.max_pool2d %r {kernel_size = array<i64: 2, 2>, stride = array<i64: 2, 2>, padding = array<i64: 0, 0, 0, 0>, dilation = array<i64: 1, 1>} : (tensor<2x32x16x16xf32>) -> tensor<2x32x8x8xf32>
  mithril.output %y : tensor<2x32x8x8xf32>
}
