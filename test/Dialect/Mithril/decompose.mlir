// RUN: mithril-opt %s -mithril-decompose | FileCheck %s

// CHECK-LABEL: @softmax
// CHECK: %[[MAX:.+]] = max %x {axes = array<i64: 1>, keepdim = true}
// CHECK: %[[STOP:.+]] = stop_gradient %[[MAX]]
// CHECK: %[[SH:.+]] = subtract %x, %[[STOP]]
// CHECK: %[[E:.+]] = exp %[[SH]]
// CHECK: %[[S:.+]] = sum %[[E]] {axes = array<i64: 1>, keepdim = true}
// The sum is at least 1: its reciprocal may stand for it.
// CHECK: divide %[[E]], %[[S]] {reciprocal}
// CHECK-NOT: softmax
mithril.model @softmax(data %x: tensor<2x5xf32>) -> (y: tensor<2x5xf32>) {
  %0 = mithril.softmax %x {axis = 1 : i64} : (tensor<2x5xf32>) -> tensor<2x5xf32>
  mithril.output %0 : tensor<2x5xf32>
}

// CHECK-LABEL: @cross_entropy
// CHECK: %[[L:.+]] = log %{{.+}} : (tensor<4x1xf32>)
// CHECK: %[[LS:.+]] = subtract %{{.+}}, %[[L]] : (tensor<4x3xf32>, tensor<4x1xf32>)
// CHECK: cross_entropy %[[LS]], %t {from_log_probs = true}
mithril.model @cross_entropy(data %p: tensor<4x3xf32>, data %t: tensor<4xi64>) -> (l: tensor<4xf32>) {
  %0 = mithril.cross_entropy %p, %t {from_logits = true} : (tensor<4x3xf32>, tensor<4xi64>) -> tensor<4xf32>
  mithril.output %0 : tensor<4xf32>
}

// CHECK-LABEL: @layer_norm
// CHECK: %[[EPS:.+]] = constant dense<9.99999974E-6> : tensor<f32>
// The mean is corrected once by the mean of what it leaves (a row of equal
// values then centers to zeros exactly).
// CHECK: %[[MEAN0:.+]] = mean %x {axes = array<i64: 1>, keepdim = true}
// CHECK: %[[R:.+]] = subtract %x, %[[MEAN0]]
// CHECK: %[[RM:.+]] = mean %[[R]] {axes = array<i64: 1>, keepdim = true}
// CHECK: %[[MEAN:.+]] = add %[[MEAN0]], %[[RM]]
// CHECK: %[[C:.+]] = subtract %x, %[[MEAN]]
// CHECK: %[[SQ:.+]] = square %[[C]]
// CHECK: %[[VAR:.+]] = mean %[[SQ]]
// CHECK: %[[VE:.+]] = add %[[VAR]], %[[EPS]]
// CHECK: %[[D:.+]] = sqrt %[[VE]]
// CHECK: divide %[[C]], %[[D]] {reciprocal}
mithril.model @layer_norm(data %x: tensor<2x5xf32>) -> (y: tensor<2x5xf32>) {
  %0 = mithril.layer_norm %x : (tensor<2x5xf32>) -> tensor<2x5xf32>
  mithril.output %0 : tensor<2x5xf32>
}

// With a weight and a bias: the normalized value times the one, plus the
// other.
// CHECK-LABEL: @layer_norm_affine
// CHECK: %[[N:.+]] = divide
// CHECK: %[[S:.+]] = multiply %[[N]], %w
// CHECK: add %[[S]], %b
mithril.model @layer_norm_affine(data %x: tensor<2x5xf32>, param %w: tensor<5xf32>, param %b: tensor<5xf32>) -> (y: tensor<2x5xf32>) {
  %0 = mithril.layer_norm %x, %w, %b {scaled = true, shifted = true} : (tensor<2x5xf32>, tensor<5xf32>, tensor<5xf32>) -> tensor<2x5xf32>
  mithril.output %0 : tensor<2x5xf32>
}

// A robust function is a select between a linear piece and the plain
// function of a safe operand.
// CHECK-LABEL: @robust_sqrt
// CHECK-DAG: %[[T:.+]] = constant dense<2.2250738585072014E-308> : tensor<f64>
// CHECK-DAG: %[[ONE:.+]] = constant dense<1.000000e+00> : tensor<f64>
// CHECK: %[[A:.+]] = abs %x
// CHECK: %[[C:.+]] = less %[[A]], %[[T]]
// CHECK: %[[SMALL:.+]] = multiply %[[A]], %{{.+}}
// CHECK: %[[SAFE:.+]] = where %[[C]], %[[ONE]], %[[A]]
// CHECK: %[[BIG:.+]] = sqrt %[[SAFE]]
// CHECK: where %[[C]], %[[SMALL]], %[[BIG]]
// CHECK-NOT: robust_sqrt
mithril.model @robust_sqrt(data %x: tensor<3xf64>) -> (y: tensor<3xf64>) {
  %0 = mithril.robust_sqrt %x : (tensor<3xf64>) -> tensor<3xf64>
  mithril.output %0 : tensor<3xf64>
}

// CHECK-LABEL: @robust_power
// CHECK: %[[A:.+]] = abs %b
// CHECK: %[[LOGA:.+]] = log %[[A]]
// CHECK: %[[C:.+]] = logical_and
// CHECK-DAG: %[[SA:.+]] = where %[[C]], %{{.+}}, %[[A]]
// CHECK-DAG: %[[SE:.+]] = where %[[C]], %{{.+}}, %e
// CHECK: %[[P:.+]] = power %[[SA]], %[[SE]]
// CHECK: where %[[C]], %{{.+}}, %[[P]]
mithril.model @robust_power(data %b: tensor<3xf32>, data %e: tensor<f32>) -> (y: tensor<3xf32>) {
  %0 = mithril.robust_power %b, %e : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
  mithril.output %0 : tensor<3xf32>
}

// Monomials in combinations-with-replacement order: x0, x1, x0^2, x0 x1, x1^2.
// CHECK-LABEL: @polynomial_features
// CHECK: %[[X0:.+]] = slice %x {axes = array<i64: 1>, start = array<i64: 0>, step = array<i64: 1>, stop = array<i64: 1>}
// CHECK: %[[X1:.+]] = slice %x {axes = array<i64: 1>, start = array<i64: 1>, step = array<i64: 1>, stop = array<i64: 2>}
// CHECK: %[[X00:.+]] = multiply %[[X0]], %[[X0]]
// CHECK: %[[X01:.+]] = multiply %[[X0]], %[[X1]]
// CHECK: %[[X11:.+]] = multiply %[[X1]], %[[X1]]
// CHECK: concat %[[X0]], %[[X1]], %[[X00]], %[[X01]], %[[X11]] {axis = 1 : i64} : {{.*}} -> tensor<4x5xf32>
mithril.model @polynomial_features(data %x: tensor<4x2xf32>) -> (y: tensor<4x5xf32>) {
  %0 = mithril.polynomial_features %x {degree = 2 : i64} : (tensor<4x2xf32>) -> tensor<4x5xf32>
  mithril.output %0 : tensor<4x5xf32>
}

// At degree 1 the monomials are the columns: the input itself, also when the
// column count is dynamic.
// CHECK-LABEL: @polynomial_features_degree_one
// CHECK-NOT: polynomial_features
// CHECK: output %x
mithril.model @polynomial_features_degree_one(data %x: tensor<4x?xf32>) -> (y: tensor<4x?xf32>) {
  %0 = mithril.polynomial_features %x {degree = 1 : i64} : (tensor<4x?xf32>) -> tensor<4x?xf32>
  mithril.output %0 : tensor<4x?xf32>
}
