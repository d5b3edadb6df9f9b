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
