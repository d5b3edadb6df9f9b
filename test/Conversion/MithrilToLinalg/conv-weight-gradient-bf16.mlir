// RUN: mithril-opt %s -split-input-file --convert-mithril-to-linalg="bf16-products=true" | FileCheck %s
// RUN: mithril-opt %s -split-input-file --convert-mithril-to-linalg | FileCheck %s --check-prefix=WIDE

// The weight gradient of bf16 values widened to f32 (mixed precision's
// casts), with bf16-products (a CPU with bf16 dot products): the flat
// weight gradient reads the bf16 tensors, the images in pairs (an odd batch
// padded with a zero image), each operand's pair interleaved element by
// element, so that a lane of the partial sums multiplies and adds both
// images' products in f32 (loops f, c, kh, kw, lane, n / 2, block, pair).
// CHECK-LABEL: func.func @WeightGradBF16(
// CHECK: %[[XP:.+]] = tensor.pad %{{.+}} low[0, 0, 0] high[1, 0, 0]
// CHECK: tensor<3x4x88xbf16> to tensor<4x4x88xbf16>
// CHECK: %[[XS:.+]] = tensor.expand_shape %[[XP]] {{\[}}[0, 1], [2], [3]] output_shape [2, 2, 4, 88] : tensor<4x4x88xbf16> into tensor<2x2x4x88xbf16>
// CHECK: %[[X:.+]] = linalg.transpose ins(%[[XS]] : tensor<2x2x4x88xbf16>) outs(%{{.+}} : tensor<2x4x88x2xbf16>) permutation = [0, 2, 3, 1]
// CHECK: %[[G:.+]] = linalg.transpose ins(%{{.+}} : tensor<2x2x8x3x16xbf16>) outs(%{{.+}} : tensor<2x8x3x16x2xbf16>) permutation = [0, 2, 3, 4, 1]
// CHECK: %[[SUMS:.+]] = linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%[[X]], %[[G]] : tensor<2x4x88x2xbf16>, tensor<2x8x3x16x2xbf16>) outs(%{{.+}} : tensor<8x4x3x3x16xf32>) attrs = {mithril.lowering_config = #mithril.lowering_config<kernel = conv_flat_weight_grad>}
// CHECK: ^bb0(%[[A:.+]]: bf16, %[[B:.+]]: bf16, %[[ACC:.+]]: f32):
// CHECK: %[[AW:.+]] = arith.extf %[[A]] : bf16 to f32
// CHECK: %[[BW:.+]] = arith.extf %[[B]] : bf16 to f32
// CHECK: %[[P:.+]] = arith.mulf %[[AW]], %[[BW]] : f32
// CHECK: arith.addf %[[ACC]], %[[P]] : f32
// CHECK: linalg.reduce ins(%[[SUMS]] : tensor<8x4x3x3x16xf32>)
// Without bf16-products the widened f32 operands are multiplied as they are.
// WIDE-LABEL: func.func @WeightGradBF16(
// WIDE-NOT: x2xbf16
// WIDE: linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]} ins(%{{.+}}, %{{.+}} : tensor<3x4x88xf32>, tensor<3x8x3x16xf32>)
mithril.model @WeightGradBF16(data %x: tensor<3x4x6x6xbf16>, data %g: tensor<3x8x6x6xbf16>) -> (dw: tensor<8x4x3x3xf32>) {
  %xw = mithril.cast %x {element_type = f32} : (tensor<3x4x6x6xbf16>) -> tensor<3x4x6x6xf32>
  %gw = mithril.cast %g {element_type = f32} : (tensor<3x8x6x6xbf16>) -> tensor<3x8x6x6xf32>
  %dw = mithril.conv_grad_weight %xw, %gw {dilation = array<i64: 1, 1>, kernel_size = array<i64: 3, 3>, padding = array<i64: 1, 1, 1, 1>, stride = array<i64: 1, 1>} : (tensor<3x4x6x6xf32>, tensor<3x8x6x6xf32>) -> tensor<8x4x3x3xf32>
  mithril.output %dw : tensor<8x4x3x3xf32>
}

// -----

// An f32 operand (not a widened bf16 value) keeps the float32 weight
// gradient: rounding it would change the result.
// CHECK-LABEL: func.func @WeightGradF32Input(
// CHECK-NOT: x2xbf16
// CHECK: iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]} ins(%{{.+}}, %{{.+}} : tensor<2x4x88xf32>, tensor<2x8x3x16xf32>)
mithril.model @WeightGradF32Input(data %x: tensor<2x4x6x6xf32>, data %g: tensor<2x8x6x6xbf16>) -> (dw: tensor<8x4x3x3xf32>) {
  %gw = mithril.cast %g {element_type = f32} : (tensor<2x8x6x6xbf16>) -> tensor<2x8x6x6xf32>
  %dw = mithril.conv_grad_weight %x, %gw {dilation = array<i64: 1, 1>, kernel_size = array<i64: 3, 3>, padding = array<i64: 1, 1, 1, 1>, stride = array<i64: 1, 1>} : (tensor<2x4x6x6xf32>, tensor<2x8x6x6xf32>) -> tensor<8x4x3x3xf32>
  mithril.output %dw : tensor<8x4x3x3xf32>
}
