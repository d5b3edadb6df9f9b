// RUN: mithril-opt %s --convert-mithril-to-linalg="bf16-tiles=true" | FileCheck %s
// RUN: mithril-opt %s --convert-mithril-to-linalg="bf16-tiles=true" --mithril-cpu-strategy="vector-bits=512" --mithril-cpu-schedule | FileCheck %s --check-prefix=TILES

// A bf16 3x3 convolution for AMX tiles (32 channels, 16 outputs, rows in
// 16s) is one bf16 product of the input's windows. The windows come from one
// generic reading the channels-last input at (n, y + i, x + j, c), whose
// register tile is one row of channels: each window row is written whole,
// in order.
// The input goes channels-last in bf16 first, then is padded.
// CHECK-LABEL: func.func @TileConv(
// CHECK: %[[CL:.+]] = linalg.generic {{.*}} ins(%arg0 : tensor<2x32x4x4xf32>) outs(%{{.+}} : tensor<2x4x4x32xbf16>)
// CHECK: arith.truncf %{{.+}} : f32 to bf16
// CHECK: %[[PAD:.+]] = tensor.pad %[[CL]] low[0, 1, 1, 0] high[0, 1, 1, 0]
// CHECK: %[[WIN:.+]] = linalg.generic {indexing_maps = [#[[READ:.+]], #{{.+}}], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%[[PAD]] : tensor<2x6x6x32xbf16>) outs(%{{.+}} : tensor<2x4x4x3x3x32xbf16>) attrs = {mithril.lowering_config = #mithril.lowering_config<kernel = default, register_tile = [1, 1, 1, 1, 1, 32]>}
// CHECK: %[[ROWS:.+]] = tensor.collapse_shape %[[WIN]] {{\[}}[0, 1, 2], [3, 4, 5]] : tensor<2x4x4x3x3x32xbf16> into tensor<32x288xbf16>
// CHECK: linalg.matmul ins(%[[ROWS]], %{{.+}} : tensor<32x288xbf16>, tensor<288x16xbf16>)

// The schedule drops the window tile's unit loops, and the copy of a row of
// channels is one vector read and write.
// TILES-LABEL: func.func @TileConv(
// TILES: vector.transfer_read %{{.+}} : tensor<{{.+}}x32xbf16>, vector<32xbf16>
// TILES-NEXT: vector.transfer_write %{{.+}} : vector<32xbf16>, tensor<1x1x1x1x1x32xbf16>
mithril.model @TileConv(data %x: tensor<2x32x4x4xf32>, param %w: tensor<16x32x3x3xf32>) -> (y: tensor<2x16x4x4xf32>) {
  %y = mithril.conv2d %x, %w {dilation = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, stride = array<i64: 1, 1>} : (tensor<2x32x4x4xf32>, tensor<16x32x3x3xf32>) -> tensor<2x16x4x4xf32>
  mithril.output %y : tensor<2x16x4x4xf32>
}

// An input that mixed precision rounded to bf16 and widened again (a
// pooling's result before the next convolution) is read as the bf16 value:
// no second rounding, no pass over the float32 round trip.
// CHECK-LABEL: func.func @RoundTripInput(
// CHECK: %[[DOWN:.+]] = linalg.generic {{.*}} ins(%arg0 : tensor<2x32x4x4xf32>) outs(%{{.+}} : tensor<2x32x4x4xbf16>)
// CHECK: linalg.generic {{.*}} ins(%[[DOWN]] : tensor<2x32x4x4xbf16>) outs(%{{.+}} : tensor<2x4x4x32xbf16>)
// CHECK-NEXT: ^bb0(%[[IN:.+]]: bf16, %{{.+}}: bf16):
// CHECK-NEXT: linalg.yield %[[IN]] : bf16
mithril.model @RoundTripInput(data %x: tensor<2x32x4x4xf32>, param %w: tensor<16x32x3x3xf32>) -> (y: tensor<2x16x4x4xf32>) {
  %down = mithril.cast %x {element_type = bf16} : (tensor<2x32x4x4xf32>) -> tensor<2x32x4x4xbf16>
  %up = mithril.cast %down {element_type = f32} : (tensor<2x32x4x4xbf16>) -> tensor<2x32x4x4xf32>
  %y = mithril.conv2d %up, %w {dilation = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, stride = array<i64: 1, 1>} : (tensor<2x32x4x4xf32>, tensor<16x32x3x3xf32>) -> tensor<2x16x4x4xf32>
  mithril.output %y : tensor<2x16x4x4xf32>
}

// Rows of 14 output columns (at least three quarters of a tile of 16) read
// their windows where they lie: the input, channels-last in pairs, gets two
// more columns of zeros on the right; each output row is 16 columns, the
// last two dropped. The weight goes to [kh, kw, c / 2, f, 2], AMX's B
// layout. Rows of 4 (the cases above) copy their windows.
// CHECK-LABEL: func.func @InPlaceWindows(
// CHECK-NOT: linalg.matmul
// CHECK: tensor.pad %{{.+}} low[0, 1, 1, 0] high[0, 1, 3, 0]
// CHECK: tensor<2x6x14x32xbf16> to tensor<2x8x18x32xbf16>
// CHECK: %[[PAIRS:.+]] = tensor.expand_shape %{{.+}} {{\[}}[0], [1], [2], [3, 4]] output_shape [2, 8, 18, 16, 2]
// CHECK: %[[PACKED:.+]] = linalg.transpose ins(%{{.+}} : tensor<3x3x16x2x32xbf16>) outs(%{{.+}} : tensor<3x3x16x32x2xbf16>) permutation = [0, 1, 2, 4, 3]
// CHECK: %[[SUMS:.+]] = linalg.generic {{.*}} ins(%[[PAIRS]], %[[PACKED]] : tensor<2x8x18x16x2xbf16>, tensor<3x3x16x32x2xbf16>) outs(%{{.+}} : tensor<2x6x16x32xf32>) attrs = {mithril.lowering_config = #mithril.lowering_config<kernel = tile_conv>}
// CHECK: tensor.extract_slice %[[SUMS]][0, 0, 0, 0] [2, 6, 14, 32] [1, 1, 1, 1]
// Each tile: two output rows x 16 columns x 32 channels over the whole
// reduction, read from four input rows, starting from zeros.
// TILES-LABEL: func.func @InPlaceWindows(
// TILES: linalg.generic {{.*}} ins(%{{.+}}, %{{.+}} : tensor<1x4x18x16x2xbf16>, tensor<3x3x16x32x2xbf16>) outs(%{{.+}} : tensor<1x2x16x32xf32>) attrs = {mithril.lowering_config = #mithril.lowering_config<kernel = tile_conv, register_tile = [1, 2, 16, 32, 0, 0, 0, 0]>, mithril.zero_accumulator}
mithril.model @InPlaceWindows(data %x: tensor<2x32x6x14xf32>, param %w: tensor<32x32x3x3xf32>) -> (y: tensor<2x32x6x14xf32>) {
  %y = mithril.conv2d %x, %w {dilation = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, stride = array<i64: 1, 1>} : (tensor<2x32x6x14xf32>, tensor<32x32x3x3xf32>) -> tensor<2x32x6x14xf32>
  mithril.output %y : tensor<2x32x6x14xf32>
}
