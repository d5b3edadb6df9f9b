// RUN: mithril-opt %s --mithril-flatten --mithril-expose-sizes | FileCheck %s

// The distinct values of a submodel's output reach the root's output
// `labels`, which gets its size as `labels:size`; other outputs are left.
// CHECK-LABEL: mithril.model @Root(
// CHECK-SAME: -> (labels: tensor<?xi64>, y: tensor<?xf32>, "labels:size": tensor<i64>)
// CHECK: %[[V:.+]], %[[N:.+]] = unique
// CHECK: output %[[V]], %{{.+}}, %[[N]]
mithril.model @Distinct(data %x: tensor<?xi64>) -> (out: tensor<?xi64>) {
  %v, %n = mithril.unique %x : (tensor<?xi64>) -> (tensor<?xi64>, tensor<i64>)
  mithril.output %v : tensor<?xi64>
}

mithril.model @Root(data %x: tensor<?xi64>, data %f: tensor<?xf32>) -> (labels: tensor<?xi64>, y: tensor<?xf32>) {
  %u = mithril.instance "d" @Distinct(x = %x) : (tensor<?xi64>) -> tensor<?xi64>
  %y = mithril.relu %f : (tensor<?xf32>) -> tensor<?xf32>
  mithril.output %u, %y : tensor<?xi64>, tensor<?xf32>
}
