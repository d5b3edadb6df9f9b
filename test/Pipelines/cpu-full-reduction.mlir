// A reduction of a whole tensor to one value accumulates in vector lanes:
// the input viewed flat as [n / 128][128], each register tile reduced down
// its rows only (into 128 partial values, independent registers), and the
// partial values combined once at the end, 32 at a time by a horizontal
// vector.reduction (a shuffle tree, not a chain of 32 one-lane steps).
// Before, each 8 x 28 tile was reduced across its lanes into the scalar.
// On two threads each takes a contiguous half of the input first (the rows
// the threads of the op before wrote each): [2][n / 256][128] partial values.
// RUN: mithril-opt %s --mithril-cpu-pipeline="target-cpu=znver4 threads=1 stop-after=fusion" | FileCheck %s
// RUN: mithril-opt %s --mithril-cpu-pipeline="target-cpu=znver4 threads=2 stop-after=fusion" \
// RUN:   | FileCheck %s --check-prefix=THREADS

mithril.model @MaxAbs(data %x: tensor<256x784xf32>) -> (m: tensor<f32>) {
  %a = mithril.abs %x : (tensor<256x784xf32>) -> tensor<256x784xf32>
  %m = mithril.max %a : (tensor<256x784xf32>) -> tensor<f32>
  mithril.output %m : tensor<f32>
}

// A total that is no multiple of 128 keeps the plain schedule.
mithril.model @Odd(data %x: tensor<7x13xf32>) -> (s: tensor<f32>) {
  %s = mithril.sum %x : (tensor<7x13xf32>) -> tensor<f32>
  mithril.output %s : tensor<f32>
}

// The minimum and the maximum of one tensor (an int8 activation's range)
// read it in one pass: one loop reduces each tile both ways.
mithril.model @Range(data %x: tensor<256x784xf32>) -> (lo: tensor<f32>, hi: tensor<f32>) {
  %lo = mithril.min %x : (tensor<256x784xf32>) -> tensor<f32>
  %hi = mithril.max %x : (tensor<256x784xf32>) -> tensor<f32>
  mithril.output %lo, %hi : tensor<f32>, tensor<f32>
}

// CHECK-LABEL: func.func @MaxAbs(
// CHECK: tensor.collapse_shape %{{.+}} {{\[\[}}0, 1]] : tensor<256x784xf32> into tensor<200704xf32>
// CHECK: tensor.expand_shape %{{.+}} {{\[\[}}0, 1]] output_shape [1568, 128]
// CHECK: vector.multi_reduction <maximumf>, %{{.+}}, %{{.+}} [0] : vector<8x32xf32> to vector<32xf32>
// CHECK: vector.reduction <maximumf>, %{{.+}}, %{{.+}} : vector<32xf32> into f32
// CHECK-LABEL: func.func @Odd(
// CHECK-NOT: expand_shape
// Each row of 13 into the sum at once (flattened, a tree of shuffles), not
// 13 dependent adds.
// CHECK: vector.shape_cast %{{.+}} : vector<1x13xf64> to vector<13xf64>
// CHECK-NEXT: vector.reduction <add>, %{{.+}}, %{{.+}} : vector<13xf64> into f64
// CHECK-LABEL: func.func @Range(
// CHECK: scf.for
// CHECK: %[[TILE:.+]] = vector.transfer_read
// CHECK-DAG: vector.multi_reduction <minimumf>, %[[TILE]], %{{.+}} [0] : vector<8x32xf32> to vector<32xf32>
// CHECK-DAG: vector.multi_reduction <maximumf>, %[[TILE]], %{{.+}} [0] : vector<8x32xf32> to vector<32xf32>
// CHECK: scf.yield
// CHECK-NOT: vector.multi_reduction
// CHECK: vector.reduction <minimumf>
// CHECK: vector.reduction <maximumf>

// THREADS-LABEL: func.func @Range(
// THREADS: tensor.expand_shape %{{.+}} {{\[\[}}0, 1, 2]] output_shape [2, 784, 128] : tensor<200704xf32> into tensor<2x784x128xf32>
// THREADS: scf.forall (%[[T:.+]]) in (2) shared_outs({{.+}}) -> (tensor<2x128xf32>, tensor<2x128xf32>)
// THREADS: %[[TILE:.+]] = vector.transfer_read %{{.+}}[%[[T]], %{{.+}}, %{{.+}}]
// THREADS-DAG: vector.multi_reduction <minimumf>, %[[TILE]], %{{.+}} [1] : vector<1x8x32xf32> to vector<1x32xf32>
// THREADS-DAG: vector.multi_reduction <maximumf>, %[[TILE]], %{{.+}} [1] : vector<1x8x32xf32> to vector<1x32xf32>
// THREADS: scf.forall.in_parallel
