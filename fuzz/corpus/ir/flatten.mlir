// RUN: mithril-opt %s -split-input-file -mithril-flatten -verify-diagnostics | FileCheck %s

// Two instances of one definition each own their parameters, named by path;
// nested instances compose their paths; bound terminals are not lifted.

mithril.model @Linear(data %input: tensor<?x?xf32>, param %weight: tensor<16x?xf32>, param %bias: tensor<16xf32>) -> (output: tensor<?x16xf32>) {
  %wt = mithril.transpose %weight : (tensor<16x?xf32>) -> tensor<?x16xf32>
  %mm = mithril.matmul %input, %wt : (tensor<?x?xf32>, tensor<?x16xf32>) -> tensor<?x16xf32>
  %y = mithril.add %mm, %bias : (tensor<?x16xf32>, tensor<16xf32>) -> tensor<?x16xf32> loc("add")
  mithril.output %y : tensor<?x16xf32>
}
mithril.model @Block(data %input: tensor<?x?xf32>, param %shared: tensor<16xf32>) -> (output: tensor<?x16xf32>) {
  %h = mithril.instance "fc" @Linear(input = %input, bias = %shared) : (tensor<?x?xf32>, tensor<16xf32>) -> tensor<?x16xf32>
  %r = mithril.relu %h : (tensor<?x16xf32>) -> tensor<?x16xf32>
  mithril.output %r : tensor<?x16xf32>
}
mithril.model @Net(data %x: tensor<4x8xf32>) -> (y: tensor<?x16xf32>) {
  %a = mithril.instance "block1" @Block(input = %x) : (tensor<4x8xf32>) -> tensor<?x16xf32>
  %b = mithril.instance "block2" @Block(input = %a) : (tensor<?x16xf32>) -> tensor<?x16xf32>
  mithril.output %b : tensor<?x16xf32>
}

// CHECK-NOT: @Linear
// CHECK-NOT: @Block
// CHECK-LABEL: mithril.model @Net(
// CHECK-SAME: data %x: tensor<4x8xf32>
// CHECK-SAME: param %block1.shared: tensor<16xf32>
// CHECK-SAME: param %block1.fc.weight: tensor<16x?xf32>
// CHECK-SAME: param %block2.shared: tensor<16xf32>
// CHECK-SAME: param %block2.fc.weight: tensor<16x?xf32>
// CHECK-SAME: -> (y: tensor<?x16xf32>)
// CHECK: %[[T1:.+]] = transpose %block1.fc.weight
// CHECK: %[[M1:.+]] = matmul %x, %[[T1]]
// CHECK: %[[A1:.+]] = add %[[M1]], %block1.shared
// CHECK: %[[R1:.+]] = relu %[[A1]]
// CHECK: %[[T2:.+]] = transpose %block2.fc.weight
// CHECK: %[[M2:.+]] = matmul %[[R1]], %[[T2]]
// CHECK: %[[A2:.+]] = add %[[M2]], %block2.shared
// CHECK: %[[R2:.+]] = relu %[[A2]]
// CHECK: output %[[R2]]
// CHECK-NOT: instance

// -----

// The locations of inlined ops carry the instance path.
// RUN: not mithril-opt %s -split-input-file -mithril-flatten -mlir-print-debuginfo 2>&1 | FileCheck %s --check-prefix=LOC
// LOC: loc("block1.fc.add"
// LOC: loc("block2.fc.add"

// -----

// A model that instantiates itself is an error.
// expected-error @+1 {{instantiates itself: @A -> @B -> @A}}
mithril.model @A(data %x: tensor<2xf32>) -> (y: tensor<2xf32>) {
  %0 = mithril.instance "b" @B(x = %x) : (tensor<2xf32>) -> tensor<2xf32>
  mithril.output %0 : tensor<2xf32>
}
mithril.model @B(data %x: tensor<2xf32>) -> (y: tensor<2xf32>) {
  %0 = mithril.instance "a" @A(x = %x) : (tensor<2xf32>) -> tensor<2xf32>
  mithril.output %0 : tensor<2xf32>
}
mithril.model @Top(data %x: tensor<2xf32>) -> (y: tensor<2xf32>) {
  %0 = mithril.instance "a" @A(x = %x) : (tensor<2xf32>) -> tensor<2xf32>
  mithril.output %0 : tensor<2xf32>
}
