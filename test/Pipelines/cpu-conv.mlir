// A convolution is scheduled like a matmul of output channels by output
// columns: a block of 8 channels x 28 columns (the whole row) accumulates
// over input channels and kernel positions with vector FMAs, broadcasting
// one weight per channel against a contiguous row of the padded input. The
// accumulator is read once before the reduction loops and written once
// after them.
// RUN: mithril-opt %s --mithril-cpu-pipeline="stop-after=fusion" | FileCheck %s

mithril.model @Conv(data %x: tensor<2x4x28x28xf32>, param %w: tensor<16x4x3x3xf32>) -> (y: tensor<2x16x28x28xf32>) {
  %y = mithril.conv2d %x, %w {dilation = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, stride = array<i64: 1, 1>} : (tensor<2x4x28x28xf32>, tensor<16x4x3x3xf32>) -> tensor<2x16x28x28xf32>
  mithril.output %y : tensor<2x16x28x28xf32>
}

// CHECK-LABEL: func.func @Conv(
// CHECK: scf.for %{{.+}} = %c0 to %c16 step %c8
// CHECK: %[[ACC:.+]] = vector.transfer_read {{.*}} vector<8x28xf32>
// CHECK-NEXT: scf.for %{{.+}} = %c0 to %c4 step %c1 iter_args(%{{.+}} = %[[ACC]]) -> (vector<8x28xf32>)
// CHECK-NEXT: scf.for %{{.+}} = %c0 to %c3 step %c1 iter_args({{.*}}) -> (vector<8x28xf32>)
// CHECK-NEXT: scf.for %{{.+}} = %c0 to %c3 step %c1 iter_args({{.*}}) -> (vector<8x28xf32>)
// CHECK: vector.transfer_read {{.*}} : tensor<{{.*}}xf32>, vector<28xf32>
// CHECK: arith.mulf {{.*}} : vector<8x28xf32>
// CHECK: arith.addf {{.*}} : vector<8x28xf32>
// CHECK: vector.transfer_write {{.*}} : vector<8x28xf32>, tensor<1x1x8x1x28xf32>
