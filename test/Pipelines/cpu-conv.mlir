// A plain convolution (one group, unit stride and dilation) runs over rows
// flattened at the padded width (30 here): output position p = oh * 30 + ow
// reads the input at p + kh * 30 + kw, so a tile of 32 consecutive positions
// is one contiguous load for every kernel position. A block of 8 channels x
// 32 positions accumulates over input channels and kernel positions with
// vector FMAs, broadcasting one weight per channel; the accumulator starts
// from zeros in registers (the output's fill is fused into the tiles, so no
// zeroed buffer is written and read back) and is written once after the
// reduction loops. The two
// columns past the output width are computed and dropped by a view.
// RUN: mithril-opt %s --mithril-cpu-pipeline="vector-bits=512 stop-after=fusion" | FileCheck %s
// RUN: mithril-opt %s --mithril-cpu-pipeline="vector-bits=512 entry=Strided gradients=true wrt=x,w stop-after=linalg" | FileCheck %s --check-prefix=GRAD
// RUN: mithril-opt %s --mithril-cpu-pipeline="vector-bits=512 entry=DilatedRows stop-after=linalg" | FileCheck %s --check-prefix=DILATED

mithril.model @Conv(data %x: tensor<2x4x28x28xf32>, param %w: tensor<16x4x3x3xf32>) -> (y: tensor<2x16x28x28xf32>) {
  %y = mithril.conv2d %x, %w {dilation = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, stride = array<i64: 1, 1>} : (tensor<2x4x28x28xf32>, tensor<16x4x3x3xf32>) -> tensor<2x16x28x28xf32>
  mithril.output %y : tensor<2x16x28x28xf32>
}

// CHECK-LABEL: func.func @Conv(
// CHECK: %[[ZERO:.+]] = arith.constant dense<0.000000e+00> : vector<8x32xf32>
// CHECK: %[[PAD:.+]] = tensor.pad %arg0 low[0, 0, 1, 1] high[0, 0, 2, 1]
// CHECK: %[[FLAT:.+]] = tensor.collapse_shape %[[PAD]] {{\[}}[0], [1], [2, 3]] : tensor<2x4x31x30xf32> into tensor<2x4x930xf32>
// CHECK: scf.for %{{.+}} = %c0 to %c16 step %c8
// CHECK-NOT: linalg.fill
// CHECK: scf.for %[[P:.+]] = %c0 to %c864 step %c32
// CHECK-NOT: vector.transfer_read
// CHECK: scf.for %{{.+}} = %c0 to %c4 step %c1 iter_args(%{{.+}} = %[[ZERO]]) -> (vector<8x32xf32>)
// CHECK-NEXT: scf.for %[[KH:.+]] = %c0 to %c3 step %c1 iter_args({{.*}}) -> (vector<8x32xf32>)
// CHECK-NEXT: scf.for %[[KW:.+]] = %c0 to %c3 step %c1 iter_args({{.*}}) -> (vector<8x32xf32>)
// CHECK: %[[AT:.+]] = affine.apply #{{.+}}(%[[KH]], %[[KW]])[%[[P]]]
// CHECK: vector.transfer_read %[[FLAT]][%{{.+}}, %{{.+}}, %[[AT]]], {{.*}} : tensor<2x4x930xf32>, vector<32xf32>
// CHECK: arith.mulf {{.*}} : vector<8x32xf32>
// CHECK: arith.addf {{.*}} : vector<8x32xf32>
// CHECK: vector.transfer_write {{.*}} : vector<8x32xf32>, tensor<1x8x32xf32>
// CHECK: %[[ROWS:.+]] = tensor.extract_slice %{{.+}}[0, 0, 0] [2, 16, 840] [1, 1, 1]
// CHECK: %[[GRID:.+]] = tensor.expand_shape %[[ROWS]] {{.*}} into tensor<2x16x28x30xf32>
// CHECK: tensor.extract_slice %[[GRID]][0, 0, 0, 0] [2, 16, 28, 28] [1, 1, 1, 1]

// A strided convolution runs as the sum of stride-1 flat-row convolutions,
// one per phase of its stride: phase (a, b) takes rows a, a + 2, ... and
// columns b, b + 2, ... of the padded input and the same rows and columns of
// the kernel (2x2, 2x1, 1x2 and 1x1 of the 3x3 here), each vectorized as
// above.
mithril.model @Strided(data %x: tensor<2x4x28x28xf32>, param %w: tensor<16x4x3x3xf32>) -> (y: tensor<2x16x14x14xf32>) {
  %y = mithril.conv2d %x, %w {dilation = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, stride = array<i64: 2, 2>} : (tensor<2x4x28x28xf32>, tensor<16x4x3x3xf32>) -> tensor<2x16x14x14xf32>
  mithril.output %y : tensor<2x16x14x14xf32>
}
// CHECK-LABEL: func.func @Strided(
// CHECK: %[[PADDED:.+]] = tensor.pad %arg0 low[0, 0, 1, 1] high[0, 0, 1, 1]
// CHECK: tensor.extract_slice %[[PADDED]][0, 0, 0, 0] [2, 4, 15, 15] [1, 1, 2, 2]
// CHECK: tensor.extract_slice %arg1[0, 0, 0, 0] [16, 4, 2, 2] [1, 1, 2, 2]
// CHECK: arith.addf {{.*}} : vector<8x32xf32>
// CHECK: tensor.extract_slice %[[PADDED]][0, 0, 0, 1] [2, 4, 15, 14] [1, 1, 2, 2]
// CHECK: tensor.extract_slice %arg1[0, 0, 0, 1] [16, 4, 2, 1] [1, 1, 2, 2]
// CHECK: arith.addf {{.*}} : vector<8x32xf32>
// CHECK: tensor.extract_slice %[[PADDED]][0, 0, 1, 0] [2, 4, 14, 15] [1, 1, 2, 2]
// CHECK: tensor.extract_slice %arg1[0, 0, 1, 0] [16, 4, 1, 2] [1, 1, 2, 2]
// CHECK: arith.addf {{.*}} : vector<8x32xf32>
// CHECK: tensor.extract_slice %[[PADDED]][0, 0, 1, 1] [2, 4, 14, 14] [1, 1, 2, 2]
// CHECK: tensor.extract_slice %arg1[0, 0, 1, 1] [16, 4, 1, 1] [1, 1, 2, 2]
// CHECK: arith.addf {{.*}} : vector<8x32xf32>

// Its gradients go phase by phase too. The input gradient of phase (a, b)
// is a stride-1 flat-row convolution of the output gradient with the phase's
// kernel flipped, written into every second row and column of the padded
// input gradient from (a, b), which is then cropped; the weight gradient of
// a phase is a flat-row weight gradient, written into the kernel likewise.
// GRAD-LABEL: func.func @Strided(
// GRAD: tensor.insert_slice %{{.+}} into %{{.+}}[0, 0, 0, 0] [2, 4, 15, 15] [1, 1, 2, 2] : tensor<2x4x15x15xf32> into tensor<2x4x30x30xf32>
// GRAD: tensor.insert_slice %{{.+}} into %{{.+}}[0, 0, 0, 1] [2, 4, 15, 15] [1, 1, 2, 2]
// GRAD: tensor.insert_slice %{{.+}} into %{{.+}}[0, 0, 1, 0] [2, 4, 15, 15] [1, 1, 2, 2]
// GRAD: tensor.insert_slice %{{.+}} into %{{.+}}[0, 0, 1, 1] [2, 4, 15, 15] [1, 1, 2, 2]
// GRAD: tensor.extract_slice %{{.+}}[0, 0, 1, 1] [2, 4, 28, 28] [1, 1, 1, 1] : tensor<2x4x30x30xf32> to tensor<2x4x28x28xf32>
// GRAD: #mithril.lowering_config<kernel = conv_flat_weight_grad
// GRAD: tensor.insert_slice %{{.+}} into %{{.+}}[0, 0, 0, 0] [16, 4, 2, 2] [1, 1, 2, 2] : tensor<16x4x2x2xf32> into tensor<16x4x3x3xf32>
// GRAD: tensor.insert_slice %{{.+}} into %{{.+}}[0, 0, 0, 1] [16, 4, 2, 1] [1, 1, 2, 2]
// GRAD: tensor.insert_slice %{{.+}} into %{{.+}}[0, 0, 1, 0] [16, 4, 1, 2] [1, 1, 2, 2]
// GRAD: tensor.insert_slice %{{.+}} into %{{.+}}[0, 0, 1, 1] [16, 4, 1, 1] [1, 1, 2, 2]

// A convolution both strided and dilated keeps the general form, tiled over
// output channels and columns, each tile zeroing its own accumulator.
mithril.model @Dilated(data %x: tensor<2x4x28x28xf32>, param %w: tensor<16x4x3x3xf32>) -> (y: tensor<2x16x12x12xf32>) {
  %y = mithril.conv2d %x, %w {dilation = array<i64: 2, 2>, padding = array<i64: 0, 0, 0, 0>, stride = array<i64: 2, 2>} : (tensor<2x4x28x28xf32>, tensor<16x4x3x3xf32>) -> tensor<2x16x12x12xf32>
  mithril.output %y : tensor<2x16x12x12xf32>
}
// CHECK-LABEL: func.func @Dilated(
// CHECK-NOT: tensor.collapse_shape
// CHECK: %[[ZERO12:.+]] = arith.constant dense<0.000000e+00> : vector<8x12xf32>
// CHECK: scf.for %{{.+}} = %c0 to %c16 step %c8 iter_args(%{{.+}} = %{{.+}}) -> (tensor<2x1x16x12x12xf32>)
// CHECK: vector.transfer_write %[[ZERO12]], %{{.+}} : vector<8x12xf32>, tensor<1x1x8x1x12xf32>

// A dilated convolution with unit strides runs over flat rows too: kernel
// position (kh, kw) reads 2 * kh rows and 2 * kw columns further (the padded
// rows are 32 wide).
mithril.model @DilatedRows(data %x: tensor<2x4x28x28xf32>, param %w: tensor<16x4x3x3xf32>) -> (y: tensor<2x16x28x28xf32>) {
  %y = mithril.conv2d %x, %w {dilation = array<i64: 2, 2>, padding = array<i64: 2, 2, 2, 2>, stride = array<i64: 1, 1>} : (tensor<2x4x28x28xf32>, tensor<16x4x3x3xf32>) -> tensor<2x16x28x28xf32>
  mithril.output %y : tensor<2x16x28x28xf32>
}
// DILATED: #[[IN:.+]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d3, d2 + d4 * 64 + d5 * 2)>
// DILATED-LABEL: func.func @DilatedRows(
// DILATED: linalg.generic {indexing_maps = [#[[IN]], {{.*}}#mithril.lowering_config<kernel = conv_flat>

// The products of a Winograd convolution (16 x 7 x 7 = 784 tiles, an odd
// multiple of 16): in each block of 8 output channels, the 768 tiles that
// whole register tiles of 8 channels x 32 tiles cover, then the last 16 (8 x
// 16), the first part's tiles starting from zeros in registers, rather than
// every tile narrowed to 16 columns or widened to 28 that the vectorizer
// would split.
// RUN: mithril-opt %s --mithril-cpu-pipeline="vector-bits=512 entry=Winograd stop-after=fusion" | FileCheck %s --check-prefix=WINO
mithril.model @Winograd(data %x: tensor<16x32x14x14xf32>, param %w: tensor<64x32x3x3xf32>) -> (y: tensor<16x64x14x14xf32>) {
  %y = mithril.conv2d %x, %w {dilation = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, stride = array<i64: 1, 1>} : (tensor<16x32x14x14xf32>, tensor<64x32x3x3xf32>) -> tensor<16x64x14x14xf32>
  mithril.output %y : tensor<16x64x14x14xf32>
}
// WINO-LABEL: func.func @Winograd(
// WINO: scf.for %[[N:.+]] = %c0 to %c16 step %c1 iter_args(%{{.+}} = %{{.+}}) -> (tensor<16x64x784xf32>)
// WINO-NEXT: scf.for %{{.+}} = %c0 to %c64 step %c8
// WINO-NEXT: %[[BLOCK:.+]] = tensor.extract_slice %{{.+}}[%[[N]], %{{.+}}, 0] [1, 8, 784] [1, 1, 1]
// WINO-NEXT: %[[WHOLE:.+]] = tensor.extract_slice %[[BLOCK]][0, 0, 0] [1, 8, 768] [1, 1, 1]
// WINO-NEXT: scf.for %{{.+}} = %c0 to %c768 step %c32 iter_args(%{{.+}} = %[[WHOLE]])
// WINO-NOT: linalg.fill
// WINO: scf.for %{{.+}} = %c0 to %c32 step %c1 iter_args(%{{.+}} = %{{.+}}) -> (vector<8x32xf32>)
// WINO: %[[FIRST:.+]] = tensor.insert_slice %{{.+}} into %[[BLOCK]][0, 0, 0] [1, 8, 768] [1, 1, 1]
// WINO-NEXT: tensor.extract_slice %[[FIRST]][0, 0, 768] [1, 8, 16] [1, 1, 1]
// WINO: scf.for %{{.+}} = %c0 to %c32 step %c1 iter_args(%{{.+}} = %{{.+}}) -> (vector<8x16xf32>)
// WINO: tensor.insert_slice %{{.+}} into %[[FIRST]][0, 0, 768] [1, 8, 16] [1, 1, 1]
