// A convolution's weight gradient sums, for each output x input channel and
// kernel position, lanes of products over blocks of flat positions; the
// register tile holds 4 output x 4 input channels of one register of lanes
// each with AVX-512 (16 of its 32 zmm registers: 16 f32 or 8 f64), and 4 x 2
// of one ymm register with AVX2 (8 f32 or 4 f64: 8 of its 16). With 16 f32
// lanes, two ymm registers each, 4 x 2 took all 16 and LLVM spilled
// accumulators in the inner loop (the tile 1.7x as slow on a Zen 4 core).
// RUN: mithril-opt %s --mithril-cpu-pipeline="vector-bits=512 entry=Float32 gradients=true wrt=w stop-after=fusion" | FileCheck %s --check-prefix=ZMM
// RUN: mithril-opt %s --mithril-cpu-pipeline="target-cpu=znver2 entry=Float32 gradients=true wrt=w stop-after=fusion" | FileCheck %s --check-prefix=YMM
// RUN: mithril-opt %s --mithril-cpu-pipeline="vector-bits=512 entry=Float64 gradients=true wrt=w stop-after=fusion" | FileCheck %s --check-prefix=ZMM64
// RUN: mithril-opt %s --mithril-cpu-pipeline="target-cpu=znver2 entry=Float64 gradients=true wrt=w stop-after=fusion" | FileCheck %s --check-prefix=YMM64

mithril.model @Float32(data %x: tensor<16x32x14x14xf32>, param %w: tensor<64x32x3x3xf32>) -> (y: tensor<16x64x14x14xf32>) {
  %y = mithril.conv2d %x, %w {dilation = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, stride = array<i64: 1, 1>} : (tensor<16x32x14x14xf32>, tensor<64x32x3x3xf32>) -> tensor<16x64x14x14xf32>
  mithril.output %y : tensor<16x64x14x14xf32>
}

mithril.model @Float64(data %x: tensor<4x32x14x14xf64>, param %w: tensor<64x32x3x3xf64>) -> (y: tensor<4x64x14x14xf64>) {
  %y = mithril.conv2d %x, %w {dilation = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, stride = array<i64: 1, 1>} : (tensor<4x32x14x14xf64>, tensor<64x32x3x3xf64>) -> tensor<4x64x14x14xf64>
  mithril.output %y : tensor<4x64x14x14xf64>
}

// The partial sums [64, 32, 3, 3, 16] of the weight gradient, then summed
// over their lanes into the [64, 32, 3, 3] gradient.
// ZMM-LABEL: func.func @Float32(
// ZMM: tensor.empty() : tensor<64x32x3x3x16xf32>
// ZMM: iter_args(%{{.+}} = %{{.+}}) -> (vector<4x4x16xf32>)
// ZMM: arith.addf {{.*}} : vector<4x4x16xf32>

// YMM-LABEL: func.func @Float32(
// YMM: tensor.empty() : tensor<64x32x3x3x16xf32>
// YMM: iter_args(%{{.+}} = %{{.+}}) -> (vector<4x2x8xf32>)
// YMM: arith.addf {{.*}} : vector<4x2x8xf32>
// YMM-NOT: vector<4x2x16xf32>

// ZMM64-LABEL: func.func @Float64(
// ZMM64: iter_args(%{{.+}} = %{{.+}}) -> (vector<4x4x8xf64>)
// ZMM64-NOT: vector<4x2x16xf64>

// YMM64-LABEL: func.func @Float64(
// YMM64: iter_args(%{{.+}} = %{{.+}}) -> (vector<4x2x4xf64>)
// YMM64-NOT: vector<4x2x16xf64>
