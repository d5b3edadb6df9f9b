// An elementwise op over whole tensors read in order (identity maps, or
// scalars) whose rows are no multiple of a tile's 32 columns runs over the
// tensors viewed flat: rows of 784 were tiles of 8 x 28 (two vectors a row,
// one masked), rows of 10 tiles of 2 x 10. Rows of 512 keep their tiles,
// and so do ops that broadcast a row (a bias).
// RUN: mithril-opt %s --mithril-cpu-pipeline="target-cpu=znver4 threads=1 stop-after=fusion" | FileCheck %s

mithril.model @Rows784(data %x: tensor<256x784xf32>, data %s: tensor<f32>) -> (y: tensor<256x784xf32>) {
  %d = mithril.divide %x, %s : (tensor<256x784xf32>, tensor<f32>) -> tensor<256x784xf32>
  %y = mithril.relu %d : (tensor<256x784xf32>) -> tensor<256x784xf32>
  mithril.output %y : tensor<256x784xf32>
}

mithril.model @Rows10(data %x: tensor<256x10xf32>) -> (y: tensor<256x10xf32>) {
  %y = mithril.exp %x : (tensor<256x10xf32>) -> tensor<256x10xf32>
  mithril.output %y : tensor<256x10xf32>
}

mithril.model @Rows512(data %x: tensor<256x512xf32>) -> (y: tensor<256x512xf32>) {
  %y = mithril.relu %x : (tensor<256x512xf32>) -> tensor<256x512xf32>
  mithril.output %y : tensor<256x512xf32>
}

mithril.model @Bias(data %x: tensor<256x784xf32>, data %b: tensor<784xf32>) -> (y: tensor<256x784xf32>) {
  %y = mithril.add %x, %b : (tensor<256x784xf32>, tensor<784xf32>) -> tensor<256x784xf32>
  mithril.output %y : tensor<256x784xf32>
}

// CHECK-LABEL: func.func @Rows784(
// CHECK: tensor.collapse_shape %{{.+}} {{\[\[}}0, 1]] : tensor<256x784xf32> into tensor<200704xf32>
// CHECK: scf.for %{{.+}} = %{{.+}} to %{{.+}} step %{{.+}} iter_args
// CHECK: arith.divf %{{.+}}, %{{.+}} : vector<32xf32>
// CHECK-NOT: x28xf32>
// CHECK: tensor.expand_shape %{{.+}} {{\[\[}}0, 1]] output_shape [256, 784] : tensor<200704xf32> into tensor<256x784xf32>
// CHECK-LABEL: func.func @Rows10(
// CHECK: tensor<2560xf32>
// CHECK-NOT: vector<2x10xf32>
// CHECK-LABEL: func.func @Rows512(
// CHECK-NOT: tensor.collapse_shape
// CHECK: vector<8x32xf32>
// CHECK-LABEL: func.func @Bias(
// CHECK-NOT: tensor<200704xf32>
// CHECK: vector<8x28xf32>
