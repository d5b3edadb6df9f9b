// RUN: mithril-opt %s -split-input-file -mithril-widen-low-precision | FileCheck %s

// Ops that compute take float32 operands and round their result once; a
// transpose that feeds one is widened before it, so that the consumer still
// reads a transpose (the schedule reads a Linear weight in place through it).
// CHECK-LABEL: mithril.model @Half
// CHECK-SAME: (data %[[X:.*]]: tensor<4x8xf16>, param %[[W:.*]]: tensor<8x3xf16>)
// CHECK: %[[XW:.*]] = cast %[[X]] {{.*}} -> tensor<4x8xf32>
// CHECK: %[[WW:.*]] = cast %[[W]] {{.*}} -> tensor<8x3xf32>
// CHECK: %[[MM:.*]] = matmul %[[XW]], %[[WW]] : (tensor<4x8xf32>, tensor<8x3xf32>) -> tensor<4x3xf32>
// CHECK: %[[Y:.*]] = cast %[[MM]] {{.*}} -> tensor<4x3xf16>
// CHECK: %[[YW:.*]] = cast %[[Y]] {{.*}} -> tensor<4x3xf32>
// CHECK: %[[TW:.*]] = transpose %[[YW]] {{.*}} -> tensor<3x4xf32>
// CHECK: %[[S:.*]] = sum %[[TW]] {{.*}} -> tensor<3xf32>
// CHECK: %[[R:.*]] = cast %[[S]] {{.*}} -> tensor<3xf16>
// CHECK: output %[[R]]
mithril.model @Half(data %x: tensor<4x8xf16>, param %w: tensor<8x3xf16>) -> (y: tensor<3xf16>) {
  %0 = mithril.matmul %x, %w : (tensor<4x8xf16>, tensor<8x3xf16>) -> tensor<4x3xf16>
  %1 = mithril.transpose %0 : (tensor<4x3xf16>) -> tensor<3x4xf16>
  %2 = mithril.sum %1 {axes = array<i64: 1>} : (tensor<3x4xf16>) -> tensor<3xf16>
  mithril.output %2 : tensor<3xf16>
}

// -----

// bfloat16 likewise; a comparison keeps its i1 result, and float32 ops are
// left alone.
// CHECK-LABEL: mithril.model @Brain
// CHECK: %[[A:.*]] = cast %{{.*}} {{.*}} -> tensor<5xf32>
// CHECK: %[[B:.*]] = cast %{{.*}} {{.*}} -> tensor<5xf32>
// CHECK: greater %[[A]], %[[B]] : (tensor<5xf32>, tensor<5xf32>) -> tensor<5xi1>
// CHECK-NOT: cast
// CHECK: add %{{.*}}, %{{.*}} : (tensor<5xf32>, tensor<5xf32>) -> tensor<5xf32>
mithril.model @Brain(data %x: tensor<5xbf16>, data %y: tensor<5xbf16>, data %z: tensor<5xf32>) -> (m: tensor<5xi1>, s: tensor<5xf32>) {
  %0 = mithril.greater %x, %y : (tensor<5xbf16>, tensor<5xbf16>) -> tensor<5xi1>
  %1 = mithril.add %z, %z : (tensor<5xf32>, tensor<5xf32>) -> tensor<5xf32>
  mithril.output %0, %1 : tensor<5xi1>, tensor<5xf32>
}
