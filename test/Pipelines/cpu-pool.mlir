// Max pooling over non-overlapping 2x2 windows, with the ReLU before it fused
// in by elementwise fusion: a tile is one output row, 14 columns with their
// 2x2 windows read in one transfer and reduced in registers.
// RUN: mithril-opt %s --mithril-cpu-pipeline="vector-bits=512 stop-after=fusion" | FileCheck %s

mithril.model @ReluPool(data %x: tensor<2x4x28x28xf32>) -> (y: tensor<2x4x14x14xf32>) {
  %r = mithril.relu %x : (tensor<2x4x28x28xf32>) -> tensor<2x4x28x28xf32>
  %y = mithril.max_pool2d %r {kernel_size = array<i64: 2, 2>, stride = array<i64: 2, 2>, padding = array<i64: 0, 0, 0, 0>, dilation = array<i64: 1, 1>} : (tensor<2x4x28x28xf32>) -> tensor<2x4x14x14xf32>
  mithril.output %y : tensor<2x4x14x14xf32>
}

// CHECK-LABEL: func.func @ReluPool(
// CHECK: %[[VIEW:.+]] = tensor.expand_shape %arg0 {{.*}} into tensor<2x4x14x2x14x2xf32>
// CHECK: scf.for %{{.+}} = %c0 to %c14 step %c1
// CHECK: vector.transfer_read %[[VIEW]]{{.*}} : tensor<2x4x14x2x14x2xf32>, vector<1x1x1x2x14x2xf32>
// CHECK: arith.maximumf {{.*}} : vector<1x1x1x14x2x2xf32>
// CHECK: vector.multi_reduction <maximumf>, {{.*}} [4, 5] : vector<1x1x1x14x2x2xf32> to vector<1x1x1x14xf32>
// CHECK: vector.transfer_write {{.*}} : vector<1x1x1x14xf32>, tensor<2x4x14x14xf32>
