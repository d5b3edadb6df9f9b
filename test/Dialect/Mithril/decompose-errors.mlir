// What mithril-decompose cannot expand is an error on the op.
// RUN: mithril-opt %s -mithril-decompose -verify-diagnostics -split-input-file

mithril.model @polynomial_features_dynamic(data %x: tensor<4x?xf32>) -> (y: tensor<4x?xf32>) {
  // expected-error @below {{'mithril.polynomial_features' op needs a static number of feature columns at degree 2 (the input is 4x?): give the input's column count in its shape}}
  %0 = mithril.polynomial_features %x {degree = 2 : i64} : (tensor<4x?xf32>) -> tensor<4x?xf32>
  mithril.output %0 : tensor<4x?xf32>
}
