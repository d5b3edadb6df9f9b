// RUN: mithril-opt %s -canonicalize -split-input-file | FileCheck %s

// CHECK-LABEL: @identities
// CHECK-NEXT: output %x, %x, %x, %x
mithril.model @identities(data %x: tensor<4x8xf32>) -> (a: tensor<4x8xf32>, b: tensor<4x8xf32>, c: tensor<4x8xf32>, d: tensor<4x8xf32>) {
  %zero = mithril.constant dense<0.0> : tensor<f32>
  %one = mithril.constant dense<1.0> : tensor<8xf32>
  %0 = mithril.add %x, %zero : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %1 = mithril.multiply %one, %x : (tensor<8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %2 = mithril.transpose %x : (tensor<4x8xf32>) -> tensor<8x4xf32>
  %3 = mithril.transpose %2 : (tensor<8x4xf32>) -> tensor<4x8xf32>
  %4 = mithril.negate %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %5 = mithril.negate %4 : (tensor<4x8xf32>) -> tensor<4x8xf32>
  mithril.output %0, %1, %3, %5 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// Adding zero that broadcasts to a larger shape is not an identity.
// CHECK-LABEL: @broadcasting_zero
// CHECK: add
mithril.model @broadcasting_zero(data %x: tensor<8xf32>) -> (a: tensor<4x8xf32>) {
  %zero = mithril.constant dense<0.0> : tensor<4x8xf32>
  %0 = mithril.add %x, %zero : (tensor<8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  mithril.output %0 : tensor<4x8xf32>
}

// -----

// CHECK-LABEL: @reshapes
// CHECK-NEXT: %[[R:.+]] = reshape %x {shape = array<i64: 2, -1>}
// CHECK-NEXT: output %[[R]]
mithril.model @reshapes(data %x: tensor<4x8xf32>) -> (a: tensor<2x16xf32>) {
  %0 = mithril.reshape %x {shape = array<i64: 32>} : (tensor<4x8xf32>) -> tensor<32xf32>
  %1 = mithril.reshape %0 {shape = array<i64: 2, -1>} : (tensor<32xf32>) -> tensor<2x16xf32>
  mithril.output %1 : tensor<2x16xf32>
}

// -----

// Small constant expressions fold; transposes compose.
// CHECK-LABEL: @constants
// CHECK-NEXT: %[[C:.+]] = constant dense<[4.000000e+00, 6.000000e+00]> : tensor<2xf32>
// CHECK-NEXT: %[[T:.+]] = transpose %y {permutation = array<i64: 1, 2, 0>}
// CHECK-NEXT: output %[[C]], %[[T]]
mithril.model @constants(data %y: tensor<2x3x4xf32>) -> (a: tensor<2xf32>, b: tensor<3x4x2xf32>) {
  %a = mithril.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %b = mithril.constant dense<[3.0, 4.0]> : tensor<2xf32>
  %0 = mithril.add %a, %b : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %1 = mithril.transpose %y {permutation = array<i64: 1, 0, 2>} : (tensor<2x3x4xf32>) -> tensor<3x2x4xf32>
  %2 = mithril.transpose %1 {permutation = array<i64: 0, 2, 1>} : (tensor<3x2x4xf32>) -> tensor<3x4x2xf32>
  mithril.output %0, %2 : tensor<2xf32>, tensor<3x4x2xf32>
}

// -----

// A Linear layer's weight gradient, (x^T dy)^T, becomes dy^T x: the input
// and the product are no longer transposed, only the smaller dy.
// CHECK-LABEL: @weight_gradient
// CHECK: %[[DYT:.+]] = transpose %dy {permutation = array<i64: 1, 0>} : (tensor<64x512xf32>) -> tensor<512x64xf32>
// CHECK: %[[DW:.+]] = matmul %[[DYT]], %x : (tensor<512x64xf32>, tensor<64x784xf32>) -> tensor<512x784xf32>
// CHECK: output %[[DW]]
mithril.model @weight_gradient(data %x: tensor<64x784xf32>, data %dy: tensor<64x512xf32>) -> (dw: tensor<512x784xf32>) {
  %xt = mithril.transpose %x {permutation = array<i64: 1, 0>} : (tensor<64x784xf32>) -> tensor<784x64xf32>
  %p = mithril.matmul %xt, %dy : (tensor<784x64xf32>, tensor<64x512xf32>) -> tensor<784x512xf32>
  %dw = mithril.transpose %p {permutation = array<i64: 1, 0>} : (tensor<784x512xf32>) -> tensor<512x784xf32>
  mithril.output %dw : tensor<512x784xf32>
}

// -----

// Not when no operand's transpose folds, nor when the transposes left would
// move more than the product's: transpose(a b) stays.
// CHECK-LABEL: @transposed_product_kept
// CHECK: %[[P:.+]] = matmul %a, %b
// CHECK: transpose %[[P]]
// CHECK: %[[Q:.+]] = matmul %[[CT:.+]], %d : (tensor<4x256xf32>, tensor<256x4xf32>) -> tensor<4x4xf32>
// CHECK: transpose %[[Q]]
mithril.model @transposed_product_kept(data %a: tensor<8x16xf32>, data %b: tensor<16x4xf32>, data %c: tensor<256x4xf32>, data %d: tensor<256x4xf32>) -> (x: tensor<4x8xf32>, y: tensor<4x4xf32>) {
  %p = mithril.matmul %a, %b : (tensor<8x16xf32>, tensor<16x4xf32>) -> tensor<8x4xf32>
  %x = mithril.transpose %p {permutation = array<i64: 1, 0>} : (tensor<8x4xf32>) -> tensor<4x8xf32>
  %ct = mithril.transpose %c {permutation = array<i64: 1, 0>} : (tensor<256x4xf32>) -> tensor<4x256xf32>
  %q = mithril.matmul %ct, %d : (tensor<4x256xf32>, tensor<256x4xf32>) -> tensor<4x4xf32>
  %y = mithril.transpose %q {permutation = array<i64: 1, 0>} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  mithril.output %x, %y : tensor<4x8xf32>, tensor<4x4xf32>
}
