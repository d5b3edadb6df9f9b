// Every mithril op prints, parses and prints again the same, in the custom
// and in the generic form.
// RUN: mithril-opt %s | mithril-opt | FileCheck %s
// RUN: mithril-opt %s --mlir-print-op-generic | mithril-opt | FileCheck %s

mithril.model @elementwise(data %a: tensor<4x8xf32>, data %b: tensor<8xf32>, data %c: tensor<4x1xf32>, data %m: tensor<4x8xi1>) -> (out: tensor<4x8xf32>, cmp: tensor<4x8xi1>) {
  %0 = mithril.add %a, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %1 = mithril.subtract %0, %c : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  %2 = mithril.multiply %1, %a : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %3 = mithril.divide %2, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %r = mithril.divide %3, %c {reciprocal} : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  %4 = mithril.floor_divide %r, %c : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  %5 = mithril.power %4, %a : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %6 = mithril.minimum %5, %a : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %7 = mithril.maximum %6, %a : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %8 = mithril.negate %7 : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %9 = mithril.abs %8 : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %10 = mithril.exp %9 : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %11 = mithril.log %10 : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %12 = mithril.sqrt %11 : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %13 = mithril.sin %12 : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %14 = mithril.cos %13 : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %15 = mithril.square %14 : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %16 = mithril.sign %15 : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %17 = mithril.reciprocal %16 : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %18 = mithril.stop_gradient %17 : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %19 = mithril.equal %18, %a : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xi1>
  %20 = mithril.not_equal %18, %a : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xi1>
  %21 = mithril.less %18, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xi1>
  %22 = mithril.less_equal %18, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xi1>
  %23 = mithril.greater %18, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xi1>
  %24 = mithril.greater_equal %18, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xi1>
  %25 = mithril.logical_and %19, %20 : (tensor<4x8xi1>, tensor<4x8xi1>) -> tensor<4x8xi1>
  %26 = mithril.logical_or %25, %21 : (tensor<4x8xi1>, tensor<4x8xi1>) -> tensor<4x8xi1>
  %27 = mithril.logical_xor %26, %22 : (tensor<4x8xi1>, tensor<4x8xi1>) -> tensor<4x8xi1>
  %28 = mithril.logical_not %27 : (tensor<4x8xi1>) -> tensor<4x8xi1>
  %29 = mithril.where %m, %18, %a : (tensor<4x8xi1>, tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  mithril.output %29, %28 : tensor<4x8xf32>, tensor<4x8xi1>
}

mithril.model @activations(data %x: tensor<2x5xf64>) -> (y: tensor<2x5xf64>) {
  %0 = mithril.relu %x : (tensor<2x5xf64>) -> tensor<2x5xf64>
  %1 = mithril.leaky_relu %0 {slope = 2.000000e-01 : f64} : (tensor<2x5xf64>) -> tensor<2x5xf64>
  %2 = mithril.sigmoid %1 : (tensor<2x5xf64>) -> tensor<2x5xf64>
  %3 = mithril.tanh %2 : (tensor<2x5xf64>) -> tensor<2x5xf64>
  %4 = mithril.softplus %3 : (tensor<2x5xf64>) -> tensor<2x5xf64>
  %5 = mithril.gelu %4 {approximate = true} : (tensor<2x5xf64>) -> tensor<2x5xf64>
  %6 = mithril.softmax %5 {axis = 1 : i64} : (tensor<2x5xf64>) -> tensor<2x5xf64>
  %7 = mithril.log_softmax %6 {axis = 0 : i64} : (tensor<2x5xf64>) -> tensor<2x5xf64>
  mithril.output %7 : tensor<2x5xf64>
}

mithril.model @reductions(data %x: tensor<2x3x4xf32>) -> (s: tensor<2xf32>, m: tensor<1x3x1xf32>, i: tensor<2x4xi64>, all: tensor<f32>) {
  %0 = mithril.sum %x {axes = array<i64: 1, 2>} : (tensor<2x3x4xf32>) -> tensor<2xf32>
  %1 = mithril.mean %x {axes = array<i64: 0, -1>, keepdim = true} : (tensor<2x3x4xf32>) -> tensor<1x3x1xf32>
  %2 = mithril.max %x : (tensor<2x3x4xf32>) -> tensor<f32>
  %3 = mithril.min %x {axes = array<i64: 0>} : (tensor<2x3x4xf32>) -> tensor<3x4xf32>
  %4 = mithril.prod %3 {axes = array<i64: 1>} : (tensor<3x4xf32>) -> tensor<3xf32>
  %5 = mithril.variance %x {axes = array<i64: 2>, correction = 1.000000e+00 : f64} : (tensor<2x3x4xf32>) -> tensor<2x3xf32>
  %6 = mithril.argmax %x {axis = 1 : i64} : (tensor<2x3x4xf32>) -> tensor<2x4xi64>
  %7 = mithril.argmin %x : (tensor<2x3x4xf32>) -> tensor<i64>
  mithril.output %0, %1, %6, %2 : tensor<2xf32>, tensor<1x3x1xf32>, tensor<2x4xi64>, tensor<f32>
}

mithril.model @shapes(data %x: tensor<2x3x4xf32>, data %v: tensor<5xf32>) -> (y: tensor<24xf32>) {
  %0 = mithril.reshape %x {shape = array<i64: 6, -1>} : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
  %1 = mithril.transpose %x {permutation = array<i64: 2, 0, 1>} : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
  %2 = mithril.flatten %x {start_dim = 1 : i64} : (tensor<2x3x4xf32>) -> tensor<2x12xf32>
  %3 = mithril.unsqueeze %v {axis = 0 : i64} : (tensor<5xf32>) -> tensor<1x5xf32>
  %4 = mithril.squeeze %3 : (tensor<1x5xf32>) -> tensor<5xf32>
  %5 = mithril.concat %0, %0 {axis = 1 : i64} : (tensor<6x4xf32>, tensor<6x4xf32>) -> tensor<6x8xf32>
  %6 = mithril.broadcast_to %v {shape = array<i64: 3, 5>} : (tensor<5xf32>) -> tensor<3x5xf32>
  %7 = mithril.slice %x {axes = array<i64: 2>, start = array<i64: 1>, step = array<i64: 2>, stop = array<i64: 4>} : (tensor<2x3x4xf32>) -> tensor<2x3x2xf32>
  %8 = mithril.cast %x {element_type = f64} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf64>
  %9 = mithril.shape %x : (tensor<2x3x4xf32>) -> tensor<3xi64>
  %10 = mithril.flatten %x : (tensor<2x3x4xf32>) -> tensor<24xf32>
  mithril.output %10 : tensor<24xf32>
}

mithril.model @nn(data %img: tensor<2x3x8x8xf32>, param %w: tensor<4x3x3x3xf32>, param %bias: tensor<4xf32>, param %stat: tensor<3xf32>, data %seq: tensor<2x3x10xf32>, param %w1: tensor<6x1x3xf32>, data %ids: tensor<2x5xi64>, param %table: tensor<10x4xf32>, param %table4: tensor<4xf32>) -> (y: tensor<2x4x3x3xf32>) {
  %0 = mithril.conv2d %img, %w, %bias {dilation = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, stride = array<i64: 1, 1>} : (tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<2x4x8x8xf32>
  %1 = mithril.max_pool2d %0 {dilation = array<i64: 1, 1>, kernel_size = array<i64: 2, 2>, padding = array<i64: 0, 0, 0, 0>, stride = array<i64: 2, 2>} : (tensor<2x4x8x8xf32>) -> tensor<2x4x4x4xf32>
  %2 = mithril.avg_pool2d %1 {dilation = array<i64: 1, 1>, kernel_size = array<i64: 2, 2>, padding = array<i64: 0, 0, 0, 0>, stride = array<i64: 1, 1>} : (tensor<2x4x4x4xf32>) -> tensor<2x4x3x3xf32>
  %3 = mithril.conv1d %seq, %w1 {dilation = array<i64: 2>, groups = 3 : i64, padding = array<i64: 0, 0>, stride = array<i64: 1>} : (tensor<2x3x10xf32>, tensor<6x1x3xf32>) -> tensor<2x6x6xf32>
  %4 = mithril.max_pool1d %3 {dilation = array<i64: 1>, kernel_size = array<i64: 3>, padding = array<i64: 1, 1>, stride = array<i64: 3>} : (tensor<2x6x6xf32>) -> tensor<2x6x2xf32>
  %5 = mithril.embedding %ids, %table : (tensor<2x5xi64>, tensor<10x4xf32>) -> tensor<2x5x4xf32>
  %6 = mithril.layer_norm %5 {eps = 1.000000e-05 : f64} : (tensor<2x5x4xf32>) -> tensor<2x5x4xf32>
  %8 = mithril.layer_norm %5, %table4, %table4 {scaled = true, shifted = true} : (tensor<2x5x4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x5x4xf32>
  %7 = mithril.batch_norm %img, %stat, %stat, %stat, %stat : (tensor<2x3x8x8xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x3x8x8xf32>
  mithril.output %2 : tensor<2x4x3x3xf32>
}

mithril.model @losses(data %p: tensor<4x3xf32>, data %t: tensor<4x3xf32>, data %cls: tensor<4xi64>, const %k: tensor<f32>) -> (l: tensor<4xf32>) {
  %0 = mithril.squared_error %p, %t : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
  %1 = mithril.absolute_error %p, %t : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
  %2 = mithril.hinge %p, %t : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
  %3 = mithril.quad_hinge %p, %t : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
  %4 = mithril.kl_divergence %p, %t : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
  %5 = mithril.quantile %p, %t {quantile = 2.500000e-01 : f64} : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
  %6 = mithril.binary_cross_entropy %p, %t {from_logits = true} : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
  %7 = mithril.cross_entropy %p, %cls {from_logits = true} : (tensor<4x3xf32>, tensor<4xi64>) -> tensor<4xf32>
  %8 = mithril.cross_entropy %p, %t : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4xf32>
  %9 = mithril.constant dense<1.500000e+00> : tensor<4xf32>
  %10 = mithril.transpose %t : (tensor<4x3xf32>) -> tensor<3x4xf32>
  %11 = mithril.matmul %p, %10 : (tensor<4x3xf32>, tensor<3x4xf32>) -> tensor<4x4xf32>
  mithril.output %7 : tensor<4xf32>
}

// CHECK-LABEL: mithril.model @elementwise(data %a: tensor<4x8xf32>, data %b: tensor<8xf32>, data %c: tensor<4x1xf32>, data %m: tensor<4x8xi1>) -> (out: tensor<4x8xf32>, cmp: tensor<4x8xi1>) {
// CHECK-NEXT: %{{[0-9]+}} = add %a, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT: %{{[0-9]+}} = subtract %{{[0-9]+}}, %c : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
// CHECK-NEXT: %{{[0-9]+}} = multiply %{{[0-9]+}}, %a : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT: %{{[0-9]+}} = divide %{{[0-9]+}}, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT: %{{[0-9]+}} = divide %{{[0-9]+}}, %c {reciprocal} : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
// CHECK-NEXT: %{{[0-9]+}} = floor_divide %{{[0-9]+}}, %c : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
// CHECK-NEXT: %{{[0-9]+}} = power %{{[0-9]+}}, %a : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT: %{{[0-9]+}} = minimum %{{[0-9]+}}, %a : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT: %{{[0-9]+}} = maximum %{{[0-9]+}}, %a : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT: %{{[0-9]+}} = negate %{{[0-9]+}} : (tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT: %{{[0-9]+}} = abs %{{[0-9]+}} : (tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT: %{{[0-9]+}} = exp %{{[0-9]+}} : (tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT: %{{[0-9]+}} = log %{{[0-9]+}} : (tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT: %{{[0-9]+}} = sqrt %{{[0-9]+}} : (tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT: %{{[0-9]+}} = sin %{{[0-9]+}} : (tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT: %{{[0-9]+}} = cos %{{[0-9]+}} : (tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT: %{{[0-9]+}} = square %{{[0-9]+}} : (tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT: %{{[0-9]+}} = sign %{{[0-9]+}} : (tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT: %{{[0-9]+}} = reciprocal %{{[0-9]+}} : (tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT: %{{[0-9]+}} = stop_gradient %{{[0-9]+}} : (tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT: %{{[0-9]+}} = equal %{{[0-9]+}}, %a : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xi1>
// CHECK-NEXT: %{{[0-9]+}} = not_equal %{{[0-9]+}}, %a : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xi1>
// CHECK-NEXT: %{{[0-9]+}} = less %{{[0-9]+}}, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xi1>
// CHECK-NEXT: %{{[0-9]+}} = less_equal %{{[0-9]+}}, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xi1>
// CHECK-NEXT: %{{[0-9]+}} = greater %{{[0-9]+}}, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xi1>
// CHECK-NEXT: %{{[0-9]+}} = greater_equal %{{[0-9]+}}, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xi1>
// CHECK-NEXT: %{{[0-9]+}} = logical_and %{{[0-9]+}}, %{{[0-9]+}} : (tensor<4x8xi1>, tensor<4x8xi1>) -> tensor<4x8xi1>
// CHECK-NEXT: %{{[0-9]+}} = logical_or %{{[0-9]+}}, %{{[0-9]+}} : (tensor<4x8xi1>, tensor<4x8xi1>) -> tensor<4x8xi1>
// CHECK-NEXT: %{{[0-9]+}} = logical_xor %{{[0-9]+}}, %{{[0-9]+}} : (tensor<4x8xi1>, tensor<4x8xi1>) -> tensor<4x8xi1>
// CHECK-NEXT: %{{[0-9]+}} = logical_not %{{[0-9]+}} : (tensor<4x8xi1>) -> tensor<4x8xi1>
// CHECK-NEXT: %{{[0-9]+}} = where %m, %{{[0-9]+}}, %a : (tensor<4x8xi1>, tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT: output %{{[0-9]+}}, %{{[0-9]+}} : tensor<4x8xf32>, tensor<4x8xi1>
// CHECK-LABEL: mithril.model @activations(data %x: tensor<2x5xf64>) -> (y: tensor<2x5xf64>) {
// CHECK-NEXT: %{{[0-9]+}} = relu %x : (tensor<2x5xf64>) -> tensor<2x5xf64>
// CHECK-NEXT: %{{[0-9]+}} = leaky_relu %{{[0-9]+}} {slope = 2.000000e-01 : f64} : (tensor<2x5xf64>) -> tensor<2x5xf64>
// CHECK-NEXT: %{{[0-9]+}} = sigmoid %{{[0-9]+}} : (tensor<2x5xf64>) -> tensor<2x5xf64>
// CHECK-NEXT: %{{[0-9]+}} = tanh %{{[0-9]+}} : (tensor<2x5xf64>) -> tensor<2x5xf64>
// CHECK-NEXT: %{{[0-9]+}} = softplus %{{[0-9]+}} : (tensor<2x5xf64>) -> tensor<2x5xf64>
// CHECK-NEXT: %{{[0-9]+}} = gelu %{{[0-9]+}} {approximate = true} : (tensor<2x5xf64>) -> tensor<2x5xf64>
// CHECK-NEXT: %{{[0-9]+}} = softmax %{{[0-9]+}} {axis = 1 : i64} : (tensor<2x5xf64>) -> tensor<2x5xf64>
// CHECK-NEXT: %{{[0-9]+}} = log_softmax %{{[0-9]+}} {axis = 0 : i64} : (tensor<2x5xf64>) -> tensor<2x5xf64>
// CHECK-NEXT: output %{{[0-9]+}} : tensor<2x5xf64>
// CHECK-LABEL: mithril.model @reductions(data %x: tensor<2x3x4xf32>) -> (s: tensor<2xf32>, m: tensor<1x3x1xf32>, i: tensor<2x4xi64>, all: tensor<f32>) {
// CHECK-NEXT: %{{[0-9]+}} = sum %x {axes = array<i64: 1, 2>} : (tensor<2x3x4xf32>) -> tensor<2xf32>
// CHECK-NEXT: %{{[0-9]+}} = mean %x {axes = array<i64: 0, -1>, keepdim = true} : (tensor<2x3x4xf32>) -> tensor<1x3x1xf32>
// CHECK-NEXT: %{{[0-9]+}} = max %x : (tensor<2x3x4xf32>) -> tensor<f32>
// CHECK-NEXT: %{{[0-9]+}} = min %x {axes = array<i64: 0>} : (tensor<2x3x4xf32>) -> tensor<3x4xf32>
// CHECK-NEXT: %{{[0-9]+}} = prod %{{[0-9]+}} {axes = array<i64: 1>} : (tensor<3x4xf32>) -> tensor<3xf32>
// CHECK-NEXT: %{{[0-9]+}} = variance %x {axes = array<i64: 2>, correction = 1.000000e+00 : f64} : (tensor<2x3x4xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: %{{[0-9]+}} = argmax %x {axis = 1 : i64} : (tensor<2x3x4xf32>) -> tensor<2x4xi64>
// CHECK-NEXT: %{{[0-9]+}} = argmin %x : (tensor<2x3x4xf32>) -> tensor<i64>
// CHECK-NEXT: output %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}} : tensor<2xf32>, tensor<1x3x1xf32>, tensor<2x4xi64>, tensor<f32>
// CHECK-LABEL: mithril.model @shapes(data %x: tensor<2x3x4xf32>, data %v: tensor<5xf32>) -> (y: tensor<24xf32>) {
// CHECK-NEXT: %{{[0-9]+}} = reshape %x {shape = array<i64: 6, -1>} : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
// CHECK-NEXT: %{{[0-9]+}} = transpose %x {permutation = array<i64: 2, 0, 1>} : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
// CHECK-NEXT: %{{[0-9]+}} = flatten %x {start_dim = 1 : i64} : (tensor<2x3x4xf32>) -> tensor<2x12xf32>
// CHECK-NEXT: %{{[0-9]+}} = unsqueeze %v {axis = 0 : i64} : (tensor<5xf32>) -> tensor<1x5xf32>
// CHECK-NEXT: %{{[0-9]+}} = squeeze %{{[0-9]+}} : (tensor<1x5xf32>) -> tensor<5xf32>
// CHECK-NEXT: %{{[0-9]+}} = concat %{{[0-9]+}}, %{{[0-9]+}} {axis = 1 : i64} : (tensor<6x4xf32>, tensor<6x4xf32>) -> tensor<6x8xf32>
// CHECK-NEXT: %{{[0-9]+}} = broadcast_to %v {shape = array<i64: 3, 5>} : (tensor<5xf32>) -> tensor<3x5xf32>
// CHECK-NEXT: %{{[0-9]+}} = slice %x {axes = array<i64: 2>, start = array<i64: 1>, step = array<i64: 2>, stop = array<i64: 4>} : (tensor<2x3x4xf32>) -> tensor<2x3x2xf32>
// CHECK-NEXT: %{{[0-9]+}} = cast %x {element_type = f64} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf64>
// CHECK-NEXT: %{{[0-9]+}} = shape %x : (tensor<2x3x4xf32>) -> tensor<3xi64>
// CHECK-NEXT: %{{[0-9]+}} = flatten %x : (tensor<2x3x4xf32>) -> tensor<24xf32>
// CHECK-NEXT: output %{{[0-9]+}} : tensor<24xf32>
// CHECK-LABEL: mithril.model @nn(data %img: tensor<2x3x8x8xf32>, param %w: tensor<4x3x3x3xf32>, param %bias: tensor<4xf32>, param %stat: tensor<3xf32>, data %seq: tensor<2x3x10xf32>, param %w1: tensor<6x1x3xf32>, data %ids: tensor<2x5xi64>, param %table: tensor<10x4xf32>, param %table4: tensor<4xf32>) -> (y: tensor<2x4x3x3xf32>) {
// CHECK-NEXT: %{{[0-9]+}} = conv2d %img, %w, %bias {dilation = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, stride = array<i64: 1, 1>} : (tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<2x4x8x8xf32>
// CHECK-NEXT: %{{[0-9]+}} = max_pool2d %{{[0-9]+}} {dilation = array<i64: 1, 1>, kernel_size = array<i64: 2, 2>, padding = array<i64: 0, 0, 0, 0>, stride = array<i64: 2, 2>} : (tensor<2x4x8x8xf32>) -> tensor<2x4x4x4xf32>
// CHECK-NEXT: %{{[0-9]+}} = avg_pool2d %{{[0-9]+}} {dilation = array<i64: 1, 1>, kernel_size = array<i64: 2, 2>, padding = array<i64: 0, 0, 0, 0>, stride = array<i64: 1, 1>} : (tensor<2x4x4x4xf32>) -> tensor<2x4x3x3xf32>
// CHECK-NEXT: %{{[0-9]+}} = conv1d %seq, %w1 {dilation = array<i64: 2>, groups = 3 : i64, padding = array<i64: 0, 0>, stride = array<i64: 1>} : (tensor<2x3x10xf32>, tensor<6x1x3xf32>) -> tensor<2x6x6xf32>
// CHECK-NEXT: %{{[0-9]+}} = max_pool1d %{{[0-9]+}} {dilation = array<i64: 1>, kernel_size = array<i64: 3>, padding = array<i64: 1, 1>, stride = array<i64: 3>} : (tensor<2x6x6xf32>) -> tensor<2x6x2xf32>
// CHECK-NEXT: %{{[0-9]+}} = embedding %ids, %table : (tensor<2x5xi64>, tensor<10x4xf32>) -> tensor<2x5x4xf32>
// CHECK-NEXT: %{{[0-9]+}} = layer_norm %{{[0-9]+}} : (tensor<2x5x4xf32>) -> tensor<2x5x4xf32>
// CHECK-NEXT: %{{[0-9]+}} = layer_norm %{{[0-9]+}}, %table4, %table4 {scaled = true, shifted = true} : (tensor<2x5x4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x5x4xf32>
// CHECK-NEXT: %{{[0-9]+}} = batch_norm %img, %stat, %stat, %stat, %stat : (tensor<2x3x8x8xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x3x8x8xf32>
// CHECK-NEXT: output %{{[0-9]+}} : tensor<2x4x3x3xf32>
// CHECK-LABEL: mithril.model @losses(data %p: tensor<4x3xf32>, data %t: tensor<4x3xf32>, data %cls: tensor<4xi64>, const %k: tensor<f32>) -> (l: tensor<4xf32>) {
// CHECK-NEXT: %{{[0-9]+}} = squared_error %p, %t : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
// CHECK-NEXT: %{{[0-9]+}} = absolute_error %p, %t : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
// CHECK-NEXT: %{{[0-9]+}} = hinge %p, %t : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
// CHECK-NEXT: %{{[0-9]+}} = quad_hinge %p, %t : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
// CHECK-NEXT: %{{[0-9]+}} = kl_divergence %p, %t : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
// CHECK-NEXT: %{{[0-9]+}} = quantile %p, %t {quantile = 2.500000e-01 : f64} : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
// CHECK-NEXT: %{{[0-9]+}} = binary_cross_entropy %p, %t {from_logits = true} : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
// CHECK-NEXT: %{{[0-9]+}} = cross_entropy %p, %cls {from_logits = true} : (tensor<4x3xf32>, tensor<4xi64>) -> tensor<4xf32>
// CHECK-NEXT: %{{[0-9]+}} = cross_entropy %p, %t : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4xf32>
// CHECK-NEXT: %cst = constant dense<1.500000e+00> : tensor<4xf32>
// CHECK-NEXT: %{{[0-9]+}} = transpose %t : (tensor<4x3xf32>) -> tensor<3x4xf32>
// CHECK-NEXT: %{{[0-9]+}} = matmul %p, %{{[0-9]+}} : (tensor<4x3xf32>, tensor<3x4xf32>) -> tensor<4x4xf32>
// CHECK-NEXT: output %{{[0-9]+}} : tensor<4xf32>

mithril.model @robust(data %x: tensor<4x3xf64>, data %e: tensor<3xf64>, data %i: tensor<4xi64>) -> (y: tensor<4x9xf64>) {
  %0 = mithril.robust_sqrt %x : (tensor<4x3xf64>) -> tensor<4x3xf64>
  %1 = mithril.robust_log %x {threshold = 1.000000e-03 : f64} : (tensor<4x3xf64>) -> tensor<4x3xf64>
  %2 = mithril.stable_reciprocal %x : (tensor<4x3xf64>) -> tensor<4x3xf64>
  %3 = mithril.robust_power %x, %e : (tensor<4x3xf64>, tensor<3xf64>) -> tensor<4x3xf64>
  %4 = mithril.polynomial_features %x {degree = 2 : i64} : (tensor<4x3xf64>) -> tensor<4x9xf64>
  %5 = mithril.eye_like %4 : (tensor<4x9xf64>) -> tensor<4x9xf64>
  %6 = mithril.shift_left %i, %i : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
  %7 = mithril.shift_right %i, %i : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
  %8 = mithril.reverse %x {axes = array<i64: 1>} : (tensor<4x3xf64>) -> tensor<4x3xf64>
  mithril.output %5 : tensor<4x9xf64>
}
// CHECK-LABEL: mithril.model @robust
// CHECK-NEXT: %{{[0-9]+}} = robust_sqrt %x : (tensor<4x3xf64>) -> tensor<4x3xf64>
// CHECK-NEXT: %{{[0-9]+}} = robust_log %x {threshold = 1.000000e-03 : f64} : (tensor<4x3xf64>) -> tensor<4x3xf64>
// CHECK-NEXT: %{{[0-9]+}} = stable_reciprocal %x : (tensor<4x3xf64>) -> tensor<4x3xf64>
// CHECK-NEXT: %{{[0-9]+}} = robust_power %x, %e : (tensor<4x3xf64>, tensor<3xf64>) -> tensor<4x3xf64>
// CHECK-NEXT: %[[PF:[0-9]+]] = polynomial_features %x {degree = 2 : i64} : (tensor<4x3xf64>) -> tensor<4x9xf64>
// CHECK-NEXT: %{{[0-9]+}} = eye_like %[[PF]] : (tensor<4x9xf64>) -> tensor<4x9xf64>
// CHECK-NEXT: %{{[0-9]+}} = shift_left %i, %i : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
// CHECK-NEXT: %{{[0-9]+}} = shift_right %i, %i : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
// CHECK-NEXT: %{{[0-9]+}} = reverse %x {axes = array<i64: 1>} : (tensor<4x3xf64>) -> tensor<4x3xf64>

// CHECK-LABEL: mithril.model @random
// CHECK-NEXT: %{{[0-9]+}} = random_normal %k {element_type = bf16, shape = array<i64: 2, 3>} : (tensor<i64>) -> tensor<2x3xbf16>
// CHECK-NEXT: %{{[0-9]+}} = random_uniform %k {element_type = f64, shape = array<i64: 4>} : (tensor<i64>) -> tensor<4xf64>
mithril.model @random(data %k: tensor<i64>) -> (z: tensor<2x3xbf16>, u: tensor<4xf64>) {
  %0 = mithril.random_normal %k {shape = array<i64: 2, 3>, element_type = bf16} : (tensor<i64>) -> tensor<2x3xbf16>
  %1 = mithril.random_uniform %k {shape = array<i64: 4>, element_type = f64} : (tensor<i64>) -> tensor<4xf64>
  mithril.output %0, %1 : tensor<2x3xbf16>, tensor<4xf64>
}

// CHECK-LABEL: mithril.model @collectives
// CHECK-NEXT: %{{[0-9]+}} = all_reduce %g : (tensor<4x3xf32>) -> tensor<4x3xf32>
mithril.model @collectives(data %g: tensor<4x3xf32>) -> (s: tensor<4x3xf32>) {
  %0 = mithril.all_reduce %g : (tensor<4x3xf32>) -> tensor<4x3xf32>
  mithril.output %0 : tensor<4x3xf32>
}

// CHECK-LABEL: mithril.model @pad
// CHECK-NEXT: %{{[0-9]+}} = pad %x {pad_width = array<i64: 1, 2, 0, 3>} : (tensor<4x3xf32>) -> tensor<7x6xf32>
// CHECK-NEXT: %{{[0-9]+}} = pad %x {pad_width = array<i64: 0, 0, 1, 1>, value = -1.000000e+00 : f64} : (tensor<4x3xf32>) -> tensor<4x5xf32>
mithril.model @pad(data %x: tensor<4x3xf32>) -> (p: tensor<7x6xf32>, q: tensor<4x5xf32>) {
  %0 = mithril.pad %x {pad_width = array<i64: 1, 2, 0, 3>} : (tensor<4x3xf32>) -> tensor<7x6xf32>
  %1 = mithril.pad %x {pad_width = array<i64: 0, 0, 1, 1>, value = -1.0 : f64} : (tensor<4x3xf32>) -> tensor<4x5xf32>
  mithril.output %0, %1 : tensor<7x6xf32>, tensor<4x5xf32>
}

// CHECK-LABEL: mithril.model @tsne_p_joint
// CHECK-NEXT: %{{[0-9]+}} = tsne_p_joint %d, %perplexity : (tensor<5x5xf64>, tensor<f64>) -> tensor<5x5xf64>
// CHECK-NEXT: %{{[0-9]+}} = tsne_p_joint %d, %perplexity, %threshold : (tensor<5x5xf64>, tensor<f64>, tensor<1xf64>) -> tensor<5x5xf64>
mithril.model @tsne_p_joint(data %d: tensor<5x5xf64>, data %perplexity: tensor<f64>, data %threshold: tensor<1xf64>) -> (p: tensor<5x5xf64>, q: tensor<5x5xf64>) {
  %0 = mithril.tsne_p_joint %d, %perplexity : (tensor<5x5xf64>, tensor<f64>) -> tensor<5x5xf64>
  %1 = mithril.tsne_p_joint %d, %perplexity, %threshold : (tensor<5x5xf64>, tensor<f64>, tensor<1xf64>) -> tensor<5x5xf64>
  mithril.output %0, %1 : tensor<5x5xf64>, tensor<5x5xf64>
}

// CHECK-LABEL: mithril.model @linalg
// CHECK-NEXT: %[[L:[0-9]+]] = cholesky %a : (tensor<4x4xf64>) -> tensor<4x4xf64>
// CHECK-NEXT: %[[Y:[0-9]+]] = triangular_solve %[[L]], %b : (tensor<4x4xf64>, tensor<4x2xf64>) -> tensor<4x2xf64>
// CHECK-NEXT: %{{[0-9]+}} = triangular_solve %[[L]], %[[Y]] {transpose = true} : (tensor<4x4xf64>, tensor<4x2xf64>) -> tensor<4x2xf64>
// CHECK-NEXT: %{{[0-9]+}} = triangular_solve %a, %b {lower = false} : (tensor<4x4xf64>, tensor<4x2xf64>) -> tensor<4x2xf64>
// CHECK-NEXT: %{{[0-9]+}} = tril %a : (tensor<4x4xf64>) -> tensor<4x4xf64>
// CHECK-NEXT: %{{[0-9]+}} = tril %a {diagonal = -1 : i64} : (tensor<4x4xf64>) -> tensor<4x4xf64>
mithril.model @linalg(data %a: tensor<4x4xf64>, data %b: tensor<4x2xf64>) -> (x: tensor<4x2xf64>) {
  %0 = mithril.cholesky %a : (tensor<4x4xf64>) -> tensor<4x4xf64>
  %1 = mithril.triangular_solve %0, %b : (tensor<4x4xf64>, tensor<4x2xf64>) -> tensor<4x2xf64>
  %2 = mithril.triangular_solve %0, %1 {lower = true, transpose = true} : (tensor<4x4xf64>, tensor<4x2xf64>) -> tensor<4x2xf64>
  %3 = mithril.triangular_solve %a, %b {lower = false} : (tensor<4x4xf64>, tensor<4x2xf64>) -> tensor<4x2xf64>
  %4 = mithril.tril %a : (tensor<4x4xf64>) -> tensor<4x4xf64>
  %5 = mithril.tril %a {diagonal = -1 : i64} : (tensor<4x4xf64>) -> tensor<4x4xf64>
  mithril.output %2 : tensor<4x2xf64>
}

// CHECK-LABEL: mithril.model @custom_call
// CHECK-NEXT: %[[S:[0-9]+]] = custom_call %x {callee = "swish", grad_callee = "swish_grad"} : (tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT: %{{[0-9]+}} = custom_call %x, %v {callee = "outer", result_shape = array<i64: 0, 0, -1, 3>} : (tensor<4x8xf32>, tensor<3xf32>) -> tensor<4x3xf32>
// CHECK-NEXT: %{{[0-9]+}} = custom_call %x, %v, %[[S]], %x {callee = "swish_grad", index = 1 : i64, shape_of = 1 : i64} : (tensor<4x8xf32>, tensor<3xf32>, tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<3xf32>
// CHECK-NEXT: %{{[0-9]+}} = custom_call %x {callee = "count", element_type = i64, result_shape = array<i64: -1, 1>} : (tensor<4x8xf32>) -> tensor<1xi64>
mithril.model @custom_call(data %x: tensor<4x8xf32>, data %v: tensor<3xf32>) -> (y: tensor<4x8xf32>) {
  %0 = mithril.custom_call %x {callee = "swish", grad_callee = "swish_grad"} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %1 = mithril.custom_call %x, %v {callee = "outer", result_shape = array<i64: 0, 0, -1, 3>} : (tensor<4x8xf32>, tensor<3xf32>) -> tensor<4x3xf32>
  %2 = mithril.custom_call %x, %v, %0, %x {callee = "swish_grad", index = 1 : i64, shape_of = 1 : i64} : (tensor<4x8xf32>, tensor<3xf32>, tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<3xf32>
  %3 = mithril.custom_call %x {callee = "count", element_type = i64, result_shape = array<i64: -1, 1>} : (tensor<4x8xf32>) -> tensor<1xi64>
  mithril.output %0 : tensor<4x8xf32>
}

// CHECK-LABEL: mithril.model @unique
// CHECK-NEXT: %{{.+}}, %{{.+}} = unique %x : (tensor<2x3xi64>) -> (tensor<6xi64>, tensor<i64>)
mithril.model @unique(data %x: tensor<2x3xi64>) -> (u: tensor<6xi64>) {
  %v, %n = mithril.unique %x : (tensor<2x3xi64>) -> (tensor<6xi64>, tensor<i64>)
  mithril.output %v : tensor<6xi64>
}

// The window of all-reduce operands, a memref op of the lowered code.
// CHECK-LABEL: func.func @collective_window
// CHECK-NEXT: mithril.collective_window : memref<4096xi8>
// CHECK-NEXT: mithril.collective_window {group = "tensor"} : memref<64xi8>
// CHECK-NEXT: mithril.collective_window {rank = 1 : i64} : memref<4096xi8>
func.func @collective_window() -> (memref<4096xi8>, memref<64xi8>, memref<4096xi8>) {
  %0 = mithril.collective_window {group = "data"} : memref<4096xi8>
  %1 = mithril.collective_window {group = "tensor"} : memref<64xi8>
  %2 = mithril.collective_window {rank = 1} : memref<4096xi8>
  return %0, %1, %2 : memref<4096xi8>, memref<64xi8>, memref<4096xi8>
}
