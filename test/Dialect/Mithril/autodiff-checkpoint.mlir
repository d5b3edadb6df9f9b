// RUN: mithril-opt %s -mithril-autodiff="checkpoint-segments=2" -canonicalize | FileCheck %s
// RUN: mithril-opt %s -mithril-autodiff -canonicalize | FileCheck %s --check-prefix=KEEP

// Gradient checkpointing in two runs of forward ops, {%a, %b} and {%c, %d}:
// %b crosses into the second run and %d is the output, so both are kept; the
// backward pass computes %c and %a again (copies marked mithril.recompute,
// with their run) just before the gradient that needs each.
// CHECK-LABEL: mithril.model @Chain
// CHECK:      %[[A:.+]] = tanh %x :
// CHECK-NEXT: %[[B:.+]] = tanh %[[A]] :
// CHECK-NEXT: %[[C:.+]] = tanh %[[B]] :
// CHECK-NEXT: %[[D:.+]] = tanh %[[C]] :
// CHECK:      %[[C2:.+]] = tanh %[[B]] {mithril.recompute = 1 : i64}
// CHECK-NEXT: multiply %[[C2]], %[[C2]]
// CHECK:      multiply %[[B]], %[[B]]
// CHECK:      %[[A2:.+]] = tanh %x {mithril.recompute = 0 : i64}
// CHECK-NEXT: multiply %[[A2]], %[[A2]]
// CHECK:      output %[[D]],

// Without checkpointing every forward value is reused.
// KEEP-LABEL: mithril.model @Chain
// KEEP-NOT:   mithril.recompute
// KEEP-COUNT-4: tanh
// KEEP-NOT:   tanh
mithril.model @Chain(param %x: tensor<8xf32>) -> (output: tensor<8xf32>) {
  %a = mithril.tanh %x : (tensor<8xf32>) -> tensor<8xf32>
  %b = mithril.tanh %a : (tensor<8xf32>) -> tensor<8xf32>
  %c = mithril.tanh %b : (tensor<8xf32>) -> tensor<8xf32>
  %d = mithril.tanh %c : (tensor<8xf32>) -> tensor<8xf32>
  mithril.output %d : tensor<8xf32>
}
