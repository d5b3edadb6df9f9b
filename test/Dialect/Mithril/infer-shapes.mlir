// RUN: mithril-opt %s -split-input-file -mithril-infer-shapes="shapes=input:4x8" -verify-diagnostics | FileCheck %s

// Forward rules fix the batch; backward rules fix the weight's input
// dimension from the data it multiplies.
// CHECK-LABEL: mithril.model @Linear(
// CHECK-SAME: data %input: tensor<4x8xf32>, param %weight: tensor<32x8xf32>, param %bias: tensor<32xf32>) -> (output: tensor<4x32xf32>)
// CHECK: transpose %weight : (tensor<32x8xf32>) -> tensor<8x32xf32>
// CHECK: matmul %input, %{{.*}} : (tensor<4x8xf32>, tensor<8x32xf32>) -> tensor<4x32xf32>
// CHECK: add %{{.*}}, %bias : (tensor<4x32xf32>, tensor<32xf32>) -> tensor<4x32xf32>
mithril.model @Linear(data %input: tensor<?x?xf32>, param %weight: tensor<32x?xf32>, param %bias: tensor<32xf32>) -> (output: tensor<?x32xf32>) {
  %wt = mithril.transpose %weight : (tensor<32x?xf32>) -> tensor<?x32xf32>
  %mm = mithril.matmul %input, %wt : (tensor<?x?xf32>, tensor<?x32xf32>) -> tensor<?x32xf32>
  %y = mithril.add %mm, %bias : (tensor<?x32xf32>, tensor<32xf32>) -> tensor<?x32xf32>
  mithril.output %y : tensor<?x32xf32>
}

// -----

// A convolution fixes its weight's input channels; pooling follows.
// CHECK-LABEL: mithril.model @Conv(
// CHECK-SAME: data %input: tensor<4x8xf32>, param %w: tensor<6x4x3xf32>
// CHECK-SAME: -> (y: tensor<6x6xf32>)
mithril.model @Conv(data %input: tensor<?x?xf32>, param %w: tensor<6x?x3xf32>) -> (y: tensor<?x?xf32>) {
  %r = mithril.reshape %input {shape = array<i64: 1, 4, -1>} : (tensor<?x?xf32>) -> tensor<1x4x?xf32>
  %c = mithril.conv1d %r, %w {dilation = array<i64: 1>, padding = array<i64: 0, 0>, stride = array<i64: 1>} : (tensor<1x4x?xf32>, tensor<6x?x3xf32>) -> tensor<1x6x?xf32>
  %s = mithril.squeeze %c {axes = array<i64: 0>} : (tensor<1x6x?xf32>) -> tensor<6x?xf32>
  mithril.output %s : tensor<6x?xf32>
}

// -----

// A given shape that conflicts with the declared one names the terminal.
// expected-error @+1 {{input terminal 'input' is declared as 3x8 but was given shape 4x8}}
mithril.model @Declared(data %input: tensor<3x8xf32>) -> (y: tensor<3x8xf32>) {
  mithril.output %input : tensor<3x8xf32>
}

// -----

// Shapes that conflict inside the model name both terminals and shapes.
mithril.model @Conflict(data %input: tensor<?x?xf32>, param %other: tensor<5x9xf32>) -> (y: tensor<?x?xf32>) {
  // expected-error @+1 {{'mithril.add' cannot broadcast terminal 'input' (4x8) with terminal 'other' (5x9)}}
  %0 = mithril.add %input, %other : (tensor<?x?xf32>, tensor<5x9xf32>) -> tensor<?x?xf32>
  mithril.output %0 : tensor<?x?xf32>
}

// -----

// expected-error @+1 {{has no input terminal 'input' (its inputs are 'x', 'y')}}
mithril.model @Unknown(data %x: tensor<?xf32>, data %y: tensor<?xf32>) -> (z: tensor<?xf32>) {
  mithril.output %x : tensor<?xf32>
}


// -----

// A parameter's size that only a partner's 1 meets, with nothing else fixing
// the result (LayerNorm over a last axis of 1), defaults to 1; a data
// input's unknown size does not.
// CHECK-LABEL: mithril.model @UnitScale(
// CHECK-SAME: data %input: tensor<4x8xf32>, data %x: tensor<2x1xf32>, param %w: tensor<1xf32>, param %v: tensor<3xf32>, data %d: tensor<?xf32>
// CHECK: multiply %x, %w : (tensor<2x1xf32>, tensor<1xf32>) -> tensor<2x1xf32>
// CHECK: multiply %x, %d : (tensor<2x1xf32>, tensor<?xf32>) -> tensor<2x?xf32>
mithril.model @UnitScale(data %input: tensor<4x8xf32>, data %x: tensor<2x1xf32>, param %w: tensor<?xf32>, param %v: tensor<?xf32>, data %d: tensor<?xf32>) -> (y: tensor<?x?xf32>, z: tensor<?x3xf32>, u: tensor<?x?xf32>) {
  %y = mithril.multiply %x, %w : (tensor<2x1xf32>, tensor<?xf32>) -> tensor<?x?xf32>
  %z = mithril.multiply %x, %v : (tensor<2x1xf32>, tensor<?xf32>) -> tensor<?x3xf32>
  %u = mithril.multiply %x, %d : (tensor<2x1xf32>, tensor<?xf32>) -> tensor<?x?xf32>
  mithril.output %y, %z, %u : tensor<?x?xf32>, tensor<?x3xf32>, tensor<?x?xf32>
}
