// RUN: mithril-opt %s -split-input-file --mithril-fuse-elementwise | FileCheck %s

// Elementwise producers fuse into their consumer, as upstream's pass does.
// CHECK-LABEL: func.func @fuse_chain
// CHECK: linalg.generic
// CHECK:   math.exp
// CHECK:   arith.addf
// CHECK-NOT: linalg.generic
#id = affine_map<(d0) -> (d0)>
func.func @fuse_chain(%x: tensor<8xf32>) -> tensor<8xf32> {
  %e = tensor.empty() : tensor<8xf32>
  %0 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%x : tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = math.exp %a : f32
    linalg.yield %r : f32
  } -> tensor<8xf32>
  %1 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
      ins(%0, %x : tensor<8xf32>, tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %r = arith.addf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<8xf32>
  return %1 : tensor<8xf32>
}

// -----

// A collapse of two dynamic sizes into one stays: folding it by expansion
// would split the other operand's dynamic size into two (a Reshape(-1) of a
// dynamic input feeding a Linear crashed the memref lowering).
// CHECK-LABEL: func.func @dynamic_collapse_stays
// CHECK: tensor.collapse_shape %{{.*}} {{\[\[}}0, 1]] : tensor<?x?xf32> into tensor<?xf32>
// CHECK-NOT: tensor.expand_shape
// CHECK: linalg.generic
#m0 = affine_map<(d0, d1) -> (d1)>
#m1 = affine_map<(d0, d1) -> (d0, d1)>
#m2 = affine_map<(d0, d1) -> (d0)>
func.func @dynamic_collapse_stays(%x: tensor<?x?xf32>, %w: tensor<3x?xf32>) -> tensor<3xf32> {
  %flat = tensor.collapse_shape %x [[0, 1]] : tensor<?x?xf32> into tensor<?xf32>
  %cst = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<3xf32>
  %z = linalg.fill ins(%cst : f32) outs(%e : tensor<3xf32>) -> tensor<3xf32>
  %0 = linalg.generic {indexing_maps = [#m0, #m1, #m2], iterator_types = ["parallel", "reduction"]}
      ins(%flat, %w : tensor<?xf32>, tensor<3x?xf32>) outs(%z : tensor<3xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %p, %o : f32
    linalg.yield %s : f32
  } -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

// A static collapse still folds into its consumer by expansion.
// CHECK-LABEL: func.func @static_collapse_folds
// CHECK-NOT: tensor.collapse_shape
// CHECK: linalg.generic {{.*}}ins(%{{.*}} : tensor<4x6xf32>)
#s = affine_map<(d0) -> (d0)>
func.func @static_collapse_folds(%x: tensor<4x6xf32>) -> tensor<24xf32> {
  %flat = tensor.collapse_shape %x [[0, 1]] : tensor<4x6xf32> into tensor<24xf32>
  %e = tensor.empty() : tensor<24xf32>
  %0 = linalg.generic {indexing_maps = [#s, #s], iterator_types = ["parallel"]}
      ins(%flat : tensor<24xf32>) outs(%e : tensor<24xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = math.exp %a : f32
    linalg.yield %r : f32
  } -> tensor<24xf32>
  return %0 : tensor<24xf32>
}

// -----

// A producer that reads its init (a sum of a 0-d tensor) is not fused into a
// consumer that broadcasts it: fused, the sum would be kept as a result
// written once per element of the loop and accumulate.
// CHECK-LABEL: func.func @no_fuse_init_reader
// CHECK: linalg.generic {{.*}}iterator_types = []
// CHECK:   arith.addf
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel"]
#scalar = affine_map<() -> ()>
#bcast = affine_map<(d0) -> ()>
#id1 = affine_map<(d0) -> (d0)>
func.func @no_fuse_init_reader(%s: tensor<f32>, %v: tensor<3xf32>) -> tensor<3xf32> {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<f32>
  %init = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %sum = linalg.generic {indexing_maps = [#scalar, #scalar], iterator_types = []}
      ins(%s : tensor<f32>) outs(%init : tensor<f32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.addf %a, %acc : f32
    linalg.yield %r : f32
  } -> tensor<f32>
  %e1 = tensor.empty() : tensor<3xf32>
  %out = linalg.generic {indexing_maps = [#bcast, #id1, #id1], iterator_types = ["parallel"]}
      ins(%sum, %v : tensor<f32>, tensor<3xf32>) outs(%e1 : tensor<3xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %r = arith.addf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<3xf32>
  return %out : tensor<3xf32>
}

// -----

// A matmul of widened bf16 operands reads the bf16 ones (linalg.matmul widens
// its inputs itself), a transposed one transposed in bf16, before the
// widening would fuse with the ReLU that produces it.
// CHECK-LABEL: func.func @matmul_reads_narrow
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xbf16>, %[[W:.*]]: tensor<16x8xbf16>)
// CHECK: %[[R:.*]] = linalg.generic {{.*}} ins(%[[X]] : tensor<4x8xbf16>) outs(%{{.*}} : tensor<4x8xbf16>)
// CHECK:   arith.maximumf
// CHECK: %[[T:.*]] = linalg.transpose ins(%[[W]] : tensor<16x8xbf16>) outs(%{{.*}} : tensor<8x16xbf16>) permutation = [1, 0]
// CHECK: linalg.matmul ins(%[[R]], %[[T]] : tensor<4x8xbf16>, tensor<8x16xbf16>) outs(%{{.*}} : tensor<4x16xf32>)
// CHECK-NOT: arith.extf
#id2 = affine_map<(d0, d1) -> (d0, d1)>
func.func @matmul_reads_narrow(%x: tensor<4x8xbf16>, %w: tensor<16x8xbf16>) -> tensor<4x16xf32> {
  %zero = arith.constant 0.0 : bf16
  %e0 = tensor.empty() : tensor<4x8xbf16>
  %relu = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<4x8xbf16>) outs(%e0 : tensor<4x8xbf16>) {
  ^bb0(%a: bf16, %o: bf16):
    %r = arith.maximumf %a, %zero : bf16
    linalg.yield %r : bf16
  } -> tensor<4x8xbf16>
  %e1 = tensor.empty() : tensor<4x8xf32>
  %xw = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%relu : tensor<4x8xbf16>) outs(%e1 : tensor<4x8xf32>) {
  ^bb0(%a: bf16, %o: f32):
    %r = arith.extf %a : bf16 to f32
    linalg.yield %r : f32
  } -> tensor<4x8xf32>
  %e2 = tensor.empty() : tensor<16x8xf32>
  %ww = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%w : tensor<16x8xbf16>) outs(%e2 : tensor<16x8xf32>) {
  ^bb0(%a: bf16, %o: f32):
    %r = arith.extf %a : bf16 to f32
    linalg.yield %r : f32
  } -> tensor<16x8xf32>
  %e3 = tensor.empty() : tensor<8x16xf32>
  %t = linalg.transpose ins(%ww : tensor<16x8xf32>) outs(%e3 : tensor<8x16xf32>) permutation = [1, 0]
  %fzero = arith.constant 0.0 : f32
  %e4 = tensor.empty() : tensor<4x16xf32>
  %acc = linalg.fill ins(%fzero : f32) outs(%e4 : tensor<4x16xf32>) -> tensor<4x16xf32>
  %y = linalg.matmul ins(%xw, %t : tensor<4x8xf32>, tensor<8x16xf32>) outs(%acc : tensor<4x16xf32>) -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}

// -----

// A flattened tensor feeding a matrix product (a Linear layer after a
// convolution) stays flattened: folding the collapse by expansion would turn
// the matmul into a generic with three reduction loops, which no matmul
// kernel takes.
// CHECK-LABEL: func.func @flatten_into_matmul
// CHECK: tensor.collapse_shape
// CHECK: linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<16x3136xf32>, tensor<3136x10xf32>)
func.func @flatten_into_matmul(%x: tensor<16x64x7x7xf32>, %w: tensor<3136x10xf32>) -> tensor<16x10xf32> {
  %flat = tensor.collapse_shape %x [[0], [1, 2, 3]] : tensor<16x64x7x7xf32> into tensor<16x3136xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<16x10xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<16x10xf32>) -> tensor<16x10xf32>
  %y = linalg.matmul ins(%flat, %w : tensor<16x3136xf32>, tensor<3136x10xf32>) outs(%init : tensor<16x10xf32>) -> tensor<16x10xf32>
  return %y : tensor<16x10xf32>
}

// -----

// A keepdim reduction's result expanded to [N, 1] stays a 2-D row
// reduction: expanded into it, the reduction would get a unit parallel loop
// beside the reduced one, which the CPU schedule does not take as a row
// reduction (a 256x1024 max with keepdim ran 14x slower).
// CHECK-LABEL: func.func @keepdim_reduction
// CHECK: linalg.generic {indexing_maps = [#{{.+}}, #{{.+}}], iterator_types = ["parallel", "reduction"]}
// CHECK: tensor.expand_shape %{{.+}} {{\[\[}}0, 1]] output_shape [256, 1] : tensor<256xf32> into tensor<256x1xf32>
#in = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func @keepdim_reduction(%x: tensor<256x1024xf32>) -> tensor<256x1xf32> {
  %cst = arith.constant 0xFF800000 : f32
  %e = tensor.empty() : tensor<256xf32>
  %init = linalg.fill ins(%cst : f32) outs(%e : tensor<256xf32>) -> tensor<256xf32>
  %max = linalg.generic {indexing_maps = [#in, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<256x1024xf32>) outs(%init : tensor<256xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %m = arith.maximumf %a, %acc : f32
    linalg.yield %m : f32
  } -> tensor<256xf32>
  %kept = tensor.expand_shape %max [[0, 1]] output_shape [256, 1] : tensor<256xf32> into tensor<256x1xf32>
  return %kept : tensor<256x1xf32>
}

// -----

// An expand that would cut the producer's rows of whole vectors (784 = 49 x
// 16) into 7-wide ones is not folded into the producer (rows of 7 ran a
// Winograd output transform 4x slower); one that only appends unit
// dimensions (a 1x1 kernel's) still is.
// CHECK-LABEL: func.func @keep_whole_vector_rows
// CHECK: %[[ROWS:.+]] = linalg.generic {{.*}} outs(%{{.+}} : tensor<8x784xf32>)
// CHECK: tensor.expand_shape %[[ROWS]] {{\[}}[0], [1, 2, 3]] output_shape [8, 16, 7, 7]
// CHECK-LABEL: func.func @fold_unit_trailing
// CHECK: linalg.generic {{.*}} outs(%{{.+}} : tensor<8x32x1x1xf32>)
#id2 = affine_map<(d0, d1) -> (d0, d1)>
func.func @keep_whole_vector_rows(%x: tensor<8x784xf32>) -> tensor<8x16x7x7xf32> {
  %e = tensor.empty() : tensor<8x784xf32>
  %0 = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<8x784xf32>) outs(%e : tensor<8x784xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = math.exp %a : f32
    linalg.yield %r : f32
  } -> tensor<8x784xf32>
  %1 = tensor.expand_shape %0 [[0], [1, 2, 3]] output_shape [8, 16, 7, 7] : tensor<8x784xf32> into tensor<8x16x7x7xf32>
  return %1 : tensor<8x16x7x7xf32>
}
func.func @fold_unit_trailing(%x: tensor<8x32xf32>) -> tensor<8x32x1x1xf32> {
  %e = tensor.empty() : tensor<8x32xf32>
  %0 = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<8x32xf32>) outs(%e : tensor<8x32xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = math.exp %a : f32
    linalg.yield %r : f32
  } -> tensor<8x32xf32>
  %1 = tensor.expand_shape %0 [[0], [1, 2, 3]] output_shape [8, 32, 1, 1] : tensor<8x32xf32> into tensor<8x32x1x1xf32>
  return %1 : tensor<8x32x1x1xf32>
}

// -----

// Mixed precision rounds each op's result to bf16 and widens it again where
// the next op reads it. Once fused, a rounding of a value that is already a
// bf16 (the ReLU of a rounded value) goes, and the one left rounds on the
// float32's bits (to nearest even, NaN kept) instead of converting to bf16
// and back.
// CHECK-LABEL: func.func @bf16_round_trips
// CHECK: linalg.generic
// CHECK-NOT: arith.truncf
// CHECK-NOT: arith.extf
// CHECK:   %[[BITS:.+]] = arith.bitcast %{{.+}} : f32 to i32
// CHECK:   %[[LSB:.+]] = arith.shrui %[[BITS]], %{{.+}} : i32
// CHECK:   arith.andi %[[LSB]]
// CHECK:   arith.addi %[[BITS]]
// CHECK:   %[[KEPT:.+]] = arith.andi %{{.+}}, %{{.+}} : i32
// CHECK:   %[[ROUNDED:.+]] = arith.bitcast %[[KEPT]] : i32 to f32
// CHECK:   %[[NAN:.+]] = arith.cmpf uno
// CHECK:   %[[R:.+]] = arith.select %[[NAN]], %{{.+}}, %[[ROUNDED]] : f32
// CHECK:   %[[RELU:.+]] = arith.maximumf %[[R]], %{{.+}} : f32
// CHECK-NOT: arith.bitcast
// CHECK:   linalg.yield %[[RELU]] : f32
// CHECK-NOT: linalg.generic
#id = affine_map<(d0) -> (d0)>
func.func @bf16_round_trips(%x: tensor<8xf32>) -> tensor<8xf32> {
  %wide = tensor.empty() : tensor<8xf32>
  %narrow = tensor.empty() : tensor<8xbf16>
  %zero = arith.constant 0.0 : f32
  %0 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%x : tensor<8xf32>) outs(%narrow : tensor<8xbf16>) {
  ^bb0(%a: f32, %o: bf16):
    %r = arith.truncf %a : f32 to bf16
    linalg.yield %r : bf16
  } -> tensor<8xbf16>
  %1 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%0 : tensor<8xbf16>) outs(%wide : tensor<8xf32>) {
  ^bb0(%a: bf16, %o: f32):
    %e = arith.extf %a : bf16 to f32
    %r = arith.maximumf %e, %zero : f32
    %t = arith.truncf %r : f32 to bf16
    %back = arith.extf %t : bf16 to f32
    linalg.yield %back : f32
  } -> tensor<8xf32>
  return %1 : tensor<8xf32>
}

// -----

// A producer does not fuse into a convolution whose lowering chose its
// kernel: the fused generic would lose the choice, and its body would no
// longer be the multiply-add the kernel takes.
// CHECK-LABEL: func.func @not_into_conv_kernel
// CHECK: %[[WIDE:.+]] = linalg.generic
// CHECK:   arith.extf
// CHECK: linalg.generic {{.*}} ins(%{{.+}}, %[[WIDE]] :
// CHECK-SAME: kernel = conv_flat
// CHECK-NOT: arith.extf
#in = affine_map<(n, f, p, c, k) -> (n, c, p + k)>
#w = affine_map<(n, f, p, c, k) -> (f, c, k)>
#out = affine_map<(n, f, p, c, k) -> (n, f, p)>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
func.func @not_into_conv_kernel(%x: tensor<1x2x10xf32>, %w: tensor<4x2x3xbf16>,
                                %acc: tensor<1x4x8xf32>) -> tensor<1x4x8xf32> {
  %e = tensor.empty() : tensor<4x2x3xf32>
  %wide = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%w : tensor<4x2x3xbf16>) outs(%e : tensor<4x2x3xf32>) {
  ^bb0(%a: bf16, %o: f32):
    %r = arith.extf %a : bf16 to f32
    linalg.yield %r : f32
  } -> tensor<4x2x3xf32>
  %y = linalg.generic {indexing_maps = [#in, #w, #out],
                       iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction"]}
      ins(%x, %wide : tensor<1x2x10xf32>, tensor<4x2x3xf32>) outs(%acc : tensor<1x4x8xf32>)
      attrs = {mithril.lowering_config = #mithril.lowering_config<kernel = conv_flat>} {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %o, %m : f32
    linalg.yield %s : f32
  } -> tensor<1x4x8xf32>
  return %y : tensor<1x4x8xf32>
}

// -----

// A transpose of the last two dimensions keeps its view as it is: expanded
// into its consumer's [2, 8, 6, 6], it would no longer move 16 x 16 register
// blocks but gather single elements.
// CHECK-LABEL: func.func @not_through_register_transpose
// CHECK: %[[T:.+]] = linalg.transpose ins(%{{.+}} : tensor<2x36x8xf32>) outs(%{{.+}} : tensor<2x8x36xf32>) permutation = [0, 2, 1]
// CHECK: tensor.expand_shape %[[T]] {{\[}}[0], [1], [2, 3]]
// CHECK: linalg.generic
// CHECK-SAME: ins(%{{.+}} : tensor<2x8x6x6xf32>)
#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
func.func @not_through_register_transpose(%x: tensor<2x36x8xf32>) -> tensor<2x8x6x6xf32> {
  %e = tensor.empty() : tensor<2x8x36xf32>
  %t = linalg.transpose ins(%x : tensor<2x36x8xf32>) outs(%e : tensor<2x8x36xf32>) permutation = [0, 2, 1]
  %v = tensor.expand_shape %t [[0], [1], [2, 3]] output_shape [2, 8, 6, 6] : tensor<2x8x36xf32> into tensor<2x8x6x6xf32>
  %o = tensor.empty() : tensor<2x8x6x6xf32>
  %r = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%v : tensor<2x8x6x6xf32>) outs(%o : tensor<2x8x6x6xf32>) {
  ^bb0(%a: f32, %b: f32):
    %z = arith.constant 0.0 : f32
    %m = arith.maximumf %a, %z : f32
    linalg.yield %m : f32
  } -> tensor<2x8x6x6xf32>
  return %r : tensor<2x8x6x6xf32>
}

// -----

// Nor does a transpose of the last two dimensions take in a collapse of
// either of them (a Linear's weight gradient transposing its [8, 4, 16]
// input viewed as [32, 16]): expanded, it would swap 16 with 8 x 4, a
// gather of single elements.
// CHECK-LABEL: func.func @collapse_kept_before_register_transpose
// CHECK: %[[C:.+]] = tensor.collapse_shape %{{.+}} {{\[}}[0, 1], [2]] : tensor<8x4x16xf32> into tensor<32x16xf32>
// CHECK: linalg.transpose ins(%[[C]] : tensor<32x16xf32>) outs(%{{.+}} : tensor<16x32xf32>) permutation = [1, 0]
func.func @collapse_kept_before_register_transpose(%x: tensor<8x4x16xf32>) -> tensor<16x32xf32> {
  %c = tensor.collapse_shape %x [[0, 1], [2]] : tensor<8x4x16xf32> into tensor<32x16xf32>
  %e = tensor.empty() : tensor<16x32xf32>
  %t = linalg.transpose ins(%c : tensor<32x16xf32>) outs(%e : tensor<16x32xf32>) permutation = [1, 0]
  return %t : tensor<16x32xf32>
}

// -----

// Where the collapse is of an element-wise op's result that can fuse on (a
// convolution's gradient copied channels-last: the CPU schedule then writes
// it transposed in one pass), the collapse does fuse into the transpose.
// CHECK-LABEL: func.func @collapse_of_elementwise_into_transpose
// CHECK: %[[N:.+]] = linalg.generic
// CHECK: arith.negf
// CHECK: %[[T:.+]] = linalg.transpose ins(%[[N]] : tensor<8x4x16xf32>) outs(%{{.+}} : tensor<16x8x4xf32>) permutation = [2, 0, 1]
// CHECK: tensor.collapse_shape %[[T]] {{\[}}[0], [1, 2]]
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
func.func @collapse_of_elementwise_into_transpose(%x: tensor<8x4x16xf32>) -> tensor<16x32xf32> {
  %o = tensor.empty() : tensor<8x4x16xf32>
  %n = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%x : tensor<8x4x16xf32>) outs(%o : tensor<8x4x16xf32>) {
  ^bb0(%a: f32, %b: f32):
    %m = arith.negf %a : f32
    linalg.yield %m : f32
  } -> tensor<8x4x16xf32>
  %c = tensor.collapse_shape %n [[0, 1], [2]] : tensor<8x4x16xf32> into tensor<32x16xf32>
  %e = tensor.empty() : tensor<16x32xf32>
  %t = linalg.transpose ins(%c : tensor<32x16xf32>) outs(%e : tensor<16x32xf32>) permutation = [1, 0]
  return %t : tensor<16x32xf32>
}

// -----

// A collapse of the batch before them still fuses: the transpose, expanded,
// swaps the same last two.
// CHECK-LABEL: func.func @batch_collapse_into_register_transpose
// CHECK-NOT: tensor.collapse_shape %arg0
// CHECK: linalg.transpose ins(%arg0 : tensor<2x3x5x7xf32>) outs(%{{.+}} : tensor<2x3x7x5xf32>) permutation = [0, 1, 3, 2]
func.func @batch_collapse_into_register_transpose(%x: tensor<2x3x5x7xf32>) -> tensor<6x7x5xf32> {
  %c = tensor.collapse_shape %x [[0, 1], [2], [3]] : tensor<2x3x5x7xf32> into tensor<6x5x7xf32>
  %e = tensor.empty() : tensor<6x7x5xf32>
  %t = linalg.transpose ins(%c : tensor<6x5x7xf32>) outs(%e : tensor<6x7x5xf32>) permutation = [0, 2, 1]
  return %t : tensor<6x7x5xf32>
}

// -----

// Transposed to planes and read back channels-last (a first convolution
// pooled channels-last, rounded to bf16 for a second one's tiles), the two
// transposes cancel: the consumer reads the channels-last tensor in its own
// order, and fuses with the op that produced it.
// CHECK-LABEL: func.func @transpose_round_trip
// CHECK-NOT: linalg.transpose
// CHECK: %[[R:.+]] = linalg.generic
// CHECK-SAME: ins(%arg0 : tensor<2x6x6x32xf32>) outs(%{{.+}} : tensor<2x6x6x32xbf16>)
// CHECK: arith.maximumf
// CHECK: arith.truncf
// CHECK: return %[[R]]
#id4r = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#planes = affine_map<(d0, d1, d2, d3) -> (d0, d3, d1, d2)>
func.func @transpose_round_trip(%x: tensor<2x6x6x32xf32>) -> tensor<2x6x6x32xbf16> {
  %e0 = tensor.empty() : tensor<2x6x6x32xf32>
  %relu = linalg.generic {indexing_maps = [#id4r, #id4r], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x : tensor<2x6x6x32xf32>) outs(%e0 : tensor<2x6x6x32xf32>) {
  ^bb0(%a: f32, %b: f32):
    %z = arith.constant 0.0 : f32
    %m = arith.maximumf %a, %z : f32
    linalg.yield %m : f32
  } -> tensor<2x6x6x32xf32>
  %rows = tensor.collapse_shape %relu [[0], [1, 2], [3]] : tensor<2x6x6x32xf32> into tensor<2x36x32xf32>
  %e1 = tensor.empty() : tensor<2x32x36xf32>
  %t = linalg.transpose ins(%rows : tensor<2x36x32xf32>) outs(%e1 : tensor<2x32x36xf32>) permutation = [0, 2, 1]
  %p = tensor.expand_shape %t [[0], [1], [2, 3]] output_shape [2, 32, 6, 6] : tensor<2x32x36xf32> into tensor<2x32x6x6xf32>
  %e2 = tensor.empty() : tensor<2x6x6x32xbf16>
  %r = linalg.generic {indexing_maps = [#planes, #id4r], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%p : tensor<2x32x6x6xf32>) outs(%e2 : tensor<2x6x6x32xbf16>) {
  ^bb0(%a: f32, %b: bf16):
    %n = arith.truncf %a : f32 to bf16
    linalg.yield %n : bf16
  } -> tensor<2x6x6x32xbf16>
  return %r : tensor<2x6x6x32xbf16>
}

// -----

// A value rounded to bf16 and widened, whose maximum with zero (a ReLU) is
// rounded to bf16 again: the first rounding goes (rounding is monotone and
// idempotent). Rounded to another type, it stays.
// CHECK-LABEL: func.func @rounding_before_rounding
// CHECK: ^bb0(%[[X:.+]]: f32, %{{.+}}: bf16):
// CHECK-NEXT: %[[M:.+]] = arith.maximumf %[[X]], %{{.+}} : f32
// CHECK-NEXT: %[[T:.+]] = arith.truncf %[[M]] : f32 to bf16
// CHECK-NEXT: linalg.yield %[[T]]
// (The round trip then rounds on the value's bits.)
// CHECK-LABEL: func.func @rounding_before_other_rounding
// CHECK: arith.bitcast %{{.+}} : f32 to i32
// CHECK: %[[R:.+]] = arith.select
// CHECK-NEXT: %[[M:.+]] = arith.maximumf %[[R]], %{{.+}} : f32
// CHECK-NEXT: arith.truncf %[[M]] : f32 to f16
#idr = affine_map<(d0) -> (d0)>
func.func @rounding_before_rounding(%x: tensor<64xf32>) -> tensor<64xbf16> {
  %e = tensor.empty() : tensor<64xbf16>
  %r = linalg.generic {indexing_maps = [#idr, #idr], iterator_types = ["parallel"]}
      ins(%x : tensor<64xf32>) outs(%e : tensor<64xbf16>) {
  ^bb0(%a: f32, %b: bf16):
    %z = arith.constant 0.0 : f32
    %n = arith.truncf %a : f32 to bf16
    %w = arith.extf %n : bf16 to f32
    %m = arith.maximumf %w, %z : f32
    %t = arith.truncf %m : f32 to bf16
    linalg.yield %t : bf16
  } -> tensor<64xbf16>
  return %r : tensor<64xbf16>
}
func.func @rounding_before_other_rounding(%x: tensor<64xf32>) -> tensor<64xf16> {
  %e = tensor.empty() : tensor<64xf16>
  %r = linalg.generic {indexing_maps = [#idr, #idr], iterator_types = ["parallel"]}
      ins(%x : tensor<64xf32>) outs(%e : tensor<64xf16>) {
  ^bb0(%a: f32, %b: f16):
    %z = arith.constant 0.0 : f32
    %n = arith.truncf %a : f32 to bf16
    %w = arith.extf %n : bf16 to f32
    %m = arith.maximumf %w, %z : f32
    %t = arith.truncf %m : f32 to f16
    linalg.yield %t : f16
  } -> tensor<64xf16>
  return %r : tensor<64xf16>
}

// -----

// Read back in another order than its own result's, the view stays (the
// transpose is the register-block kind).
// CHECK-LABEL: func.func @transpose_view_kept
// CHECK: linalg.transpose
// CHECK: linalg.generic
// CHECK-SAME: ins(%{{.+}} : tensor<2x32x6x6xf32>)
#id4k = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
func.func @transpose_view_kept(%x: tensor<2x6x6x32xf32>) -> tensor<2x32x6x6xf32> {
  %rows = tensor.collapse_shape %x [[0], [1, 2], [3]] : tensor<2x6x6x32xf32> into tensor<2x36x32xf32>
  %e1 = tensor.empty() : tensor<2x32x36xf32>
  %t = linalg.transpose ins(%rows : tensor<2x36x32xf32>) outs(%e1 : tensor<2x32x36xf32>) permutation = [0, 2, 1]
  %p = tensor.expand_shape %t [[0], [1], [2, 3]] output_shape [2, 32, 6, 6] : tensor<2x32x36xf32> into tensor<2x32x6x6xf32>
  %e2 = tensor.empty() : tensor<2x32x6x6xf32>
  %r = linalg.generic {indexing_maps = [#id4k, #id4k], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%p : tensor<2x32x6x6xf32>) outs(%e2 : tensor<2x32x6x6xf32>) {
  ^bb0(%a: f32, %b: f32):
    %z = arith.constant 0.0 : f32
    %m = arith.maximumf %a, %z : f32
    linalg.yield %m : f32
  } -> tensor<2x32x6x6xf32>
  return %r : tensor<2x32x6x6xf32>
}

// -----

// Mixed precision's rounding of a value that reaches only a ReLU and a max
// pooling before it is rounded again is dropped: they read the unrounded
// value (rounding is monotonic, so the pooled results round the same).
// CHECK-LABEL: func.func @rounding_dropped_before_max
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>)
// CHECK-NOT: arith.truncf
// CHECK: tensor.expand_shape %[[X]]
// CHECK: linalg.generic
// CHECK-NOT: arith.shrui
// CHECK: arith.maximumf
// CHECK: arith.maximumf
// CHECK: arith.truncf %{{.*}} : f32 to bf16
#id = affine_map<(d0, d1) -> (d0, d1)>
#pin = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#pout = affine_map<(d0, d1, d2) -> (d0, d1)>
func.func @rounding_dropped_before_max(%x: tensor<4x8xf32>) -> tensor<4x4xbf16> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %e16 = tensor.empty() : tensor<4x8xbf16>
  %e32 = tensor.empty() : tensor<4x8xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<4x8xf32>) outs(%e16 : tensor<4x8xbf16>) {
  ^bb0(%in: f32, %out: bf16):
    %t = arith.truncf %in : f32 to bf16
    linalg.yield %t : bf16
  } -> tensor<4x8xbf16>
  %w = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%r : tensor<4x8xbf16>) outs(%e32 : tensor<4x8xf32>) {
  ^bb0(%in: bf16, %out: f32):
    %t = arith.extf %in : bf16 to f32
    linalg.yield %t : f32
  } -> tensor<4x8xf32>
  %relu = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%w : tensor<4x8xf32>) outs(%e32 : tensor<4x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.maximumf %in, %zero : f32
    linalg.yield %m : f32
  } -> tensor<4x8xf32>
  %e4 = tensor.empty() : tensor<4x4xf32>
  %init = linalg.fill ins(%ninf : f32) outs(%e4 : tensor<4x4xf32>) -> tensor<4x4xf32>
  %windows = tensor.expand_shape %relu [[0], [1, 2]] output_shape [4, 4, 2] : tensor<4x8xf32> into tensor<4x4x2xf32>
  %pool = linalg.generic {indexing_maps = [#pin, #pout], iterator_types = ["parallel", "parallel", "reduction"]} ins(%windows : tensor<4x4x2xf32>) outs(%init : tensor<4x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.maximumf %in, %out : f32
    linalg.yield %m : f32
  } -> tensor<4x4xf32>
  %o16 = tensor.empty() : tensor<4x4xbf16>
  %out = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%pool : tensor<4x4xf32>) outs(%o16 : tensor<4x4xbf16>) {
  ^bb0(%in: f32, %o: bf16):
    %t = arith.truncf %in : f32 to bf16
    linalg.yield %t : bf16
  } -> tensor<4x4xbf16>
  return %out : tensor<4x4xbf16>
}

// -----

// The ReLU's result is also read elsewhere (a gradient would): the rounding
// stays, on the bits (round to nearest even).
// CHECK-LABEL: func.func @rounding_kept_for_other_reader
// CHECK: arith.shrui
// CHECK: arith.maximumf
#id = affine_map<(d0, d1) -> (d0, d1)>
#pin = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#pout = affine_map<(d0, d1, d2) -> (d0, d1)>
func.func @rounding_kept_for_other_reader(%x: tensor<4x8xf32>) -> (tensor<4x4xbf16>, tensor<4x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %e16 = tensor.empty() : tensor<4x8xbf16>
  %e32 = tensor.empty() : tensor<4x8xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<4x8xf32>) outs(%e16 : tensor<4x8xbf16>) {
  ^bb0(%in: f32, %out: bf16):
    %t = arith.truncf %in : f32 to bf16
    linalg.yield %t : bf16
  } -> tensor<4x8xbf16>
  %w = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%r : tensor<4x8xbf16>) outs(%e32 : tensor<4x8xf32>) {
  ^bb0(%in: bf16, %out: f32):
    %t = arith.extf %in : bf16 to f32
    linalg.yield %t : f32
  } -> tensor<4x8xf32>
  %relu = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%w : tensor<4x8xf32>) outs(%e32 : tensor<4x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.maximumf %in, %zero : f32
    linalg.yield %m : f32
  } -> tensor<4x8xf32>
  %e4 = tensor.empty() : tensor<4x4xf32>
  %init = linalg.fill ins(%ninf : f32) outs(%e4 : tensor<4x4xf32>) -> tensor<4x4xf32>
  %windows = tensor.expand_shape %relu [[0], [1, 2]] output_shape [4, 4, 2] : tensor<4x8xf32> into tensor<4x4x2xf32>
  %pool = linalg.generic {indexing_maps = [#pin, #pout], iterator_types = ["parallel", "parallel", "reduction"]} ins(%windows : tensor<4x4x2xf32>) outs(%init : tensor<4x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.maximumf %in, %out : f32
    linalg.yield %m : f32
  } -> tensor<4x4xf32>
  %o16 = tensor.empty() : tensor<4x4xbf16>
  %out = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%pool : tensor<4x4xf32>) outs(%o16 : tensor<4x4xbf16>) {
  ^bb0(%in: f32, %o: bf16):
    %t = arith.truncf %in : f32 to bf16
    linalg.yield %t : bf16
  } -> tensor<4x4xbf16>
  return %out, %relu : tensor<4x4xbf16>, tensor<4x8xf32>
}

// -----

// A sum is not a max or min: the rounding before it stays.
// CHECK-LABEL: func.func @rounding_kept_before_sum
// CHECK: arith.shrui
// CHECK: arith.addf
#id = affine_map<(d0, d1) -> (d0, d1)>
#pin = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#pout = affine_map<(d0, d1, d2) -> (d0, d1)>
func.func @rounding_kept_before_sum(%x: tensor<4x8xf32>) -> tensor<4x4xbf16> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %e16 = tensor.empty() : tensor<4x8xbf16>
  %e32 = tensor.empty() : tensor<4x8xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<4x8xf32>) outs(%e16 : tensor<4x8xbf16>) {
  ^bb0(%in: f32, %out: bf16):
    %t = arith.truncf %in : f32 to bf16
    linalg.yield %t : bf16
  } -> tensor<4x8xbf16>
  %w = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%r : tensor<4x8xbf16>) outs(%e32 : tensor<4x8xf32>) {
  ^bb0(%in: bf16, %out: f32):
    %t = arith.extf %in : bf16 to f32
    linalg.yield %t : f32
  } -> tensor<4x8xf32>
  %relu = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%w : tensor<4x8xf32>) outs(%e32 : tensor<4x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.addf %in, %zero : f32
    linalg.yield %m : f32
  } -> tensor<4x8xf32>
  %e4 = tensor.empty() : tensor<4x4xf32>
  %init = linalg.fill ins(%ninf : f32) outs(%e4 : tensor<4x4xf32>) -> tensor<4x4xf32>
  %windows = tensor.expand_shape %relu [[0], [1, 2]] output_shape [4, 4, 2] : tensor<4x8xf32> into tensor<4x4x2xf32>
  %pool = linalg.generic {indexing_maps = [#pin, #pout], iterator_types = ["parallel", "parallel", "reduction"]} ins(%windows : tensor<4x4x2xf32>) outs(%init : tensor<4x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.maximumf %in, %out : f32
    linalg.yield %m : f32
  } -> tensor<4x4xf32>
  %o16 = tensor.empty() : tensor<4x4xbf16>
  %out = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%pool : tensor<4x4xf32>) outs(%o16 : tensor<4x4xbf16>) {
  ^bb0(%in: f32, %o: bf16):
    %t = arith.truncf %in : f32 to bf16
    linalg.yield %t : bf16
  } -> tensor<4x4xbf16>
  return %out : tensor<4x4xbf16>
}

// -----

// Transposes of constants fold by moving their bytes (a compiled-in weight):
// 2x3x2 permuted [2, 0, 1] to 2x2x3, out[i][j][k] = in[j][k][i]; and bf16.
// CHECK-LABEL: func.func @constant_transposes
// CHECK-DAG: arith.constant dense<{{\[\[\[}}0, 2, 4], [6, 8, 10]], {{\[\[}}1, 3, 5], [7, 9, 11]]]> : tensor<2x2x3xi32>
// CHECK-DAG: arith.constant dense<{{\[\[}}1.000000e+00, 3.000000e+00], [2.000000e+00, 4.000000e+00]]> : tensor<2x2xbf16>
// CHECK-NOT: linalg.transpose
func.func @constant_transposes() -> (tensor<2x2x3xi32>, tensor<2x2xbf16>) {
  %c = arith.constant dense<[[[0, 1], [2, 3], [4, 5]], [[6, 7], [8, 9], [10, 11]]]> : tensor<2x3x2xi32>
  %e = tensor.empty() : tensor<2x2x3xi32>
  %t = linalg.transpose ins(%c : tensor<2x3x2xi32>) outs(%e : tensor<2x2x3xi32>) permutation = [2, 0, 1]
  %h = arith.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xbf16>
  %e2 = tensor.empty() : tensor<2x2xbf16>
  %t2 = linalg.transpose ins(%h : tensor<2x2xbf16>) outs(%e2 : tensor<2x2xbf16>) permutation = [1, 0]
  return %t, %t2 : tensor<2x2x3xi32>, tensor<2x2xbf16>
}

// -----

// A constant with other readers stays (no copy of a weight also read as it is).
// CHECK-LABEL: func.func @shared_constant
// CHECK: linalg.transpose
func.func @shared_constant() -> (tensor<3x2xi32>, tensor<2x3xi32>) {
  %c = arith.constant dense<[[0, 1, 2], [3, 4, 5]]> : tensor<2x3xi32>
  %e = tensor.empty() : tensor<3x2xi32>
  %t = linalg.transpose ins(%c : tensor<2x3xi32>) outs(%e : tensor<3x2xi32>) permutation = [1, 0]
  return %t, %c : tensor<3x2xi32>, tensor<2x3xi32>
}
