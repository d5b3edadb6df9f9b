// RUN: mithril-opt %s -mithril-quantize-int8 | FileCheck %s

// A convolution of a weight with windows of at least 32 elements becomes the
// int8 product of its windows: the input zero-padded first (the padding
// takes the zero point's level), quantized as a product's activation, its
// bytes moved channels last and gathered by one strided slice per kernel
// position into rows [N OH OW, KH KW C]; the weight read as the [KH KW C, F]
// matrix, per output channel; the result back to [N, F, OH, OW] by a swap
// of the last two dimensions of [N, OH OW, F], plus the bias.
// CHECK-LABEL: mithril.model @Conv
// CHECK: %[[WL:.*]] = transpose %{{.*}} {permutation = array<i64: 0, 2, 3, 1>} : (tensor<8x4x3x3xf32>) -> tensor<8x3x3x4xf32>
// CHECK: reshape %[[WL]] {shape = array<i64: 8, 36>}
// CHECK: %[[PAD:.*]] = pad %x {pad_width = array<i64: 0, 0, 0, 0, 1, 1, 1, 1>} : (tensor<2x4x6x6xf32>) -> tensor<2x4x8x8xf32>
// CHECK: min %[[PAD]]
// CHECK: %[[BYTES:.*]] = cast %{{.*}} {element_type = i8} : (tensor<2x4x8x8xf32>) -> tensor<2x4x8x8xi8>
// CHECK: %[[NHWC:.*]] = transpose %[[BYTES]] {permutation = array<i64: 0, 2, 3, 1>} : (tensor<2x4x8x8xi8>) -> tensor<2x8x8x4xi8>
// CHECK-COUNT-9: slice %[[NHWC]]
// CHECK: %[[WINDOWS:.*]] = concat {{.*}} {axis = 3 : i64} : {{.*}} -> tensor<2x6x6x9x4xi8>
// CHECK: %[[ROWS:.*]] = reshape %[[WINDOWS]] {shape = array<i64: -1, 36>} : (tensor<2x6x6x9x4xi8>) -> tensor<72x36xi8>
// CHECK: %[[ROWS32:.*]] = cast %[[ROWS]] {element_type = i32} : (tensor<72x36xi8>) -> tensor<72x36xi32>
// CHECK: matmul %[[ROWS32]], %{{.*}} : (tensor<72x36xi32>, tensor<36x8xi32>) -> tensor<72x8xi32>
// CHECK: %[[GRID:.*]] = reshape %{{.*}} {shape = array<i64: -1, 36, 8>} : (tensor<72x8xf32>) -> tensor<2x36x8xf32>
// CHECK: %[[SWAP:.*]] = transpose %[[GRID]] {permutation = array<i64: 0, 2, 1>} : (tensor<2x36x8xf32>) -> tensor<2x8x36xf32>
// CHECK: %[[NCHW:.*]] = reshape %[[SWAP]] {shape = array<i64: -1, 8, 6, 6>} : (tensor<2x8x36xf32>) -> tensor<2x8x6x6xf32>
// CHECK: %[[BIAS:.*]] = reshape %b {shape = array<i64: 1, 8, 1, 1>}
// CHECK: %[[Y:.*]] = add %[[NCHW]], %[[BIAS]]
// CHECK: output %[[Y]]
mithril.model @Conv(data %x: tensor<2x4x6x6xf32>, param %w: tensor<8x4x3x3xf32>, param %b: tensor<8xf32>) -> (y: tensor<2x8x6x6xf32>) {
  %0 = mithril.conv2d %x, %w, %b {stride = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilation = array<i64: 1, 1>} : (tensor<2x4x6x6xf32>, tensor<8x4x3x3xf32>, tensor<8xf32>) -> tensor<2x8x6x6xf32>
  mithril.output %0 : tensor<2x8x6x6xf32>
}

// A first layer's window of 9 inputs (one channel) stays float32, as does a
// grouped convolution and one of data.
// CHECK-LABEL: mithril.model @Kept
// CHECK-NOT: i8
// CHECK-COUNT-3: conv2d
mithril.model @Kept(data %x: tensor<2x1x6x6xf32>, param %w: tensor<8x1x3x3xf32>, param %g: tensor<8x4x3x3xf32>, data %d: tensor<8x8x3x3xf32>) -> (y: tensor<2x8x6x6xf32>) {
  %0 = mithril.conv2d %x, %w {stride = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilation = array<i64: 1, 1>} : (tensor<2x1x6x6xf32>, tensor<8x1x3x3xf32>) -> tensor<2x8x6x6xf32>
  %1 = mithril.conv2d %0, %g {stride = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilation = array<i64: 1, 1>, groups = 2 : i64} : (tensor<2x8x6x6xf32>, tensor<8x4x3x3xf32>) -> tensor<2x8x6x6xf32>
  %2 = mithril.conv2d %1, %d {stride = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilation = array<i64: 1, 1>} : (tensor<2x8x6x6xf32>, tensor<8x8x3x3xf32>) -> tensor<2x8x6x6xf32>
  mithril.output %2 : tensor<2x8x6x6xf32>
}

// Calibration sees the convolution's input (unpadded) in the same order.
// RUN: mithril-opt %s -mithril-quantize-int8=observe | FileCheck %s --check-prefix=OBSERVE
// OBSERVE-LABEL: mithril.model @Conv
// OBSERVE-SAME: "calibration:0": tensor<2xf32>
// OBSERVE: min %x : (tensor<2x4x6x6xf32>) -> tensor<f32>
// OBSERVE: conv2d

// A 1-D convolution is the 2-D one of height 1: [N, C, L] viewed as
// [N, C, 1, L], the weight [F, C, K] read as the [K C, F] matrix.
// CHECK-LABEL: mithril.model @Conv1D
// CHECK: transpose %w {permutation = array<i64: 0, 2, 1>} : (tensor<8x8x5xf32>) -> tensor<8x5x8xf32>
// CHECK: reshape %x {shape = array<i64: -1, 8, 1, 20>} : (tensor<2x8x20xf32>) -> tensor<2x8x1x20xf32>
// CHECK: pad %{{.*}} {pad_width = array<i64: 0, 0, 0, 0, 0, 0, 2, 2>}
// CHECK-COUNT-5: slice
// CHECK: matmul %{{.*}}, %{{.*}} : (tensor<40x40xi32>, tensor<40x8xi32>) -> tensor<40x8xi32>
// CHECK: transpose %{{.*}} {permutation = array<i64: 0, 2, 1>} : (tensor<2x20x8xf32>) -> tensor<2x8x20xf32>
// CHECK-NOT: conv1d
mithril.model @Conv1D(data %x: tensor<2x8x20xf32>, param %w: tensor<8x8x5xf32>) -> (y: tensor<2x8x20xf32>) {
  %0 = mithril.conv1d %x, %w {stride = array<i64: 1>, padding = array<i64: 2, 2>, dilation = array<i64: 1>} : (tensor<2x8x20xf32>, tensor<8x8x5xf32>) -> tensor<2x8x20xf32>
  mithril.output %0 : tensor<2x8x20xf32>
}
