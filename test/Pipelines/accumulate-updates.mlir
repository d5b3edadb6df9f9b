// RUN: mithril-opt %s -split-input-file -mithril-accumulate-updates | FileCheck %s

// An SGD step w - lr * (A B) becomes one product accumulated into w, the
// smaller operand (A, 4x2 against B, 2x8) scaled by -lr.
// CHECK-LABEL: func.func @sgd_step(
// CHECK-SAME: %[[A:.*]]: tensor<4x2xf32>, %[[B:.*]]: tensor<2x8xf32>, %[[W:.*]]: tensor<4x8xf32>, %[[LR:.*]]: tensor<f32>
// CHECK: %[[SCALED:.*]] = linalg.generic {{.*}} ins(%[[A]], %[[LR]] : tensor<4x2xf32>, tensor<f32>)
// CHECK: %[[NEG:.*]] = arith.negf
// CHECK: arith.mulf %{{.*}}, %[[NEG]]
// CHECK: %[[NEW:.*]] = linalg.matmul ins(%[[SCALED]], %[[B]] : tensor<4x2xf32>, tensor<2x8xf32>) outs(%[[W]] : tensor<4x8xf32>)
// CHECK-NOT: arith.subf
// CHECK: return %[[NEW]]
#id = affine_map<(d0, d1) -> (d0, d1)>
#scalar = affine_map<(d0, d1) -> ()>
func.func @sgd_step(%a: tensor<4x2xf32>, %b: tensor<2x8xf32>, %w: tensor<4x8xf32>, %lr: tensor<f32>) -> tensor<4x8xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
  %g = linalg.matmul ins(%a, %b : tensor<4x2xf32>, tensor<2x8xf32>) outs(%f : tensor<4x8xf32>) -> tensor<4x8xf32>
  %e1 = tensor.empty() : tensor<4x8xf32>
  %s = linalg.generic {indexing_maps = [#id, #scalar, #id], iterator_types = ["parallel", "parallel"]} ins(%g, %lr : tensor<4x8xf32>, tensor<f32>) outs(%e1 : tensor<4x8xf32>) {
  ^bb0(%x: f32, %r: f32, %o: f32):
    %m = arith.mulf %x, %r : f32
    linalg.yield %m : f32
  } -> tensor<4x8xf32>
  %e2 = tensor.empty() : tensor<4x8xf32>
  %n = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%w, %s : tensor<4x8xf32>, tensor<4x8xf32>) outs(%e2 : tensor<4x8xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %d = arith.subf %x, %y : f32
    linalg.yield %d : f32
  } -> tensor<4x8xf32>
  return %n : tensor<4x8xf32>
}

// -----

// The right operand is scaled where it is the smaller (B, 2x3 against A, 8x2).
// CHECK-LABEL: func.func @scale_right(
// CHECK-SAME: %[[A:.*]]: tensor<8x2xf32>, %[[B:.*]]: tensor<2x3xf32>
// CHECK: %[[SCALED:.*]] = linalg.generic {{.*}} ins(%[[B]], %{{.*}} : tensor<2x3xf32>, tensor<f32>)
// CHECK: linalg.matmul ins(%[[A]], %[[SCALED]] : tensor<8x2xf32>, tensor<2x3xf32>)
#id = affine_map<(d0, d1) -> (d0, d1)>
#scalar = affine_map<(d0, d1) -> ()>
func.func @scale_right(%a: tensor<8x2xf32>, %b: tensor<2x3xf32>, %w: tensor<8x3xf32>, %lr: tensor<f32>) -> tensor<8x3xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x3xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<8x3xf32>) -> tensor<8x3xf32>
  %g = linalg.matmul ins(%a, %b : tensor<8x2xf32>, tensor<2x3xf32>) outs(%f : tensor<8x3xf32>) -> tensor<8x3xf32>
  %e1 = tensor.empty() : tensor<8x3xf32>
  %s = linalg.generic {indexing_maps = [#id, #scalar, #id], iterator_types = ["parallel", "parallel"]} ins(%g, %lr : tensor<8x3xf32>, tensor<f32>) outs(%e1 : tensor<8x3xf32>) {
  ^bb0(%x: f32, %r: f32, %o: f32):
    %m = arith.mulf %r, %x : f32
    linalg.yield %m : f32
  } -> tensor<8x3xf32>
  %e2 = tensor.empty() : tensor<8x3xf32>
  %n = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%w, %s : tensor<8x3xf32>, tensor<8x3xf32>) outs(%e2 : tensor<8x3xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %d = arith.subf %x, %y : f32
    linalg.yield %d : f32
  } -> tensor<8x3xf32>
  return %n : tensor<8x3xf32>
}

// -----

// Left alone: a gradient also returned (it must be written), and a step
// that adds (w + lr g is no subtraction of the scaled product).
// CHECK-LABEL: func.func @gradient_kept(
// CHECK: linalg.fill
// CHECK: %[[G:.*]] = linalg.matmul
// CHECK: arith.mulf
// CHECK: arith.subf
// CHECK: return %{{.*}}, %[[G]]
#id = affine_map<(d0, d1) -> (d0, d1)>
#scalar = affine_map<(d0, d1) -> ()>
func.func @gradient_kept(%a: tensor<4x2xf32>, %b: tensor<2x8xf32>, %w: tensor<4x8xf32>, %lr: tensor<f32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
  %g = linalg.matmul ins(%a, %b : tensor<4x2xf32>, tensor<2x8xf32>) outs(%f : tensor<4x8xf32>) -> tensor<4x8xf32>
  %e1 = tensor.empty() : tensor<4x8xf32>
  %s = linalg.generic {indexing_maps = [#id, #scalar, #id], iterator_types = ["parallel", "parallel"]} ins(%g, %lr : tensor<4x8xf32>, tensor<f32>) outs(%e1 : tensor<4x8xf32>) {
  ^bb0(%x: f32, %r: f32, %o: f32):
    %m = arith.mulf %x, %r : f32
    linalg.yield %m : f32
  } -> tensor<4x8xf32>
  %e2 = tensor.empty() : tensor<4x8xf32>
  %n = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%w, %s : tensor<4x8xf32>, tensor<4x8xf32>) outs(%e2 : tensor<4x8xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %d = arith.subf %x, %y : f32
    linalg.yield %d : f32
  } -> tensor<4x8xf32>
  return %n, %g : tensor<4x8xf32>, tensor<4x8xf32>
}

// CHECK-LABEL: func.func @ascent(
// CHECK: linalg.fill
// CHECK: arith.addf
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#scalar2 = affine_map<(d0, d1) -> ()>
func.func @ascent(%a: tensor<4x2xf32>, %b: tensor<2x8xf32>, %w: tensor<4x8xf32>, %lr: tensor<f32>) -> tensor<4x8xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
  %g = linalg.matmul ins(%a, %b : tensor<4x2xf32>, tensor<2x8xf32>) outs(%f : tensor<4x8xf32>) -> tensor<4x8xf32>
  %e1 = tensor.empty() : tensor<4x8xf32>
  %s = linalg.generic {indexing_maps = [#id2, #scalar2, #id2], iterator_types = ["parallel", "parallel"]} ins(%g, %lr : tensor<4x8xf32>, tensor<f32>) outs(%e1 : tensor<4x8xf32>) {
  ^bb0(%x: f32, %r: f32, %o: f32):
    %m = arith.mulf %x, %r : f32
    linalg.yield %m : f32
  } -> tensor<4x8xf32>
  %e2 = tensor.empty() : tensor<4x8xf32>
  %n = linalg.generic {indexing_maps = [#id2, #id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%w, %s : tensor<4x8xf32>, tensor<4x8xf32>) outs(%e2 : tensor<4x8xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %d = arith.addf %x, %y : f32
    linalg.yield %d : f32
  } -> tensor<4x8xf32>
  return %n : tensor<4x8xf32>
}
