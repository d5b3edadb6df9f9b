// RUN: mithril-opt %s -mithril-quantize-int8 | FileCheck %s

// A weight compiled in (a constant, here through the Linear layer's
// transpose) is quantized when compiling: its int8 levels and per-column
// scales are constants, and only the activation is quantized per call.
// CHECK-LABEL: mithril.model @Compiled
// CHECK-DAG: %[[S:.*]] = constant dense<{{\[}}[0.00787401571, 0.0314960629]]> : tensor<1x2xf32>
// CHECK-DAG: %[[L:.*]] = constant dense<{{\[}}[127, -95], [32, 127], [-127, 0]]> : tensor<3x2xi8>
// CHECK-DAG: %[[L32:.*]] = cast %[[L]] {element_type = i32} : (tensor<3x2xi8>) -> tensor<3x2xi32>
// The levels' column sums (for the activation's zero point) are constants too.
// CHECK-DAG: %[[SUMS:.*]] = constant dense<32> : tensor<1x2xi32>
// CHECK-NOT: max %{{.*}} {axes
// CHECK: matmul %{{.*}}, %[[L32]] : (tensor<4x3xi32>, tensor<3x2xi32>) -> tensor<4x2xi32>
// CHECK-NOT: sum
// CHECK: multiply %[[SUMS]], %{{.*}}
// CHECK: multiply %{{.*}}, %[[S]]
mithril.model @Compiled(data %x: tensor<4x3xf32>) -> (y: tensor<4x2xf32>) {
  %w = mithril.constant dense<[[1.0, 0.25, -1.0], [-3.0, 4.0, 0.0]]> : tensor<2x3xf32>
  %wt = mithril.transpose %w : (tensor<2x3xf32>) -> tensor<3x2xf32>
  %0 = mithril.matmul %x, %wt : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
  mithril.output %0 : tensor<4x2xf32>
}
