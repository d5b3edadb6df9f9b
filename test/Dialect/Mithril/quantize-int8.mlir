// RUN: mithril-opt %s -mithril-quantize-int8 | FileCheck %s

// A Linear layer's product (data times a transposed parameter) becomes an
// integer matmul of int8 levels, scaled back; a product of two data values
// stays in float. The weight is symmetric per output (per row of its own
// [out, in] layout, where it is quantized: only its bytes are transposed),
// its levels w * (1 / s); the activation is unsigned over its range [min,
// max] (zero included) with a zero point, stored offset by -128, and the
// product corrected by (128 - zero point) times each output's sum of levels.
// CHECK-LABEL: mithril.model @Layer
// CHECK: %[[ABS:.*]] = abs %w : (tensor<3x8xf32>) -> tensor<3x8xf32>
// CHECK: %[[AMAX:.*]] = max %[[ABS]] {axes = array<i64: 1>, keepdim = true} : (tensor<3x8xf32>) -> tensor<3x1xf32>
// CHECK: %[[INV:.*]] = divide %{{.*}}, %{{.*}} : (tensor<f32>, tensor<3x1xf32>) -> tensor<3x1xf32>
// CHECK: multiply %w, %[[INV]] : (tensor<3x8xf32>, tensor<3x1xf32>) -> tensor<3x8xf32>
// CHECK: %[[BYTES:.*]] = cast %{{.*}} {element_type = i8} : (tensor<3x8xf32>) -> tensor<3x8xi8>
// CHECK: %[[ROWS:.*]] = cast %[[BYTES]] {element_type = i32} : (tensor<3x8xi8>) -> tensor<3x8xi32>
// CHECK: %[[WT:.*]] = transpose %[[BYTES]] {permutation = array<i64: 1, 0>} : (tensor<3x8xi8>) -> tensor<8x3xi8>
// CHECK: %[[WL:.*]] = cast %[[WT]] {element_type = i32} : (tensor<8x3xi8>) -> tensor<8x3xi32>
// CHECK-DAG: min %x : (tensor<4x8xf32>) -> tensor<f32>
// CHECK-DAG: max %x : (tensor<4x8xf32>) -> tensor<f32>
// CHECK-DAG: constant dense<2.550000e+02>
// CHECK: %[[XL:.*]] = cast %{{.*}} {element_type = i8} : (tensor<4x8xf32>) -> tensor<4x8xi8>
// CHECK: %[[XL32:.*]] = cast %[[XL]] {element_type = i32} : (tensor<4x8xi8>) -> tensor<4x8xi32>
// CHECK: %[[ACC:.*]] = matmul %[[XL32]], %[[WL]] : (tensor<4x8xi32>, tensor<8x3xi32>) -> tensor<4x3xi32>
// CHECK: %[[ROWSUMS:.*]] = sum %[[ROWS]] {axes = array<i64: 1>, keepdim = true} : (tensor<3x8xi32>) -> tensor<3x1xi32>
// CHECK: %[[SUMS:.*]] = reshape %[[ROWSUMS]] {shape = array<i64: 1, -1>} : (tensor<3x1xi32>) -> tensor<1x3xi32>
// CHECK: %[[SHIFT:.*]] = cast %{{.*}} {element_type = i32} : (tensor<f32>) -> tensor<i32>
// CHECK: %[[CORR:.*]] = multiply %[[SUMS]], %[[SHIFT]]
// CHECK: %[[SUM:.*]] = add %[[ACC]], %[[CORR]] : (tensor<4x3xi32>, tensor<1x3xi32>) -> tensor<4x3xi32>
// CHECK: cast %[[SUM]] {element_type = f32} : (tensor<4x3xi32>) -> tensor<4x3xf32>
// CHECK: matmul %x, %x2 : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
mithril.model @Layer(data %x: tensor<4x8xf32>, param %w: tensor<3x8xf32>, data %x2: tensor<8x8xf32>) -> (y: tensor<4x3xf32>, z: tensor<4x8xf32>) {
  %wt = mithril.transpose %w : (tensor<3x8xf32>) -> tensor<8x3xf32>
  %0 = mithril.matmul %x, %wt : (tensor<4x8xf32>, tensor<8x3xf32>) -> tensor<4x3xf32>
  %1 = mithril.matmul %x, %x2 : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  mithril.output %0, %1 : tensor<4x3xf32>, tensor<4x8xf32>
}

// Calibration: with observe, nothing is quantized and the activation's
// range [min, max] of each product becomes an output; with
// activation-ranges, that static range replaces the per-call one (no
// reduction of the activation, the scale and zero point folded from
// constants); with activation-scales, a static symmetric scale does, the
// levels clamped to 127.
// RUN: mithril-opt %s -mithril-quantize-int8=observe | FileCheck %s --check-prefix=OBSERVE
// OBSERVE-LABEL: mithril.model @Layer
// OBSERVE-SAME: "calibration:0": tensor<2xf32>
// OBSERVE-NOT: i32
// OBSERVE: %[[LO:.*]] = min %x : (tensor<4x8xf32>) -> tensor<f32>
// OBSERVE: %[[LO1:.*]] = reshape %[[LO]]
// OBSERVE: %[[HI:.*]] = max %x : (tensor<4x8xf32>) -> tensor<f32>
// OBSERVE: %[[HI1:.*]] = reshape %[[HI]]
// OBSERVE: %[[R:.*]] = concat %[[LO1]], %[[HI1]] : (tensor<1xf32>, tensor<1xf32>) -> tensor<2xf32>
// OBSERVE: output %{{.*}}, %{{.*}}, %[[R]]
// RUN: mithril-opt %s -mithril-quantize-int8=activation-ranges=-1.5,2.5 -canonicalize | FileCheck %s --check-prefix=RANGE
// RANGE-LABEL: mithril.model @Layer
// hi - lo = 4 and -lo = 1.5, from the range's constants:
// RANGE-DAG: %[[NEGLO:.*]] = constant dense<1.500000e+00> : tensor<f32>
// RANGE-DAG: %[[WIDTH:.*]] = constant dense<4.000000e+00> : tensor<f32>
// RANGE-NOT: min %x
// RANGE-NOT: max %x
// RANGE: maximum %[[WIDTH]]
// RANGE: matmul %{{.*}}, %{{.*}} : (tensor<4x8xi32>, tensor<8x3xi32>) -> tensor<4x3xi32>
// RUN: not mithril-opt %s -mithril-quantize-int8=activation-ranges=2,1 2>&1 | FileCheck %s --check-prefix=ORDER
// ORDER: activation range 0 must have lo <= hi, got [2.000000e+00, 1.000000e+00]
// RUN: not mithril-opt %s -mithril-quantize-int8=activation-ranges=0,1,0,1 2>&1 | FileCheck %s --check-prefix=PAIRS
// PAIRS: mithril-quantize-int8: activation-ranges has 4 values, but the model has 1 matrix products and convolutions of weights to quantize (a lo, hi pair each)
// RUN: not mithril-opt %s -mithril-quantize-int8="activation-ranges=0,1 activation-scales=0.5" 2>&1 | FileCheck %s --check-prefix=BOTH
// BOTH: mithril-quantize-int8: give activation-scales or activation-ranges, not both
// RUN: mithril-opt %s -mithril-quantize-int8=activation-scales=0.25 | FileCheck %s --check-prefix=STATIC
// STATIC-LABEL: mithril.model @Layer
// STATIC: constant dense<2.500000e-01>
// STATIC: minimum %{{.*}}, %{{.*}} : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
// STATIC: matmul %{{.*}}, %{{.*}} : (tensor<4x8xi32>, tensor<8x3xi32>) -> tensor<4x3xi32>
// RUN: not mithril-opt %s -mithril-quantize-int8=activation-scales=0.25,0.5 2>&1 | FileCheck %s --check-prefix=COUNT
// COUNT: mithril-quantize-int8: activation-scales has 2 values, but the model has 1 matrix products and convolutions of weights to quantize
// RUN: not mithril-opt %s -mithril-quantize-int8=activation-scales=-1 2>&1 | FileCheck %s --check-prefix=SIGN
// SIGN: activation scale 0 must be positive, got -1
