// A convolution bias's gradient, each channel's sum over the batch and the
// image: a register tile is one row of one channel (14 values, summed in
// float64), and the loop over the rows carries the row's lanes, added
// element-wise, and reduces them across the lanes once after the loop
// (before: a horizontal reduction, a tree of shuffles, every row).
// RUN: mithril-opt %s --mithril-cpu-pipeline="target-cpu=znver3 threads=1 stop-after=fusion" | FileCheck %s

mithril.model @ChannelSums(data %x: tensor<16x64x14x14xf32>) -> (s: tensor<64xf32>) {
  %s = mithril.sum %x {axes = array<i64: 0, 2, 3>, keepdim = false} : (tensor<16x64x14x14xf32>) -> tensor<64xf32>
  mithril.output %s : tensor<64xf32>
}

// CHECK-LABEL: func.func @ChannelSums(
// CHECK: %[[ZERO:.+]] = arith.constant dense<0.000000e+00> : vector<1x1x1x14xf64>
// CHECK: scf.for %{{.+}} = %c0 to %c14 step %c1 iter_args(%[[LANES:.+]] = %[[ZERO]]) -> (vector<1x1x1x14xf64>)
// CHECK-NOT: vector.reduction
// CHECK: %[[ADD:.+]] = arith.addf %{{.+}}, %[[LANES]] : vector<1x1x1x14xf64>
// CHECK-NOT: vector.reduction
// CHECK: scf.yield %[[ADD]] : vector<1x1x1x14xf64>
// CHECK: vector.reduction <add>, %{{.+}}, %{{.+}} : vector<14xf64> into f64
