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
// CHECK: %[[ROW:.+]] = vector.shape_cast %[[ROWS]] : vector<1x1x1x2x28xf32> to vector<1x1x1x2x14x2xf32>
// CHECK: %[[RELU:.+]] = arith.maximumf %[[ROW]], {{.*}} : vector<1x1x1x2x14x2xf32>
// CHECK: %[[FLAT:.+]] = vector.shape_cast %[[RELU]] : vector<1x1x1x2x14x2xf32> to vector<56xf32>
// CHECK: vector.shuffle %[[FLAT]], %[[FLAT]] [0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26] : vector<56xf32>, vector<56xf32>
// CHECK: vector.shuffle %[[FLAT]], %[[FLAT]] [1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27]
// CHECK: arith.maximumf {{.*}} : vector<14xf32>
// CHECK: vector.shuffle %[[FLAT]], %[[FLAT]] [28, 30, 32, 34, 36, 38, 40, 42, 44, 46, 48, 50, 52, 54]
// CHECK: vector.shuffle %[[FLAT]], %[[FLAT]] [29, 31, 33, 35, 37, 39, 41, 43, 45, 47, 49, 51, 53, 55]
// CHECK: %[[MAX:.+]] = arith.maximumf {{.*}} : vector<14xf32>
// CHECK: %[[OUT:.+]] = vector.shape_cast %[[MAX]] : vector<14xf32> to vector<1x1x1x14xf32>
// CHECK-NOT: vector.multi_reduction
// CHECK: vector.transfer_write %[[OUT]], {{.*}} : vector<1x1x1x14xf32>, tensor<2x4x14x14xf32>
