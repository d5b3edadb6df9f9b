// Max pooling over non-overlapping 2x2 windows, with the ReLU before it fused
// in by elementwise fusion: a tile is one output row, 14 columns with their
// 2x2 windows read as they lie in memory (the tile iterates oh, kh, ow, kw),
// one transfer of 28 elements per input row, and reduced in registers: one shuffle per window position
// (the elements at that position of every window) and an elementwise max.
// RUN: mithril-opt %s --mithril-cpu-pipeline="vector-bits=512 stop-after=fusion" | FileCheck %s

mithril.model @ReluPool(data %x: tensor<2x4x28x28xf32>) -> (y: tensor<2x4x14x14xf32>) {
  %r = mithril.relu %x : (tensor<2x4x28x28xf32>) -> tensor<2x4x28x28xf32>
  %y = mithril.max_pool2d %r {kernel_size = array<i64: 2, 2>, stride = array<i64: 2, 2>, padding = array<i64: 0, 0, 0, 0>, dilation = array<i64: 1, 1>} : (tensor<2x4x28x28xf32>) -> tensor<2x4x14x14xf32>
  mithril.output %y : tensor<2x4x14x14xf32>
}

// CHECK-LABEL: func.func @ReluPool(
// The -inf fill of the output is fused into the tiles (and folds away).
// CHECK-NOT: linalg.fill
// CHECK: scf.for %{{.+}} = %c0 to %c14 step %c1
// CHECK-NOT: vector.transfer_read {{.*}} : tensor<2x4x14x14xf32>
// CHECK: %[[VIEW:.+]] = tensor.expand_shape %arg0 {{.*}} into tensor<2x4x14x2x28xf32>
// CHECK: %[[ROWS:.+]] = vector.transfer_read %[[VIEW]]{{.*}} : tensor<2x4x14x2x28xf32>, vector<1x1x1x2x28xf32>
// The ReLU computes on the rows as read, not on 28 rows of 2 (the window
// tile's shape).
// CHECK: %[[RELU:.+]] = arith.maximumf %[[ROWS]], {{.*}} : vector<1x1x1x2x28xf32>
// CHECK: %[[FLAT:.+]] = vector.shape_cast %[[RELU]] : vector<1x1x1x2x28xf32> to vector<56xf32>
// CHECK: vector.shuffle %[[FLAT]], %[[FLAT]] [0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26] : vector<56xf32>, vector<56xf32>
// CHECK: vector.shuffle %[[FLAT]], %[[FLAT]] [1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27]
// CHECK: arith.maximumf {{.*}} : vector<14xf32>
// CHECK: vector.shuffle %[[FLAT]], %[[FLAT]] [28, 30, 32, 34, 36, 38, 40, 42, 44, 46, 48, 50, 52, 54]
// CHECK: vector.shuffle %[[FLAT]], %[[FLAT]] [29, 31, 33, 35, 37, 39, 41, 43, 45, 47, 49, 51, 53, 55]
// CHECK: %[[MAX:.+]] = arith.maximumf {{.*}} : vector<14xf32>
// CHECK: %[[OUT:.+]] = vector.shape_cast %[[MAX]] : vector<14xf32> to vector<1x1x1x14xf32>
// CHECK-NOT: vector.multi_reduction
// CHECK: vector.transfer_write %[[OUT]], {{.*}} : vector<1x1x1x14xf32>, tensor<2x4x14x14xf32>

// Mixed precision (bf16): a convolution's result (its bias added) rounded to
// bf16 and back, then a ReLU, rounded again. The first rounding reaches only
// the ReLU on its way to the second, so it goes (rounding is monotonic: the
// same values) and the ReLU's runs on the rows as read, in 32-bit lanes. The
// bias, a float32 parameter rounded to bf16, is rounded once per channel, on
// the element, before its broadcast (ElementwiseOnBroadcastElements).
mithril.model @ConvReluPoolBf16(data %x: tensor<2x1x28x28xf32>, param %w: tensor<4x1x3x3xf32>, param %b: tensor<4xf32>) -> (y: tensor<2x4x14x14xf32>) {
  %bn = mithril.cast %b {element_type = bf16} : (tensor<4xf32>) -> tensor<4xbf16>
  %bw = mithril.cast %bn {element_type = f32} : (tensor<4xbf16>) -> tensor<4xf32>
  %c = mithril.conv2d %x, %w, %bw {dilation = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, stride = array<i64: 1, 1>} : (tensor<2x1x28x28xf32>, tensor<4x1x3x3xf32>, tensor<4xf32>) -> tensor<2x4x28x28xf32>
  %cn = mithril.cast %c {element_type = bf16} : (tensor<2x4x28x28xf32>) -> tensor<2x4x28x28xbf16>
  %cw = mithril.cast %cn {element_type = f32} : (tensor<2x4x28x28xbf16>) -> tensor<2x4x28x28xf32>
  %r = mithril.relu %cw : (tensor<2x4x28x28xf32>) -> tensor<2x4x28x28xf32>
  %rn = mithril.cast %r {element_type = bf16} : (tensor<2x4x28x28xf32>) -> tensor<2x4x28x28xbf16>
  %rw = mithril.cast %rn {element_type = f32} : (tensor<2x4x28x28xbf16>) -> tensor<2x4x28x28xf32>
  %y = mithril.max_pool2d %rw {kernel_size = array<i64: 2, 2>, stride = array<i64: 2, 2>, padding = array<i64: 0, 0, 0, 0>, dilation = array<i64: 1, 1>} : (tensor<2x4x28x28xf32>) -> tensor<2x4x14x14xf32>
  mithril.output %y : tensor<2x4x14x14xf32>
}

// CHECK-LABEL: func.func @ConvReluPoolBf16(
// CHECK: scf.for %{{.+}} = %c0 to %c14 step %c1
// CHECK: %[[ROWS:.+]] = vector.transfer_read {{.*}} vector<1x1x1x2x28xf32>
// CHECK: %[[BIAS:.+]] = arith.select %{{.+}} : f32
// CHECK: %[[SPLAT:.+]] = vector.broadcast %[[BIAS]] : f32 to vector<1x1x1x2x28xf32>
// CHECK: %[[SUM:.+]] = arith.addf %[[ROWS]], %[[SPLAT]] : vector<1x1x1x2x28xf32>
// CHECK: %[[RELU:.+]] = arith.maximumf %[[SUM]], {{.*}} : vector<1x1x1x2x28xf32>
// CHECK: arith.bitcast %[[RELU]] : vector<1x1x1x2x28xf32> to vector<1x1x1x2x28xi32>
// CHECK: %[[ROUNDED:.+]] = arith.select %{{.+}}, %[[RELU]], %{{.+}} : vector<1x1x1x2x28xi1>, vector<1x1x1x2x28xf32>
// CHECK-NOT: arith.bitcast
// CHECK: vector.shape_cast %[[ROUNDED]] : vector<1x1x1x2x28xf32> to vector<56xf32>
