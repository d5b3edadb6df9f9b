// RUN: mithril-opt %s --mithril-lower-multi-reductions | FileCheck %s

// Upstream's inner-parallel strategy: the reduced dimension goes outermost
// (a transpose) and is reduced by elementwise ops across its rows, and so is
// an outer one. The ops around them are not touched (upstream's pass would
// have folded the add of zero away along the way).
// CHECK-LABEL: func.func @inner
// CHECK-NOT: vector.multi_reduction
// CHECK: vector.transpose %{{.+}}, [1, 0] : vector<2x8xf32> to vector<8x2xf32>
// CHECK-COUNT-8: arith.addf %{{.+}}, %{{.+}} : vector<2xf32>
// CHECK-NOT: vector.multi_reduction
func.func @inner(%v: vector<2x8xf32>, %acc: vector<2xf32>) -> vector<2xf32> {
  %r = vector.multi_reduction <add>, %v, %acc [1] : vector<2x8xf32> to vector<2xf32>
  return %r : vector<2xf32>
}

// CHECK-LABEL: func.func @outer
// CHECK: %[[DEAD:.+]] = arith.constant dense<0.000000e+00> : vector<8xf32>
// CHECK: arith.addf %{{.+}}, %[[DEAD]] : vector<8xf32>
// CHECK-NOT: vector.multi_reduction
// CHECK: arith.maximumf %{{.+}}, %{{.+}} : vector<8xf32>
// CHECK: arith.maximumf %{{.+}}, %{{.+}} : vector<8xf32>
// CHECK-NOT: vector.multi_reduction
func.func @outer(%v: vector<2x8xf32>, %acc: vector<8xf32>) -> (vector<8xf32>, vector<8xf32>) {
  %zero = arith.constant dense<0.0> : vector<8xf32>
  %same = arith.addf %acc, %zero : vector<8xf32>
  %r = vector.multi_reduction <maximumf>, %v, %acc [0] : vector<2x8xf32> to vector<8xf32>
  return %r, %same : vector<8xf32>, vector<8xf32>
}

// A function without multi-reductions is left as it is.
// CHECK-LABEL: func.func @none
// CHECK: arith.addf
func.func @none(%a: vector<8xf32>) -> vector<8xf32> {
  %zero = arith.constant dense<0.0> : vector<8xf32>
  %same = arith.addf %a, %zero : vector<8xf32>
  return %same : vector<8xf32>
}
