// RUN: mithril-opt %s --convert-mithril-to-linalg | FileCheck %s
// RUN: mithril-opt %s --convert-mithril-to-linalg --mithril-cpu-strategy="vector-bits=512" --mithril-cpu-schedule | FileCheck %s --check-prefix=AVX512
// RUN: mithril-opt %s --convert-mithril-to-linalg --mithril-cpu-strategy="vector-bits=256" | FileCheck %s --check-prefix=AVX2
// RUN: mithril-opt %s --convert-mithril-to-linalg="threads=2" | FileCheck %s --check-prefix=BLOCKS
// RUN: mithril-opt %s --convert-mithril-to-linalg="threads=2" --mithril-cpu-strategy="vector-bits=512 threads=2" --mithril-cpu-schedule="vector-bits=512 threads=2" | FileCheck %s --check-prefix=INPLACE

// A first layer (one input channel) whose result is pooled 2x2 after its
// bias and ReLU is computed channels-last: [n, oh, ow, f] as a sum over (c,
// kh, kw) of the padded input at (n, c, oh + kh, ow + kw) times the weight
// as [c, kh, kw, f]. The pooling then takes the maximum of whole rows of
// channels, adds the bias and applies the ReLU, and only its result, a
// quarter of the convolution's, goes back to planes.
// CHECK-DAG: #[[INPUT:.+]] = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d4, d1 + d5, d2 + d6)>
// CHECK-DAG: #[[WEIGHT:.+]] = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d4, d5, d6, d3)>
// CHECK-LABEL: func.func @FirstLayer(
// CHECK: %[[PAD:.+]] = tensor.pad %arg0 low[0, 0, 1, 1] high[0, 0, 1, 1]
// CHECK: %[[W:.+]] = linalg.transpose ins(%arg1 : tensor<32x1x3x3xf32>) outs(%{{.+}} : tensor<1x3x3x32xf32>) permutation = [1, 2, 3, 0]
// CHECK: %[[Y:.+]] = linalg.generic {indexing_maps = [#[[INPUT]], #[[WEIGHT]], #{{.+}}], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%[[PAD]], %[[W]] : tensor<2x1x10x16xf32>, tensor<1x3x3x32xf32>) outs(%{{.+}} : tensor<2x8x14x32xf32>) attrs = {mithril.lowering_config = #mithril.lowering_config<kernel = conv_channels_last>}
// CHECK: %[[GRID:.+]] = tensor.expand_shape %[[Y]] {{\[}}[0], [1, 2], [3, 4], [5]] output_shape [2, 4, 2, 7, 2, 32]
// CHECK-COUNT-4: tensor.extract_slice %[[GRID]]
// CHECK: %[[POOLED:.+]] = linalg.generic {{.*}} outs(%{{.+}} : tensor<2x4x7x32xf32>)
// CHECK: arith.maximumf
// CHECK: arith.addf
// CHECK: arith.maximumf
// CHECK: %[[ROWS:.+]] = tensor.collapse_shape %[[POOLED]] {{\[}}[0], [1, 2], [3]] : tensor<2x4x7x32xf32> into tensor<2x28x32xf32>
// CHECK: linalg.transpose ins(%[[ROWS]] : tensor<2x28x32xf32>) outs(%{{.+}} : tensor<2x32x28xf32>) permutation = [0, 2, 1]

// With AVX-512, 7 output columns x 32 channels (two registers each)
// accumulate in registers: each step broadcasts 7 input values against a
// vector of 32 weights. With AVX2, whose 16 registers hold fewer, 7 columns
// x one register of 8 channels (two registers each would leave 2 columns,
// the largest divisor of the row's 14 under 6).
// AVX512-LABEL: func.func @FirstLayer(
// AVX512: scf.for %{{.+}} = %c0 to %c14 step %c7
// AVX512: scf.for {{.+}} -> (vector<7x32xf32>)
// AVX512: vector.transfer_read %{{.+}} : tensor<2x1x10x16xf32>, vector<7xf32>
// AVX512: vector.broadcast %{{.+}} : vector<7x1xf32> to vector<7x32xf32>
// AVX512: vector.transfer_read %{{.+}} : tensor<1x3x3x32xf32>, vector<32xf32>
// AVX512: vector.transfer_write %{{.+}} : vector<7x32xf32>, tensor<1x1x7x32xf32>
// AVX2: kernel = conv_channels_last, register_tile = [1, 1, 7, 8, 1, 1, 1]
// For a CPU schedule (threads set), the rows are computed a few at a time
// (here the image's 8, whose result takes 14 KB) and pooled while they are
// in L1, into a scratch tensor the loops carry, in a loop over each thread's
// chunk of images (an scf.forall of two chunks). The schedule computes each
// pooled block in its slice of the chunk's result (mithril.in_place_blocks:
// empty-tensor elimination there).
// BLOCKS-LABEL: func.func @FirstLayer(
// BLOCKS: scf.forall (%{{.+}}) in (2) shared_outs
// BLOCKS: scf.for {{.*}} -> (tensor<1x4x7x32xf32>, tensor<1x8x14x32xf32>)
// BLOCKS: scf.for {{.*}} -> (tensor<1x4x7x32xf32>, tensor<1x8x14x32xf32>)
// BLOCKS: kernel = conv_channels_last
// BLOCKS: } {mithril.in_place_blocks}
// INPLACE-LABEL: func.func @FirstLayer(
// INPLACE: scf.forall (%{{.+}}) in (2) shared_outs(%[[SHARED:.+]] = %{{.+}})
// INPLACE-NEXT: %[[MINE:.+]] = tensor.extract_slice %[[SHARED]]
// INPLACE: scf.for {{.*}} iter_args(%{{.+}} = %[[MINE]]) -> (tensor<1x4x7x32xf32>)
// INPLACE: arith.maximumf {{.*}} : vector<1x1x7x32xf32>
mithril.model @FirstLayer(data %x: tensor<2x1x8x14xf32>, param %w: tensor<32x1x3x3xf32>, param %b: tensor<32xf32>) -> (y: tensor<2x32x4x7xf32>) {
  %c = mithril.conv2d %x, %w, %b {dilation = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, stride = array<i64: 1, 1>} : (tensor<2x1x8x14xf32>, tensor<32x1x3x3xf32>, tensor<32xf32>) -> tensor<2x32x8x14xf32>
  %r = mithril.relu %c : (tensor<2x32x8x14xf32>) -> tensor<2x32x8x14xf32>
  %y = mithril.max_pool2d %r {dilation = array<i64: 1, 1>, kernel_size = array<i64: 2, 2>, padding = array<i64: 0, 0, 0, 0>, stride = array<i64: 2, 2>} : (tensor<2x32x8x14xf32>) -> tensor<2x32x4x7xf32>
  mithril.output %y : tensor<2x32x4x7xf32>
}

// Many input channels go to Winograd's products where they pay (a batch
// matmul, channels-last under a pooling); output channels not in whole
// vectors of 16 keep the flat rows.
// CHECK-LABEL: func.func @ManyChannels(
// CHECK-NOT: conv_channels_last
// CHECK: linalg.batch_matmul
// CHECK-LABEL: func.func @FewOutputs(
// CHECK-NOT: conv_channels_last
// CHECK: kernel = conv_flat
mithril.model @ManyChannels(data %x: tensor<2x16x8x8xf32>, param %w: tensor<32x16x3x3xf32>) -> (y: tensor<2x32x4x4xf32>) {
  %c = mithril.conv2d %x, %w {dilation = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, stride = array<i64: 1, 1>} : (tensor<2x16x8x8xf32>, tensor<32x16x3x3xf32>) -> tensor<2x32x8x8xf32>
  %y = mithril.max_pool2d %c {dilation = array<i64: 1, 1>, kernel_size = array<i64: 2, 2>, padding = array<i64: 0, 0, 0, 0>, stride = array<i64: 2, 2>} : (tensor<2x32x8x8xf32>) -> tensor<2x32x4x4xf32>
  mithril.output %y : tensor<2x32x4x4xf32>
}
mithril.model @FewOutputs(data %x: tensor<2x1x8x8xf32>, param %w: tensor<12x1x3x3xf32>) -> (y: tensor<2x12x4x4xf32>) {
  %c = mithril.conv2d %x, %w {dilation = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, stride = array<i64: 1, 1>} : (tensor<2x1x8x8xf32>, tensor<12x1x3x3xf32>) -> tensor<2x12x8x8xf32>
  %y = mithril.max_pool2d %c {dilation = array<i64: 1, 1>, kernel_size = array<i64: 2, 2>, padding = array<i64: 0, 0, 0, 0>, stride = array<i64: 2, 2>} : (tensor<2x12x8x8xf32>) -> tensor<2x12x4x4xf32>
  mithril.output %y : tensor<2x12x4x4xf32>
}
