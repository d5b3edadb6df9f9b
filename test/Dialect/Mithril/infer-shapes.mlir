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

// layer_norm's weight and bias take the normalized axis' size (a broadcasting
// multiply would have let a later [?, 2] give a weight of 2 for an axis of 1).
// CHECK-LABEL: mithril.model @LayerNormTies(
// CHECK-SAME: data %x: tensor<3x1xf32>, param %w: tensor<1xf32>, param %b: tensor<1xf32>
mithril.model @LayerNormTies(data %input: tensor<4x8xf32>, data %x: tensor<3x1xf32>, param %w: tensor<?xf32>, param %b: tensor<?xf32>, data %y: tensor<3x2xf32>) -> (z: tensor<3x2xf32>) {
  %0 = mithril.layer_norm %x, %w, %b {scaled = true, shifted = true} : (tensor<3x1xf32>, tensor<?xf32>, tensor<?xf32>) -> tensor<3x1xf32>
  %1 = mithril.add %0, %y : (tensor<3x1xf32>, tensor<3x2xf32>) -> tensor<3x2xf32>
  mithril.output %1 : tensor<3x2xf32>
}

// -----

// Every broadcasting elementwise op runs its shape rule backward, losses
// included: a weight whose rows only the loss target gives gets them.
// CHECK-LABEL: mithril.model @LossGivesRows(
// CHECK-SAME: param %weight: tensor<3x8xf32>
// CHECK: squared_error %{{.*}}, %target : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
mithril.model @LossGivesRows(data %input: tensor<?x?xf32>, param %weight: tensor<?x?xf32>, data %target: tensor<4x3xf32>) -> (loss: tensor<?x?xf32>) {
  %wt = mithril.transpose %weight : (tensor<?x?xf32>) -> tensor<?x?xf32>
  %mm = mithril.matmul %input, %wt : (tensor<?x?xf32>, tensor<?x?xf32>) -> tensor<?x?xf32>
  %l = mithril.squared_error %mm, %target : (tensor<?x?xf32>, tensor<4x3xf32>) -> tensor<?x?xf32>
  mithril.output %l : tensor<?x?xf32>
}

// -----

// Every elementwise op of one operand keeps its shape both ways (the
// Elementwise trait), gelu and sine included.
// CHECK-LABEL: mithril.model @UnaryBackward(
// CHECK-SAME: param %w: tensor<8xf32>
mithril.model @UnaryBackward(data %input: tensor<?x?xf32>, param %w: tensor<?xf32>) -> (y: tensor<?x?xf32>) {
  %g = mithril.gelu %w : (tensor<?xf32>) -> tensor<?xf32>
  %s = mithril.sin %g : (tensor<?xf32>) -> tensor<?xf32>
  %y = mithril.add %input, %s : (tensor<?x?xf32>, tensor<?xf32>) -> tensor<?x?xf32>
  mithril.output %y : tensor<?x?xf32>
}
