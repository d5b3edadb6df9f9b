// RUN: mithril-opt %s -split-input-file -mithril-autodiff -verify-diagnostics | FileCheck %s

// Gradient rules need static shapes (found by ir_fuzzer: a dynamic reshape
// operand used to abort in the reshape builder).
// expected-error @+1 {{mithril-autodiff needs static shapes, but input terminal 'input' has type 'tensor<?x8xf32>'}}
mithril.model @Dynamic(data %input: tensor<?x8xf32>) -> (y: tensor<?x8xf32>) {
  %y = mithril.relu %input : (tensor<?x8xf32>) -> tensor<?x8xf32>
  mithril.output %y : tensor<?x8xf32>
}

// -----

mithril.model @DynamicResult(data %input: tensor<2x8xf32>) -> (y: tensor<f32>) {
  // expected-error @+1 {{mithril-autodiff needs static shapes, but this result has type 'tensor<?xf32>'}}
  %r = mithril.reshape %input {shape = array<i64: -1>} : (tensor<2x8xf32>) -> tensor<?xf32>
  %y = mithril.sum %r {axes = array<i64: 0>, keepdim = false} : (tensor<?xf32>) -> tensor<f32>
  mithril.output %y : tensor<f32>
}

// -----

// Every op that carries a differentiated value needs a gradient rule
// (GradientOpInterface); the gradient primitives have none (no second order).
mithril.model @SecondOrder(param %g: tensor<1x1x2x2xf32>) -> (y: tensor<1x1x4x4xf32>) {
  // expected-error @+1 {{'mithril.avg_pool_grad' op has no gradient rule (GradientOpInterface); mithril-autodiff cannot differentiate through it}}
  %y = mithril.avg_pool_grad %g {dilation = array<i64: 1, 1>, input_spatial = array<i64: 4, 4>, kernel_size = array<i64: 2, 2>, padding = array<i64: 0, 0, 0, 0>, stride = array<i64: 2, 2>} : (tensor<1x1x2x2xf32>) -> tensor<1x1x4x4xf32>
  mithril.output %y : tensor<1x1x4x4xf32>
}

// -----

// An op whose gradient is zero (the interface's default) is no error, and
// gives a zero gradient.
// CHECK-LABEL: mithril.model @ZeroGradient
mithril.model @ZeroGradient(param %x: tensor<3xf32>) -> (y: tensor<3xf32>) {
  // CHECK: %[[ZERO:.*]] = constant dense<0.000000e+00> : tensor<3xf32>
  // CHECK: output %{{.*}}, %[[ZERO]]
  %y = mithril.sign %x : (tensor<3xf32>) -> tensor<3xf32>
  mithril.output %y : tensor<3xf32>
}

// -----

// A custom call without a gradient function stops autodiff where a
// differentiated value flows into it.
mithril.model @CustomNoGradient(param %w: tensor<4xf32>) -> (y: tensor<4xf32>) {
  // expected-error @+1 {{'mithril.custom_call' op @swish has no gradient function, and its operand 0 is differentiated: register one with the primitive}}
  %y = mithril.custom_call %w {callee = "swish"} : (tensor<4xf32>) -> tensor<4xf32>
  mithril.output %y : tensor<4xf32>
}
