// RUN: mithril-opt %s -mithril-quantize-int8 | FileCheck %s

// A Linear layer's product (data times a transposed parameter) becomes an
// integer matmul of int8 levels, scaled back; a product of two data values
// stays in float.
// CHECK-LABEL: mithril.model @Layer
// CHECK: %[[WT:.*]] = transpose %w
// CHECK-DAG: max %{{.*}} : (tensor<4x8xf32>) -> tensor<f32>
// CHECK-DAG: max %{{.*}} {axes = array<i64: 0>, keepdim = true} : (tensor<8x3xf32>) -> tensor<1x3xf32>
// CHECK-DAG: floor_divide
// CHECK: %[[ACC:.*]] = matmul %{{.*}}, %{{.*}} : (tensor<4x8xi32>, tensor<8x3xi32>) -> tensor<4x3xi32>
// CHECK: %[[Y:.*]] = cast %[[ACC]] {element_type = f32} : (tensor<4x3xi32>) -> tensor<4x3xf32>
// CHECK: matmul %x, %x2 : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
mithril.model @Layer(data %x: tensor<4x8xf32>, param %w: tensor<3x8xf32>, data %x2: tensor<8x8xf32>) -> (y: tensor<4x3xf32>, z: tensor<4x8xf32>) {
  %wt = mithril.transpose %w : (tensor<3x8xf32>) -> tensor<8x3xf32>
  %0 = mithril.matmul %x, %wt : (tensor<4x8xf32>, tensor<8x3xf32>) -> tensor<4x3xf32>
  %1 = mithril.matmul %x, %x2 : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  mithril.output %0, %1 : tensor<4x3xf32>, tensor<4x8xf32>
}
