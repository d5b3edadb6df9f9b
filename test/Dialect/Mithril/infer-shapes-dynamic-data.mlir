// RUN: mithril-opt %s -mithril-infer-shapes | FileCheck %s
// RUN: mithril-opt %s -mithril-infer-shapes="dynamic-data=true" | FileCheck %s --check-prefix=DYN

// Broadcasting gives an unknown size the other operand's, unless the value is
// computed from a data input left dynamic on purpose (dynamic-data): then it
// may be 1 at run time, and only the result takes the full size.
// CHECK-LABEL: mithril.model @broadcast_pins
// CHECK-SAME: data %x: tensor<3x4xf32>
// DYN-LABEL: mithril.model @broadcast_pins
// DYN-SAME: data %x: tensor<?x4xf32>
// DYN: relu %{{.*}} : (tensor<?x4xf32>) -> tensor<?x4xf32>
// DYN: add %{{.*}}, %{{.*}} : (tensor<?x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
mithril.model @broadcast_pins(data %x: tensor<?x4xf32>, param %b: tensor<3x4xf32>) -> (y: tensor<3x4xf32>) {
  %r = mithril.relu %x : (tensor<?x4xf32>) -> tensor<?x4xf32>
  %0 = mithril.add %r, %b : (tensor<?x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
  mithril.output %0 : tensor<3x4xf32>
}

// A parameter of unknown size still learns it from the data it meets.
// CHECK-LABEL: mithril.model @param_learns
// CHECK-SAME: param %b: tensor<16xf32>
// DYN-LABEL: mithril.model @param_learns
// DYN-SAME: param %b: tensor<16xf32>
mithril.model @param_learns(data %x: tensor<?x16xf32>, param %b: tensor<?xf32>) -> (y: tensor<?x16xf32>) {
  %0 = mithril.add %x, %b : (tensor<?x16xf32>, tensor<?xf32>) -> tensor<?x16xf32>
  mithril.output %0 : tensor<?x16xf32>
}

// A parameter given a '?' size (a trainable input of dynamic batch) stays
// dynamic like data.
// RUN: mithril-opt %s -mithril-infer-shapes="dynamic-data=true entry=param_given_dynamic shapes=p:?x4" | FileCheck %s --check-prefix=GIVEN
// GIVEN-LABEL: mithril.model @param_given_dynamic
// GIVEN-SAME: param %p: tensor<?x4xf32>
// GIVEN: minimum %p, %b : (tensor<?x4xf32>, tensor<1x4xf32>) -> tensor<?x4xf32>
mithril.model @param_given_dynamic(param %p: tensor<?x4xf32>, param %b: tensor<1x4xf32>) -> (y: tensor<?x4xf32>) {
  %0 = mithril.minimum %p, %b : (tensor<?x4xf32>, tensor<1x4xf32>) -> tensor<?x4xf32>
  mithril.output %0 : tensor<?x4xf32>
}
