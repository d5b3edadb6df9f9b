// An elementwise op over whole tensors read in order (identity maps, or
// scalars) whose rows are no multiple of a tile's 32 columns runs over the
// tensors viewed flat: rows of 784 were tiles of 8 x 28 (two vectors a row,
// one masked), rows of 10 tiles of 2 x 10. Rows of 512 keep their tiles,
// and so do ops that broadcast a row (a bias) and ops whose result the
// function returns: bufferization writes that one into the caller's buffer,
// where a flat one was copied there (an SGD update of a 512 x 784 weight,
// 1.6 MB a step); their tiles are 8 x 16 (whole vectors: 784 = 49 x 16).
// An op that reads its indices (a gather: a flipped convolution kernel)
// keeps its shape too: flat, its indices came back by divisions.
// RUN: mithril-opt %s --mithril-cpu-pipeline="target-cpu=znver4 threads=1 stop-after=fusion" | FileCheck %s
// RUN: mithril-opt %s --mithril-cpu-pipeline="target-cpu=znver4 threads=1 stop-after=bufferize" | FileCheck %s --check-prefix=BUF

mithril.model @Rows784(data %x: tensor<256x784xf32>, data %s: tensor<f32>, data %w: tensor<784x32xf32>) -> (y: tensor<256x32xf32>) {
  %d = mithril.divide %x, %s : (tensor<256x784xf32>, tensor<f32>) -> tensor<256x784xf32>
  %r = mithril.relu %d : (tensor<256x784xf32>) -> tensor<256x784xf32>
  %y = mithril.matmul %r, %w : (tensor<256x784xf32>, tensor<784x32xf32>) -> tensor<256x32xf32>
  mithril.output %y : tensor<256x32xf32>
}

mithril.model @Rows10(data %x: tensor<256x10xf32>, data %w: tensor<10x32xf32>) -> (y: tensor<256x32xf32>) {
  %e = mithril.exp %x : (tensor<256x10xf32>) -> tensor<256x10xf32>
  %y = mithril.matmul %e, %w : (tensor<256x10xf32>, tensor<10x32xf32>) -> tensor<256x32xf32>
  mithril.output %y : tensor<256x32xf32>
}

mithril.model @Rows512(data %x: tensor<256x512xf32>, data %w: tensor<512x32xf32>) -> (y: tensor<256x32xf32>) {
  %r = mithril.relu %x : (tensor<256x512xf32>) -> tensor<256x512xf32>
  %y = mithril.matmul %r, %w : (tensor<256x512xf32>, tensor<512x32xf32>) -> tensor<256x32xf32>
  mithril.output %y : tensor<256x32xf32>
}

mithril.model @Bias(data %x: tensor<256x784xf32>, data %b: tensor<784xf32>, data %w: tensor<784x32xf32>) -> (y: tensor<256x32xf32>) {
  %a = mithril.add %x, %b : (tensor<256x784xf32>, tensor<784xf32>) -> tensor<256x784xf32>
  %y = mithril.matmul %a, %w : (tensor<256x784xf32>, tensor<784x32xf32>) -> tensor<256x32xf32>
  mithril.output %y : tensor<256x32xf32>
}

mithril.model @Returned(data %x: tensor<256x784xf32>) -> (y: tensor<256x784xf32>) {
  %y = mithril.relu %x : (tensor<256x784xf32>) -> tensor<256x784xf32>
  mithril.output %y : tensor<256x784xf32>
}

mithril.model @Flipped(data %w: tensor<32x64x3x3xf32>, data %x: tensor<64x32x3x3xf32>) -> (y: tensor<64x32x3x3xf32>) {
  %r = mithril.reverse %w {axes = array<i64: 2, 3>} : (tensor<32x64x3x3xf32>) -> tensor<32x64x3x3xf32>
  %t = mithril.transpose %r {permutation = array<i64: 1, 0, 2, 3>} : (tensor<32x64x3x3xf32>) -> tensor<64x32x3x3xf32>
  %y = mithril.multiply %t, %x : (tensor<64x32x3x3xf32>, tensor<64x32x3x3xf32>) -> tensor<64x32x3x3xf32>
  %z = mithril.exp %y : (tensor<64x32x3x3xf32>) -> tensor<64x32x3x3xf32>
  mithril.output %z : tensor<64x32x3x3xf32>
}

// CHECK-LABEL: func.func @Rows784(
// CHECK: tensor.collapse_shape %{{.+}} {{\[\[}}0, 1]] : tensor<256x784xf32> into tensor<200704xf32>
// CHECK: arith.divf %{{.+}}, %{{.+}} : vector<32xf32>
// CHECK: tensor.expand_shape %{{.+}} {{\[\[}}0, 1]] output_shape [256, 784] : tensor<200704xf32> into tensor<256x784xf32>
// CHECK-NOT: x28xf32>
// CHECK-LABEL: func.func @Rows10(
// CHECK: tensor<2560xf32>
// CHECK-NOT: vector<2x10xf32>
// CHECK-LABEL: func.func @Rows512(
// CHECK-NOT: tensor.collapse_shape
// CHECK: arith.maximumf %{{.+}}, %{{.+}} : vector<8x32xf32>
// CHECK-LABEL: func.func @Bias(
// CHECK-NOT: tensor<200704xf32>
// CHECK: arith.addf %{{.+}}, %{{.+}} : vector<8x16xf32>
// CHECK-LABEL: func.func @Returned(
// CHECK-NOT: tensor<200704xf32>
// CHECK: vector<8x16xf32>
// CHECK-LABEL: func.func @Flipped(
// CHECK-NOT: arith.remsi
// CHECK: linalg.generic
// CHECK-SAME: outs(%{{.+}} : tensor<1x{{[0-9]+}}x3x3xf32>)
// CHECK: %[[ROW:.+]] = linalg.index 2 : index
// CHECK: arith.subi %{{.+}}, %[[ROW]] : index
// CHECK-NOT: arith.remsi
// CHECK: return

// BUF-LABEL: func.func @Returned(
// BUF-NOT: memref.copy
// BUF: return
