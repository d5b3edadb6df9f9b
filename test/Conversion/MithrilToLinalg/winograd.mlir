// RUN: mithril-opt %s -split-input-file --convert-mithril-to-linalg | FileCheck %s
// RUN: mithril-opt %s -split-input-file --convert-mithril-to-linalg="bf16-products=true" | FileCheck %s --check-prefix=BF16

// A stride-1 3x3 float32 convolution with 8+ input and 64+ output channels
// lowers by Winograd's F(2x2, 3x3): the 16 points of the transformed filter (one
// generic over [F, C]) stacked into [16, F, C, 1, 1], the input padded to
// whole 2x2 output blocks and split into its four parity planes, the 16
// points of each block's transformed input over [C, N, TH, TW] (2 x 3 x 3 =
// 18 tiles) stacked into [16, C, 32], zeros after the 18, one batch of
// 16 products on the flat convolution's register tiles (the point as the
// batch, a 1x1 kernel per point), the 2x2 outputs of each block from the
// 16 points, and those interleaved into [N, F, OH, OW]. The filter's taps
// are rows of channels: each filter's [C, 9] transposed to [9, C], each tap
// [F, C] a slice read with an identity map.
// CHECK-LABEL: func.func @Winograd(
// CHECK: %[[GROUPED:.+]] = tensor.collapse_shape %arg1 {{\[}}[0], [1], [2, 3]] : tensor<64x8x3x3xf32> into tensor<64x8x9xf32>
// CHECK: %[[TAPSLAST:.+]] = linalg.transpose ins(%[[GROUPED]] : tensor<64x8x9xf32>) outs(%{{.+}} : tensor<64x9x8xf32>) permutation = [0, 2, 1]
// CHECK: %[[TAPS:.+]] = tensor.expand_shape %[[TAPSLAST]] {{\[}}[0], [1, 2], [3]] output_shape [64, 3, 3, 8]
// CHECK: %[[TAP0:.+]] = tensor.extract_slice %[[TAPS]][0, 0, 0, 0] [64, 1, 1, 8] [1, 1, 1, 1] : tensor<64x3x3x8xf32> to tensor<64x8xf32>
// CHECK: %[[TAP8:.+]] = tensor.extract_slice %[[TAPS]][0, 2, 2, 0] [64, 1, 1, 8] [1, 1, 1, 1] : tensor<64x3x3x8xf32> to tensor<64x8xf32>
// CHECK: %[[U:.+]]:16 = linalg.generic {indexing_maps = [#[[ID:.+]], #[[ID]], #[[ID]], #[[ID]], #[[ID]], #[[ID]], #[[ID]], #[[ID]], #[[ID]], #[[ID]],{{.*}} iterator_types = ["parallel", "parallel"]} ins(%[[TAP0]], {{.*}}, %[[TAP8]] : {{.*}}) outs({{.*}}) {
// CHECK: } -> (tensor<64x8xf32>,
// CHECK: tensor.insert_slice %[[U]]#0 into %{{.+}}[0, 0, 0] [1, 64, 8] [1, 1, 1] : tensor<64x8xf32> into tensor<16x64x8xf32>
// CHECK: %[[US:.+]] = tensor.insert_slice %[[U]]#15 into %{{.+}}[15, 0, 0] [1, 64, 8]
// CHECK: %[[FILTERS:.+]] = tensor.expand_shape %[[US]] {{\[}}[0], [1], [2, 3, 4]] output_shape [16, 64, 8, 1, 1]
// CHECK: %[[XP:.+]] = tensor.pad %arg0 low[0, 0, 1, 1] high[0, 0, 1, 1]
// CHECK: %[[HALVES:.+]] = tensor.expand_shape %[[XP]] {{\[}}[0], [1], [2, 3], [4, 5]] output_shape [2, 8, 4, 2, 4, 2]
// CHECK: %[[PLANES:.+]] = linalg.transpose ins(%[[HALVES]] : tensor<2x8x4x2x4x2xf32>) outs(%{{.+}} : tensor<2x8x2x2x4x4xf32>) permutation = [0, 1, 3, 5, 2, 4]
// CHECK: tensor.extract_slice %[[PLANES]][0, 0, 0, 0, 0, 0] [2, 8, 1, 1, 3, 3]
// CHECK: tensor.extract_slice %[[PLANES]][0, 0, 1, 1, 1, 1] [2, 8, 1, 1, 3, 3]
// CHECK: %[[V:.+]]:16 = linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
// CHECK: } -> (tensor<8x2x3x3xf32>,
// CHECK: tensor.collapse_shape %[[V]]#0 {{\[}}[0], [1, 2, 3]] : tensor<8x2x3x3xf32> into tensor<8x18xf32>
// CHECK: %[[VS:.+]] = tensor.insert_slice %{{.+}} into %{{.+}}[15, 0, 0] [1, 8, 18] [1, 1, 1] : tensor<8x18xf32> into tensor<16x8x32xf32>
// CHECK: %[[TAIL:.+]] = linalg.fill ins(%{{.+}} : f32) outs(%{{.+}} : tensor<16x8x14xf32>)
// CHECK: %[[POINTS:.+]] = tensor.insert_slice %[[TAIL]] into %[[VS]][0, 0, 18] [16, 8, 14] [1, 1, 1] : tensor<16x8x14xf32> into tensor<16x8x32xf32>
// CHECK: %[[M:.+]] = linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%[[POINTS]], %[[FILTERS]] : tensor<16x8x32xf32>, tensor<16x64x8x1x1xf32>) outs(%{{.+}} : tensor<16x64x32xf32>) attrs = {mithril.lowering_config = #mithril.lowering_config<kernel = conv_flat>}
// CHECK: tensor.extract_slice %[[M]][0, 0, 0] [1, 64, 32] [1, 1, 1] : tensor<16x64x32xf32> to tensor<64x32xf32>
// CHECK: tensor.extract_slice %[[M]][15, 0, 0] [1, 64, 32] [1, 1, 1] : tensor<16x64x32xf32> to tensor<64x32xf32>
// CHECK: %[[Y:.+]]:4 = linalg.generic {{.*}} iterator_types = ["parallel", "parallel"]}
// CHECK: } -> (tensor<64x32xf32>, tensor<64x32xf32>, tensor<64x32xf32>, tensor<64x32xf32>)
// CHECK: %[[GRID:.+]] = linalg.generic {{.*}} outs(%{{.+}} : tensor<2x64x3x2x3x2xf32>)
// CHECK: linalg.index 3
// CHECK: linalg.index 5
// CHECK: tensor.collapse_shape %[[GRID]] {{\[}}[0], [1], [2, 3], [4, 5]] : tensor<2x64x3x2x3x2xf32> into tensor<2x64x6x6xf32>
mithril.model @Winograd(data %x: tensor<2x8x6x6xf32>, param %w: tensor<64x8x3x3xf32>) -> (y: tensor<2x64x6x6xf32>) {
  %y = mithril.conv2d %x, %w {dilation = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, stride = array<i64: 1, 1>} : (tensor<2x8x6x6xf32>, tensor<64x8x3x3xf32>) -> tensor<2x64x6x6xf32>
  mithril.output %y : tensor<2x64x6x6xf32>
}

// -----

// A 2x2 max pooling of stride 2 that alone reads the convolution through a
// ReLU is computed from each block's outputs, max(relu(y + bias)) (both
// commute with max): no interleaved outputs, no pooling op. Pooled, the
// convolution runs channels-last: the input read as [N, H, W, C] (a copy
// that mithril-fuse-elementwise cancels where the input was channels-last),
// padded and split into parity rows whose blocks' elements are vectors of
// channels, the 16 products one batch matmul [tiles, C] x [C, F], and the
// pooled [tiles, F] transposed to NCHW.
// The filter's taps are read as rows of channels: one 2-D transpose of the
// weight [F, C * 9] (16 x 16 blocks in registers), each tap [C, F] a slice of
// it, and the transform's 16 points one generic over [C, F] whose inputs are
// all identity maps (at constant positions of [F, C, 3, 3], 9 strided reads
// per element, left scalar with AVX2).
// CHECK-LABEL: func.func @WinogradPooled(
// CHECK: %[[FLAT:.+]] = tensor.collapse_shape %arg1 {{\[}}[0], [1, 2, 3]] : tensor<16x8x3x3xf32> into tensor<16x72xf32>
// CHECK: %[[TAPSLAST:.+]] = linalg.transpose ins(%[[FLAT]] : tensor<16x72xf32>) outs(%{{.+}} : tensor<72x16xf32>) permutation = [1, 0]
// CHECK: %[[TAPS:.+]] = tensor.expand_shape %[[TAPSLAST]] {{\[}}[0, 1, 2], [3]] output_shape [8, 3, 3, 16]
// CHECK: %[[TAP0:.+]] = tensor.extract_slice %[[TAPS]][0, 0, 0, 0] [8, 1, 1, 16] [1, 1, 1, 1] : tensor<8x3x3x16xf32> to tensor<8x16xf32>
// CHECK: %[[TAP8:.+]] = tensor.extract_slice %[[TAPS]][0, 2, 2, 0] [8, 1, 1, 16] [1, 1, 1, 1] : tensor<8x3x3x16xf32> to tensor<8x16xf32>
// CHECK: linalg.generic {indexing_maps = [#[[ID:.+]], #[[ID]], #[[ID]], #[[ID]], #[[ID]], #[[ID]], #[[ID]], #[[ID]], #[[ID]], #[[ID]],{{.*}} ins(%[[TAP0]], {{.*}}, %[[TAP8]] : {{.*}}) outs({{.*}}) {
// CHECK: %[[CL:.+]] = linalg.generic {{.*}} ins(%arg0 : tensor<2x8x6x6xf32>) outs(%{{.+}} : tensor<2x6x6x8xf32>)
// CHECK: %[[PAD:.+]] = tensor.pad %[[CL]] low[0, 1, 1, 0] high[0, 1, 1, 0]
// CHECK: %[[ROWS:.+]] = tensor.expand_shape %[[PAD]] {{\[}}[0], [1, 2], [3, 4], [5]] output_shape [2, 4, 2, 4, 2, 8]
// CHECK-COUNT-16: tensor.extract_slice %[[ROWS]]{{.*}} to tensor<2x3x3x8xf32>
// CHECK: %[[M:.+]] = linalg.batch_matmul ins(%{{.+}}, %{{.+}} : tensor<16x18x8xf32>, tensor<16x8x16xf32>) outs(%{{.+}} : tensor<16x18x16xf32>)
// CHECK: %[[P:.+]] = linalg.generic {{.*}} ins({{.*}}, %arg2 : {{.*}}, tensor<16xf32>) outs(%{{.+}} : tensor<18x16xf32>)
// CHECK-COUNT-3: arith.maximumf
// CHECK: arith.addf
// CHECK: arith.maximumf
// CHECK: } -> tensor<18x16xf32>
// CHECK: %[[G:.+]] = tensor.expand_shape %[[P]] {{\[}}[0, 1], [2]] output_shape [2, 9, 16]
// CHECK: %[[T:.+]] = linalg.transpose ins(%[[G]] : tensor<2x9x16xf32>) outs(%{{.+}} : tensor<2x16x9xf32>) permutation = [0, 2, 1]
// CHECK: %[[Y:.+]] = tensor.expand_shape %[[T]] {{\[}}[0], [1], [2, 3]] output_shape [2, 16, 3, 3]
// CHECK-NEXT: return %[[Y]]
mithril.model @WinogradPooled(data %x: tensor<2x8x6x6xf32>, param %w: tensor<16x8x3x3xf32>, param %b: tensor<16xf32>) -> (y: tensor<2x16x3x3xf32>) {
  %c = mithril.conv2d %x, %w, %b {dilation = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, stride = array<i64: 1, 1>} : (tensor<2x8x6x6xf32>, tensor<16x8x3x3xf32>, tensor<16xf32>) -> tensor<2x16x6x6xf32>
  %r = mithril.relu %c : (tensor<2x16x6x6xf32>) -> tensor<2x16x6x6xf32>
  %y = mithril.max_pool2d %r {kernel_size = array<i64: 2, 2>, stride = array<i64: 2, 2>, padding = array<i64: 0, 0, 0, 0>, dilation = array<i64: 1, 1>} : (tensor<2x16x6x6xf32>) -> tensor<2x16x3x3xf32>
  mithril.output %y : tensor<2x16x3x3xf32>
}

// -----

// Mixed precision rounds the convolution's result to bf16 (a cast there and
// back) before the ReLU, and the ReLU's (exact, dropped): each block rounds
// after its bias, before the ReLU; rounding is monotone, so the pooling of the
// rounded values is the rounded pooling. The casts and the pooling go.
// CHECK-LABEL: func.func @WinogradPooledRounded(
// CHECK: linalg.generic {{.*}} outs(%{{.+}} : tensor<18x16xf32>)
// CHECK-COUNT-3: arith.maximumf
// CHECK: %[[SUM:.+]] = arith.addf
// CHECK: %[[NARROW:.+]] = arith.truncf %[[SUM]] : f32 to bf16
// CHECK: %[[WIDE:.+]] = arith.extf %[[NARROW]] : bf16 to f32
// CHECK: arith.maximumf %[[WIDE]]
// CHECK: } -> tensor<18x16xf32>
// CHECK-NOT: mithril.
// CHECK: linalg.transpose
mithril.model @WinogradPooledRounded(data %x: tensor<2x8x6x6xf32>, param %w: tensor<16x8x3x3xf32>, param %b: tensor<16xf32>) -> (y: tensor<2x16x3x3xf32>) {
  %c = mithril.conv2d %x, %w, %b {dilation = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, stride = array<i64: 1, 1>} : (tensor<2x8x6x6xf32>, tensor<16x8x3x3xf32>, tensor<16xf32>) -> tensor<2x16x6x6xf32>
  %cn = mithril.cast %c {element_type = bf16} : (tensor<2x16x6x6xf32>) -> tensor<2x16x6x6xbf16>
  %cw = mithril.cast %cn {element_type = f32} : (tensor<2x16x6x6xbf16>) -> tensor<2x16x6x6xf32>
  %r = mithril.relu %cw : (tensor<2x16x6x6xf32>) -> tensor<2x16x6x6xf32>
  %rn = mithril.cast %r {element_type = bf16} : (tensor<2x16x6x6xf32>) -> tensor<2x16x6x6xbf16>
  %rw = mithril.cast %rn {element_type = f32} : (tensor<2x16x6x6xbf16>) -> tensor<2x16x6x6xf32>
  %y = mithril.max_pool2d %rw {kernel_size = array<i64: 2, 2>, stride = array<i64: 2, 2>, padding = array<i64: 0, 0, 0, 0>, dilation = array<i64: 1, 1>} : (tensor<2x16x6x6xf32>) -> tensor<2x16x3x3xf32>
  mithril.output %y : tensor<2x16x3x3xf32>
}

// -----

// Where the transforms would not pay (fewer than 8 input channels, or fewer
// than 64 output channels and no pooling to fold in) or their roundings would
// show (float64), the convolution stays on flat rows.
// CHECK-LABEL: func.func @FewChannels(
// CHECK-NOT: linalg.transpose
// CHECK: linalg.generic {{.*}} ins(%{{.+}}, %arg1 : tensor<2x4x{{[0-9]+}}xf32>, tensor<16x4x3x3xf32>) {{.*}}lowering_config<kernel = conv_flat>
// CHECK-LABEL: func.func @FewOutputs(
// CHECK-NOT: linalg.transpose
// CHECK: linalg.generic {{.*}} ins(%{{.+}}, %arg1 : tensor<2x64x{{[0-9]+}}xf32>, tensor<32x64x3x3xf32>) {{.*}}lowering_config<kernel = conv_flat>
// CHECK-LABEL: func.func @Float64(
// CHECK-NOT: linalg.transpose
// CHECK: linalg.generic {{.*}} ins(%{{.+}}, %arg1 : tensor<2x8x{{[0-9]+}}xf64>, tensor<16x8x3x3xf64>) {{.*}}lowering_config<kernel = conv_flat>
mithril.model @FewChannels(data %x: tensor<2x4x6x6xf32>, param %w: tensor<16x4x3x3xf32>) -> (y: tensor<2x16x6x6xf32>) {
  %y = mithril.conv2d %x, %w {dilation = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, stride = array<i64: 1, 1>} : (tensor<2x4x6x6xf32>, tensor<16x4x3x3xf32>) -> tensor<2x16x6x6xf32>
  mithril.output %y : tensor<2x16x6x6xf32>
}
mithril.model @FewOutputs(data %x: tensor<2x64x6x6xf32>, param %w: tensor<32x64x3x3xf32>) -> (y: tensor<2x32x6x6xf32>) {
  %y = mithril.conv2d %x, %w {dilation = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, stride = array<i64: 1, 1>} : (tensor<2x64x6x6xf32>, tensor<32x64x3x3xf32>) -> tensor<2x32x6x6xf32>
  mithril.output %y : tensor<2x32x6x6xf32>
}
mithril.model @Float64(data %x: tensor<2x8x6x6xf64>, param %w: tensor<16x8x3x3xf64>) -> (y: tensor<2x16x6x6xf64>) {
  %y = mithril.conv2d %x, %w {dilation = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, stride = array<i64: 1, 1>} : (tensor<2x8x6x6xf64>, tensor<16x8x3x3xf64>) -> tensor<2x16x6x6xf64>
  mithril.output %y : tensor<2x16x6x6xf64>
}

// -----

// With bf16-products (a model computed in bf16, for a CPU with bf16 dot
// products) the transforms round their points to bf16, the filter's viewed
// as pairs of channels [16, F, C / 2, 2], the input's stacked into a panel of
// 32 columns and interleaved by channel pairs, [16, panels, C / 2, 32, 2], and
// the products are one batch of packed dot-product tiles with f32 sums.
// CHECK-LABEL: func.func @WinogradBF16(
// CHECK: lowering_config<kernel = conv_flat>
// BF16-LABEL: func.func @WinogradBF16(
// BF16: linalg.generic
// BF16-COUNT-16: arith.truncf %{{.+}} : f32 to bf16
// BF16: } -> (tensor<16x8xbf16>,
// BF16: %[[U:.+]] = tensor.expand_shape %{{.+}} {{\[}}[0], [1], [2, 3]] output_shape [16, 16, 4, 2] : tensor<16x16x8xbf16> into tensor<16x16x4x2xbf16>
// BF16-COUNT-16: arith.truncf %{{.+}} : f32 to bf16
// BF16: %[[TAIL:.+]] = linalg.fill ins(%{{.+}} : bf16) outs(%{{.+}} : tensor<16x8x14xbf16>)
// BF16: tensor.insert_slice %[[TAIL]] into %{{.+}}[0, 0, 18] [16, 8, 14] [1, 1, 1] : tensor<16x8x14xbf16> into tensor<16x8x32xbf16>
// BF16: %[[SPLIT:.+]] = tensor.expand_shape %{{.+}} output_shape [16, 4, 2, 1, 32] : tensor<16x8x32xbf16> into tensor<16x4x2x1x32xbf16>
// BF16: %[[V:.+]] = linalg.transpose ins(%[[SPLIT]] : {{.*}}) outs(%{{.+}} : tensor<16x1x4x32x2xbf16>) permutation = [0, 3, 1, 4, 2]
// BF16: %[[M:.+]] = linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]} ins(%[[U]], %[[V]] : tensor<16x16x4x2xbf16>, tensor<16x1x4x32x2xbf16>) outs(%{{.+}} : tensor<16x16x1x32xf32>) attrs = {mithril.lowering_config = #mithril.lowering_config<kernel = packed_matmul>}
// BF16: arith.extf
// BF16: arith.extf
// BF16: arith.mulf
// BF16: arith.addf
// BF16: tensor.collapse_shape %[[M]] {{\[}}[0], [1], [2, 3]] : tensor<16x16x1x32xf32> into tensor<16x16x32xf32>
mithril.model @WinogradBF16(data %x: tensor<2x8x6x6xf32>, param %w: tensor<16x8x3x3xf32>, param %b: tensor<16xf32>) -> (y: tensor<2x16x6x6xf32>) {
  %c = mithril.conv2d %x, %w, %b {dilation = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, stride = array<i64: 1, 1>} : (tensor<2x8x6x6xf32>, tensor<16x8x3x3xf32>, tensor<16xf32>) -> tensor<2x16x6x6xf32>
  mithril.output %c : tensor<2x16x6x6xf32>
}

// -----

// With bf16-products and output channels in whole panels of 32, the
// unpooled convolution runs channels-last: the points [16, tiles, C] are the
// dot-product tiles' rows (channel pairs read in place, [16, tiles, C / 2,
// 2]), only the filters are packed into pairs, and the four outputs of each
// tile are interleaved channels-last, [N, TH, 2, TW, 2, F], then transposed
// to planes.
// BF16-LABEL: func.func @WinogradBF16ChannelsLast(
// BF16: %[[U:.+]] = linalg.transpose ins(%{{.+}} : tensor<16x4x2x1x32xbf16>) outs(%{{.+}} : tensor<16x1x4x32x2xbf16>) permutation = [0, 3, 1, 4, 2]
// BF16: %[[V:.+]] = tensor.expand_shape %{{.+}} {{\[}}[0], [1], [2, 3]] output_shape [16, 18, 4, 2] : tensor<16x18x8xbf16> into tensor<16x18x4x2xbf16>
// BF16: linalg.generic {{.*}} ins(%[[V]], %[[U]] : tensor<16x18x4x2xbf16>, tensor<16x1x4x32x2xbf16>) outs(%{{.+}} : tensor<16x18x1x32xf32>) attrs = {mithril.lowering_config = #mithril.lowering_config<kernel = packed_matmul>}
// BF16: } -> tensor<2x3x2x3x2x32xf32>
// BF16: linalg.transpose ins(%{{.+}} : tensor<2x36x32xf32>) outs(%{{.+}} : tensor<2x32x36xf32>) permutation = [0, 2, 1]
mithril.model @WinogradBF16ChannelsLast(data %x: tensor<2x8x6x6xf32>, param %w: tensor<32x8x3x3xf32>, param %b: tensor<32xf32>) -> (y: tensor<2x32x6x6xf32>) {
  %c = mithril.conv2d %x, %w, %b {dilation = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, stride = array<i64: 1, 1>} : (tensor<2x8x6x6xf32>, tensor<32x8x3x3xf32>, tensor<32xf32>) -> tensor<2x32x6x6xf32>
  mithril.output %c : tensor<2x32x6x6xf32>
}
