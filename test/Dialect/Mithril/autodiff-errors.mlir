// RUN: mithril-opt %s -split-input-file -mithril-autodiff -verify-diagnostics

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
