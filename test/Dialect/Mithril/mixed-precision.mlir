// RUN: mithril-opt %s -split-input-file -mithril-mixed-precision | FileCheck %s
// RUN: mithril-opt %s -split-input-file -mithril-mixed-precision="type=f16 terminals=true" | FileCheck %s --check-prefix=HALF
// RUN: not mithril-opt %s -split-input-file -mithril-mixed-precision="type=f8" 2>&1 | FileCheck %s --check-prefix=BAD

// Mixed precision: float32 terminals, bf16 values between the ops, casts at
// the edges; the constant is rounded (0.1 is 0.10009765625 in bf16) and the
// cast to the model's float type follows.
// CHECK-LABEL: mithril.model @Mlp
// CHECK-SAME: (data %[[X:.*]]: tensor<2x3xf32>, param %[[W:.*]]: tensor<3x4xf32>) -> (y: tensor<2x4xf32>)
// CHECK-DAG: %[[XB:.*]] = cast %[[X]] {element_type = bf16} : (tensor<2x3xf32>) -> tensor<2x3xbf16>
// CHECK-DAG: %[[WB:.*]] = cast %[[W]] {element_type = bf16} : (tensor<3x4xf32>) -> tensor<3x4xbf16>
// CHECK: %[[M:.*]] = matmul %[[XB]], %[[WB]] : (tensor<2x3xbf16>, tensor<3x4xbf16>) -> tensor<2x4xbf16>
// CHECK: %[[C:.*]] = constant dense<1.000980e-01> : tensor<bf16>
// CHECK: %[[S:.*]] = multiply %[[M]], %[[C]] : (tensor<2x4xbf16>, tensor<bf16>) -> tensor<2x4xbf16>
// CHECK: %[[I:.*]] = cast %{{.*}} {element_type = bf16} : (tensor<2x4xi1>) -> tensor<2x4xbf16>
// CHECK: %[[Y:.*]] = cast %{{.*}} {element_type = f32} : (tensor<2x4xbf16>) -> tensor<2x4xf32>
// CHECK: output %[[Y]] : tensor<2x4xf32>
// HALF-LABEL: mithril.model @Mlp
// HALF-SAME: (data %[[X:.*]]: tensor<2x3xf16>, param %[[W:.*]]: tensor<3x4xf16>) -> (y: tensor<2x4xf16>)
// HALF-NOT: cast %[[X]]
// HALF: matmul %[[X]], %[[W]] : (tensor<2x3xf16>, tensor<3x4xf16>) -> tensor<2x4xf16>
// BAD: unknown type 'f8' (expected bf16 or f16)
mithril.model @Mlp(data %x: tensor<2x3xf32>, param %w: tensor<3x4xf32>) -> (y: tensor<2x4xf32>) {
  %0 = mithril.matmul %x, %w : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  %c = mithril.constant dense<0.1> : tensor<f32>
  %1 = mithril.multiply %0, %c : (tensor<2x4xf32>, tensor<f32>) -> tensor<2x4xf32>
  %z = mithril.constant dense<0.0> : tensor<f32>
  %2 = mithril.greater %1, %z : (tensor<2x4xf32>, tensor<f32>) -> tensor<2x4xi1>
  %3 = mithril.cast %2 {element_type = f32} : (tensor<2x4xi1>) -> tensor<2x4xf32>
  %4 = mithril.add %1, %3 : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  mithril.output %4 : tensor<2x4xf32>
}

// -----

// A constant's values round to the nearest bf16, ties to even, on the bits:
// 1 + 2^-8 (a tie) to 1, 1 + 3 * 2^-8 to 1 + 2^-6, the largest float32 to
// infinity, the smallest subnormal to 0, the subnormal tie 0x00018000 to
// 0x0002, a NaN to the quiet NaN, -inf to -inf, -(1 - 2^-24) to -1.
// CHECK-LABEL: mithril.model @Rounding
// CHECK: constant dense<[1.000000e+00, 1.015630e+00, 0x7F80, 0.000000e+00, 1.836710e-40, 0x7FC0, 0xFF80, -1.000000e+00]> : tensor<8xbf16>
mithril.model @Rounding(data %x: tensor<8xf32>) -> (y: tensor<8xf32>) {
  %c = mithril.constant dense<"0x0080803F0080813FFFFF7F7F01000000008001000100C07F000080FFFFFF7FBF"> : tensor<8xf32>
  %0 = mithril.add %x, %c : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  mithril.output %0 : tensor<8xf32>
}
