// RUN: mithril-opt %s -split-input-file --convert-mithril-to-linalg | FileCheck %s
// RUN: mithril-opt %s -split-input-file --convert-mithril-to-linalg="window-ranks=3" | FileCheck %s --check-prefix=RANKS

// A model becomes a func with its terminal names kept as argument attributes;
// matmul is a zero-filled linalg.matmul, broadcasting elementwise ops are
// linalg.generic ops whose indexing maps do the broadcast.
// CHECK-DAG: #[[ID:.+]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[ROW:.+]] = affine_map<(d0, d1) -> (d1)>
// CHECK-LABEL: func.func @Dense(
// CHECK-SAME: %[[X:.+]]: tensor<8x16xf32> {mithril.kind = #mithril.input_kind<data>, mithril.name = "x"}
// CHECK-SAME: %[[W:.+]]: tensor<16x32xf32> {mithril.kind = #mithril.input_kind<param>, mithril.name = "w"}
// CHECK-SAME: %[[B:.+]]: tensor<32xf32> {mithril.kind = #mithril.input_kind<param>, mithril.name = "b"}
// CHECK-SAME: -> (tensor<8x32xf32> {mithril.name = "y"}) attributes {llvm.emit_c_interface}
// CHECK: %[[ZERO:.+]] = linalg.fill
// CHECK: %[[MM:.+]] = linalg.matmul ins(%[[X]], %[[W]] : {{.*}}) outs(%[[ZERO]] :
// CHECK: %[[ADD:.+]] = linalg.generic {indexing_maps = [#[[ID]], #[[ROW]], #[[ID]]], iterator_types = ["parallel", "parallel"]} ins(%[[MM]], %[[B]] :
// CHECK: arith.addf
// CHECK: %[[RELU:.+]] = linalg.generic {{.*}} ins(%[[ADD]] :
// CHECK: arith.maximumf
// CHECK: return %[[RELU]]
mithril.model @Dense(data %x: tensor<8x16xf32>, param %w: tensor<16x32xf32>, param %b: tensor<32xf32>) -> (y: tensor<8x32xf32>) {
  %mm = mithril.matmul %x, %w : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
  %a = mithril.add %mm, %b : (tensor<8x32xf32>, tensor<32xf32>) -> tensor<8x32xf32>
  %y = mithril.relu %a : (tensor<8x32xf32>) -> tensor<8x32xf32>
  mithril.output %y : tensor<8x32xf32>
}

// -----

// A division marked `reciprocal` (a softmax's, a norm's) is an arith.divf
// with `arcp`: LLVM may invert a divisor repeated along a row once. Others
// divide exactly.
// CHECK-LABEL: func.func @Divisions(
// CHECK: arith.divf %{{.+}}, %{{.+}} : f32
// CHECK: arith.divf %{{.+}}, %{{.+}} fastmath<arcp> : f32
mithril.model @Divisions(data %x: tensor<4x6xf32>, data %s: tensor<4x1xf32>) -> (y: tensor<4x6xf32>) {
  %a = mithril.divide %x, %s : (tensor<4x6xf32>, tensor<4x1xf32>) -> tensor<4x6xf32>
  %y = mithril.divide %a, %s {reciprocal} : (tensor<4x6xf32>, tensor<4x1xf32>) -> tensor<4x6xf32>
  mithril.output %y : tensor<4x6xf32>
}

// -----

// Reductions are linalg.generic ops with reduction iterators into a filled init.
// CHECK-LABEL: func.func @RowSum(
// CHECK: linalg.fill
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]
// CHECK: arith.addf
mithril.model @RowSum(data %x: tensor<4x6xf64>) -> (y: tensor<4xf64>) {
  %y = mithril.sum %x {axes = array<i64: 1>, keepdim = false} : (tensor<4x6xf64>) -> tensor<4xf64>
  mithril.output %y : tensor<4xf64>
}

// -----

// eye_like writes 1 where the two loop indices agree; shifts are arith shifts.
// CHECK-LABEL: func.func @EyeAndShifts(
// CHECK: linalg.generic {{.*}} outs(%{{.+}} : tensor<3x4xf32>)
// CHECK: %[[I:.+]] = linalg.index 0
// CHECK: %[[J:.+]] = linalg.index 1
// CHECK: arith.cmpi eq, %[[I]], %[[J]]
// CHECK: arith.select
// CHECK: arith.shli
// CHECK: arith.shrsi
mithril.model @EyeAndShifts(data %x: tensor<3x4xf32>, data %i: tensor<5xi64>) -> (y: tensor<3x4xf32>, l: tensor<5xi64>, r: tensor<5xi64>) {
  %0 = mithril.eye_like %x : (tensor<3x4xf32>) -> tensor<3x4xf32>
  %1 = mithril.shift_left %i, %i : (tensor<5xi64>, tensor<5xi64>) -> tensor<5xi64>
  %2 = mithril.shift_right %i, %i : (tensor<5xi64>, tensor<5xi64>) -> tensor<5xi64>
  mithril.output %0, %1, %2 : tensor<3x4xf32>, tensor<5xi64>, tensor<5xi64>
}

// -----

// reverse gathers input[..., 2 - j] along the reversed axis.
// CHECK-LABEL: func.func @Reverse(
// CHECK: linalg.generic {{.*}} outs(%{{.+}} : tensor<4x3xf32>)
// CHECK: %[[J:.+]] = linalg.index 1
// CHECK: %[[R:.+]] = arith.subi %c2, %[[J]]
// CHECK: tensor.extract %arg0[%{{.+}}, %[[R]]]
mithril.model @Reverse(data %x: tensor<4x3xf32>) -> (y: tensor<4x3xf32>) {
  %0 = mithril.reverse %x {axes = array<i64: 1>} : (tensor<4x3xf32>) -> tensor<4x3xf32>
  mithril.output %0 : tensor<4x3xf32>
}

// -----

// The weight gradient of a plain 2-D convolution sums over flat rows of the
// padded width (8): the input padded and flattened as the forward convolution
// reads it, the output gradient zero-padded to the same rows and cut into
// blocks of 16 lanes; 16 lanes of partial sums per weight, added up after.
// CHECK-LABEL: func.func @ConvGradWeight(
// CHECK: %[[XP:.+]] = tensor.pad %arg0 low[0, 0, 1, 1] high[0, 0, 4, 1]
// CHECK: %[[XF:.+]] = tensor.collapse_shape %[[XP]] {{\[}}[0], [1], [2, 3]] : tensor<2x3x11x8xf32> into tensor<2x3x88xf32>
// CHECK: %[[GP:.+]] = tensor.pad %arg1 low[0, 0, 0, 0] high[0, 0, 0, 2]
// CHECK: %[[GL:.+]] = tensor.expand_shape {{.*}} into tensor<2x8x3x16xf32>
// CHECK: %[[PART:.+]] = linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]} ins(%[[XF]], %[[GL]] : tensor<2x3x88xf32>, tensor<2x8x3x16xf32>) outs(%{{.+}} : tensor<8x3x3x3x16xf32>) attrs = {mithril.lowering_config = #mithril.lowering_config<kernel = conv_flat_weight_grad>}
// CHECK: linalg.reduce ins(%[[PART]] : tensor<8x3x3x3x16xf32>) outs(%{{.+}} : tensor<8x3x3x3xf32>) dimensions = [4]
mithril.model @ConvGradWeight(data %x: tensor<2x3x6x6xf32>, data %g: tensor<2x8x6x6xf32>) -> (dw: tensor<8x3x3x3xf32>) {
  %dw = mithril.conv_grad_weight %x, %g {dilation = array<i64: 1, 1>, kernel_size = array<i64: 3, 3>, padding = array<i64: 1, 1, 1, 1>, stride = array<i64: 1, 1>} : (tensor<2x3x6x6xf32>, tensor<2x8x6x6xf32>) -> tensor<8x3x3x3xf32>
  mithril.output %dw : tensor<8x3x3x3xf32>
}

// -----

// Pooling over non-overlapping windows (stride == kernel, no padding) views
// the input [N, C, H, W] as [N, C, OH, KH, OW, KW]: the window reduction and
// the gradient (the window's output gradient where an element equals its
// maximum) are then projected permutations, which vectorize along OW.
// CHECK-LABEL: func.func @WindowPool(
// CHECK: %[[VIEW:.+]] = tensor.expand_shape %arg0 {{\[}}[0], [1], [2, 3], [4, 5]] output_shape [2, 3, 2, 2, 3, 2]
// CHECK: %[[Y:.+]] = linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]} ins(%[[VIEW]] : tensor<2x3x2x2x3x2xf32>) {{.*}} attrs = {mithril.lowering_config = #mithril.lowering_config<kernel = pool_window, window = [3, 4, 5]>}
// CHECK: arith.maximumf
// CHECK: %[[DX:.+]] = linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%arg1, %{{.+}}, %[[Y]] : {{.*}}) outs(%{{.+}} : tensor<2x3x2x2x3x2xf32>)
// CHECK: arith.cmpf oeq
// CHECK: arith.select
// CHECK: tensor.collapse_shape %[[DX]] {{\[}}[0], [1], [2, 3], [4, 5]] : tensor<2x3x2x2x3x2xf32> into tensor<2x3x4x6xf32>
mithril.model @WindowPool(data %x: tensor<2x3x4x6xf32>, data %g: tensor<2x3x2x3xf32>) -> (y: tensor<2x3x2x3xf32>, dx: tensor<2x3x4x6xf32>) {
  %y = mithril.max_pool2d %x {kernel_size = array<i64: 2, 2>, stride = array<i64: 2, 2>, padding = array<i64: 0, 0, 0, 0>, dilation = array<i64: 1, 1>} : (tensor<2x3x4x6xf32>) -> tensor<2x3x2x3xf32>
  %dx = mithril.max_pool_grad %x, %y, %g {kernel_size = array<i64: 2, 2>, stride = array<i64: 2, 2>, padding = array<i64: 0, 0, 0, 0>, dilation = array<i64: 1, 1>} : (tensor<2x3x4x6xf32>, tensor<2x3x2x3xf32>, tensor<2x3x2x3xf32>) -> tensor<2x3x4x6xf32>
  mithril.output %y, %dx : tensor<2x3x2x3xf32>, tensor<2x3x4x6xf32>
}

// -----

// A float32 sum accumulates in f64 and rounds once; a long sum of every
// axis keeps 32 lanes of partial sums, then adds the lanes.
// CHECK-LABEL: func.func @long_sum
// CHECK: tensor.expand_shape %{{.*}} {{\[\[}}0], [1, 2]] output_shape [4, 64, 32] : tensor<4x2048xf32> into tensor<4x64x32xf32>
// CHECK: linalg.fill ins(%{{.*}} : f64) outs(%{{.*}} : tensor<32xf64>)
// CHECK: linalg.generic {{.*}}iterator_types = ["reduction", "reduction", "parallel"]
// CHECK:   arith.extf %{{.*}} : f32 to f64
// CHECK:   arith.addf %{{.*}} : f64
// CHECK: linalg.generic {{.*}}iterator_types = ["reduction"]
// CHECK-SAME: ins(%{{.*}} : tensor<32xf64>) outs(%{{.*}} : tensor<f64>)
// CHECK: arith.truncf %{{.*}} : f64 to f32
mithril.model @long_sum(data %x: tensor<4x2048xf32>) -> (y: tensor<f32>) {
  %y = mithril.sum %x {axes = array<i64: 0, 1>} : (tensor<4x2048xf32>) -> tensor<f32>
  mithril.output %y : tensor<f32>
}
// A long sum along rows keeps its form (the CPU schedule carries each row
// tile's lanes itself, and fuses the sum into the rows of its reader).
// CHECK-LABEL: func.func @long_row_sum
// CHECK-NOT: tensor.expand_shape
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]
// CHECK-SAME: ins(%{{.*}} : tensor<4x2048xf32>) outs(%{{.*}} : tensor<4xf64>)
// CHECK: arith.truncf %{{.*}} : f64 to f32
mithril.model @long_row_sum(data %x: tensor<4x2048xf32>) -> (y: tensor<4xf32>) {
  %y = mithril.sum %x {axes = array<i64: 1>} : (tensor<4x2048xf32>) -> tensor<4xf32>
  mithril.output %y : tensor<4xf32>
}

// -----

// Dynamic unit-axis reshapes and flattens are single reshapes whose groups
// hold at most one dynamic size (not a collapse to 1-D and an expand with
// several, which upstream's expand-strided-metadata crashes on); an input
// without elements becomes an empty tensor.
// CHECK-LABEL: func.func @dynamic_reshapes
// CHECK: tensor.expand_shape %arg0 {{\[}}[0], [1, 2]] output_shape [%{{.*}}, %{{.*}}, 1] : tensor<?x?xf32> into tensor<?x?x1xf32>
// CHECK: tensor.collapse_shape %arg1 {{\[}}[0], [1, 2]] : tensor<?x?x?xf32> into tensor<?x?xf32>
// CHECK: tensor.collapse_shape %arg2 {{\[}}[0, 1], [2]] : tensor<?x1x?xf32> into tensor<?x?xf32>
// CHECK: tensor.empty(%{{.*}}) : tensor<?xf32>
mithril.model @dynamic_reshapes(data %a: tensor<?x?xf32>, data %b: tensor<?x?x?xf32>, data %c: tensor<?x1x?xf32>, data %d: tensor<?x0x1xf32>) -> (u: tensor<?x?x1xf32>, f: tensor<?x?xf32>, s: tensor<?x?xf32>, e: tensor<?xf32>) {
  %u = mithril.unsqueeze %a {axis = -1 : i64} : (tensor<?x?xf32>) -> tensor<?x?x1xf32>
  %f = mithril.flatten %b {start_dim = 1 : i64} : (tensor<?x?x?xf32>) -> tensor<?x?xf32>
  %s = mithril.squeeze %c {axes = array<i64: 1>} : (tensor<?x1x?xf32>) -> tensor<?x?xf32>
  %e = mithril.flatten %d : (tensor<?x0x1xf32>) -> tensor<?xf32>
  mithril.output %u, %f, %s, %e : tensor<?x?x1xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?xf32>
}

// -----

// An all_reduce of a static shape has its operand placed in its group's
// window (one mithril.collective_window a group at the entry, each operand
// at its own offset, 64-byte aligned) and starts the host's sum over its
// group (0 data, 1 tensor) of that place into the same offset of the group's
// buffer of results (so that operands side by side have their results side
// by side: the runtime hands them to MPI as one bucket). The wait for the sum
// comes just before the first op that reads it, and a wait for every sum of
// each group before the return; replicate is the identity forward.
// CHECK-DAG: func.func private @mithrilAllReduceStartF64(i64, memref<*xf64>, memref<*xf64>)
// CHECK-DAG: func.func private @mithrilAllReduceWait(i64, memref<*xi8>, i64)
// CHECK-DAG: func.func private @mithrilAllReduceWaitAll(i64)
// CHECK-LABEL: func.func @all_reduce(
// CHECK-DAG: %[[DATA:.+]] = mithril.collective_window : memref<128xi8>
// CHECK-DAG: %[[RESULTS:.+]] = memref.alloc() {alignment = 64 : i64} : memref<128xi8>
// CHECK-DAG: %[[TENSOR:.+]] = mithril.collective_window {group = "tensor"} : memref<64xi8>
// CHECK-DAG: %[[C0:.+]] = arith.constant 0 : index
// CHECK-DAG: %[[C64:.+]] = arith.constant 64 : index
// CHECK-DAG: %[[FIRST:.+]] = memref.view %[[DATA]][%[[C0]]][] : memref<128xi8> to memref<3x2xf64>
// CHECK-DAG: %[[FIRST_T:.+]] = bufferization.to_tensor %[[FIRST]] restrict writable
// CHECK-DAG: %[[DST:.+]] = memref.view %[[RESULTS]][%[[C0]]][] : memref<128xi8> to memref<3x2xf64>
// CHECK-DAG: %[[SECOND:.+]] = memref.view %[[DATA]][%[[C64]]][] : memref<128xi8> to memref<3x2xf64>
// CHECK-DAG: %[[SECOND_DST:.+]] = memref.view %[[RESULTS]][%[[C64]]][] : memref<128xi8> to memref<3x2xf64>
// CHECK-DAG: %[[THIRD:.+]] = memref.view %[[TENSOR]][%{{.+}}][] : memref<64xi8> to memref<3x2xf64>
// CHECK: %[[STAGED:.+]] = bufferization.materialize_in_destination %{{.+}} in %[[FIRST_T]]
// CHECK: %[[SRC:.+]] = bufferization.to_buffer %[[STAGED]] read_only : tensor<3x2xf64> to memref<3x2xf64>
// CHECK: %[[GROUP:.+]] = arith.constant 0 : i64
// CHECK: %[[S:.+]] = memref.cast %[[SRC]] : memref<3x2xf64> to memref<*xf64>
// CHECK: %[[D:.+]] = memref.cast %[[DST]] : memref<3x2xf64> to memref<*xf64>
// CHECK: call @mithrilAllReduceStartF64(%[[GROUP]], %[[S]], %[[D]])
// CHECK: %[[R:.+]] = memref.cast %[[RESULTS]] : memref<128xi8> to memref<*xi8>
// CHECK: %[[AT:.+]] = arith.constant 0 : i64
// CHECK: call @mithrilAllReduceWait(%{{.+}}, %[[R]], %[[AT]])
// CHECK: %[[SUM:.+]] = bufferization.to_tensor %[[DST]] restrict writable
// CHECK: bufferization.materialize_in_destination %[[SUM]] in
// CHECK: call @mithrilAllReduceStartF64(
// CHECK: call @mithrilAllReduceWait(%{{.+}}, %{{.+}}, %c64_i64)
// CHECK: %[[TGROUP:.+]] = arith.constant 1 : i64
// CHECK: call @mithrilAllReduceStartF64(%[[TGROUP]],
// CHECK: call @mithrilAllReduceWait(
// CHECK-NOT: replicate
// CHECK: call @mithrilAllReduceWaitAll(%{{.+}}) : (i64) -> ()
// CHECK: call @mithrilAllReduceWaitAll(%{{.+}}) : (i64) -> ()
// CHECK-NEXT: return
// With window-ranks=3 (three ranks share the data group's window), a data
// group sum waits at a barrier once its operand is in place and adds the
// three ranks' operands in rank order where they lie, each rank's segment a
// collective_window with its rank; the tensor group's sum stays the
// runtime's; one more barrier before the return.
// RANKS-LABEL: func.func @all_reduce(
// RANKS-DAG: %[[OWN:.+]] = mithril.collective_window : memref<128xi8>
// RANKS-DAG: %[[R0:.+]] = mithril.collective_window {rank = 0 : i64} : memref<128xi8>
// RANKS-DAG: %[[R1:.+]] = mithril.collective_window {rank = 1 : i64} : memref<128xi8>
// RANKS-DAG: %[[R2:.+]] = mithril.collective_window {rank = 2 : i64} : memref<128xi8>
// RANKS: bufferization.materialize_in_destination %{{.+}} in
// RANKS: %[[ADDRESS:.+]] = memref.extract_aligned_pointer_as_index
// RANKS: %[[ADDRESS64:.+]] = arith.index_cast %[[ADDRESS]] : index to i64
// RANKS: call @mithrilCollectiveBarrier(%{{.+}}, %[[ADDRESS64]]) : (i64, i64) -> ()
// RANKS: %[[V0:.+]] = memref.view %[[R0]]
// RANKS: %[[T0:.+]] = bufferization.to_tensor %[[V0]] restrict :
// RANKS: %[[V1:.+]] = memref.view %[[R1]]
// RANKS: %[[T1:.+]] = bufferization.to_tensor %[[V1]] restrict :
// RANKS: %[[V2:.+]] = memref.view %[[R2]]
// RANKS: %[[T2:.+]] = bufferization.to_tensor %[[V2]] restrict :
// RANKS: linalg.generic {{.+}} ins(%[[T0]], %[[T1]], %[[T2]] :
// RANKS: %[[PAIR:.+]] = arith.addf %{{.+}}, %{{.+}} : f64
// RANKS: arith.addf %[[PAIR]], %{{.+}} : f64
// RANKS: call @mithrilCollectiveBarrier(
// RANKS: call @mithrilAllReduceStartF64(%{{.+}}, %{{.+}}, %{{.+}})
// RANKS: call @mithrilAllReduceWait(
// RANKS: call @mithrilAllReduceWaitAll(
// RANKS: call @mithrilCollectiveBarrier(%{{.+}}, %{{.+}}) : (i64, i64) -> ()
// RANKS-NEXT: return
mithril.model @all_reduce(data %g: tensor<3x2xf64>) -> (sum: tensor<3x2xf64>) {
  %s = mithril.all_reduce %g : (tensor<3x2xf64>) -> tensor<3x2xf64>
  %r = mithril.replicate %s : (tensor<3x2xf64>) -> tensor<3x2xf64>
  %u = mithril.all_reduce %r : (tensor<3x2xf64>) -> tensor<3x2xf64>
  %t = mithril.all_reduce %u {group = "tensor"} : (tensor<3x2xf64>) -> tensor<3x2xf64>
  mithril.output %t : tensor<3x2xf64>
}

// -----

// A sum runs while the code goes on: the first all_reduce's wait comes after
// the multiply and the second sum's start, just before the add that reads
// both sums.
// CHECK-LABEL: func.func @all_reduce_overlap(
// CHECK: call @mithrilAllReduceStartF32(
// CHECK: linalg.generic
// CHECK: arith.mulf
// CHECK: call @mithrilAllReduceStartF32(
// CHECK: call @mithrilAllReduceWait(%{{.+}}, %{{.+}}, %c0_i64
// CHECK: call @mithrilAllReduceWait(%{{.+}}, %{{.+}}, %c64_i64
// CHECK: linalg.generic
// CHECK: arith.addf
// CHECK: call @mithrilAllReduceWaitAll(
// With window-ranks=3 the two sums are read by the add only: one barrier
// just before it serves both operands (tied to both writes, their addresses
// added), then each sum adds the three ranks' operands.
// RANKS-LABEL: func.func @all_reduce_overlap(
// RANKS: %[[A:.+]] = arith.index_cast %{{.+}} : index to i64
// RANKS: arith.mulf
// RANKS: %[[B:.+]] = arith.index_cast %{{.+}} : index to i64
// RANKS-NOT: mithrilCollectiveBarrier
// RANKS: %[[BOTH:.+]] = arith.addi %[[A]], %[[B]] : i64
// RANKS-NEXT: call @mithrilCollectiveBarrier(%{{.+}}, %[[BOTH]])
// RANKS-NOT: mithrilCollectiveBarrier
// RANKS: arith.addf
// RANKS: arith.addf
// RANKS-NOT: mithrilCollectiveBarrier
// RANKS: arith.addf
// RANKS: arith.addf
// RANKS-NOT: mithrilCollectiveBarrier
// RANKS: arith.addf
// RANKS: call @mithrilCollectiveBarrier(%{{.+}}, %{{.+}}) : (i64, i64) -> ()
// RANKS-NEXT: return
mithril.model @all_reduce_overlap(data %g: tensor<4xf32>, data %h: tensor<4xf32>) -> (s: tensor<4xf32>) {
  %a = mithril.all_reduce %g : (tensor<4xf32>) -> tensor<4xf32>
  %m = mithril.multiply %h, %h : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %b = mithril.all_reduce %m : (tensor<4xf32>) -> tensor<4xf32>
  %s = mithril.add %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  mithril.output %s : tensor<4xf32>
}

// -----

// An all_reduce of a dynamic shape reads its operand's buffer where it is
// (any layout).
// CHECK-LABEL: func.func @all_reduce_dynamic(
// CHECK-NOT: collective_window
// CHECK: %[[SRC:.+]] = bufferization.to_buffer %{{.+}} read_only : tensor<?x2xf32> to memref<?x2xf32, strided<[?, ?], offset: ?>>
// CHECK: %[[DIM:.+]] = tensor.dim
// CHECK: %[[DST:.+]] = memref.alloc(%[[DIM]]) {alignment = 64 : i64} : memref<?x2xf32>
// CHECK: call @mithrilAllReduceF32(
mithril.model @all_reduce_dynamic(data %g: tensor<?x2xf32>) -> (sum: tensor<?x2xf32>) {
  %s = mithril.all_reduce %g : (tensor<?x2xf32>) -> tensor<?x2xf32>
  mithril.output %s : tensor<?x2xf32>
}

// -----

// Pad is tensor.pad with the op's constant, in the tensor's element type.
// CHECK-LABEL: func.func @Pad(
// CHECK: %[[V:.+]] = arith.constant -1.500000e+00 : f32
// CHECK: tensor.pad %{{.+}} low[1, 0] high[2, 3]
// CHECK: tensor.yield %[[V]] : f32
// CHECK: } : tensor<4x3xf32> to tensor<7x6xf32>
mithril.model @Pad(data %x: tensor<4x3xf32>) -> (p: tensor<7x6xf32>) {
  %0 = mithril.pad %x {pad_width = array<i64: 1, 2, 0, 3>, value = -1.5 : f64} : (tensor<4x3xf32>) -> tensor<7x6xf32>
  mithril.output %0 : tensor<7x6xf32>
}

// -----

// cholesky is a loop over the columns of a zero-filled result: the pivot is
// the square root of the diagonal less the squares to its left, the entries
// below it the lower triangle less the dot products, divided by the pivot.
// CHECK-LABEL: func.func @Cholesky(
// CHECK: %[[N:.+]] = tensor.dim %arg0, %c0
// CHECK: %[[ZEROS:.+]] = linalg.fill
// CHECK: scf.for %[[J:.+]] = %{{.+}} to %[[N]] step %{{.+}} iter_args(%[[L:.+]] = %[[ZEROS]]) -> (tensor<?x?xf64>)
// CHECK: tensor.extract %arg0[%[[J]], %[[J]]]
// CHECK: %[[SQUARES:.+]] = scf.for
// CHECK: arith.subf
// CHECK: %[[PIVOT:.+]] = math.sqrt %[[SQUARES]]
// CHECK: tensor.insert %[[PIVOT]] into %[[L]][%[[J]], %[[J]]]
// CHECK: scf.for %[[I:.+]] = %{{.+}} to %[[N]]
// CHECK: tensor.extract %arg0[%[[I]], %[[J]]]
// CHECK: %[[DOT:.+]] = scf.for
// CHECK: arith.divf %[[DOT]], %[[PIVOT]]
// CHECK: tensor.insert %{{.+}}[%[[I]], %[[J]]]
mithril.model @Cholesky(data %a: tensor<?x?xf64>) -> (l: tensor<?x?xf64>) {
  %0 = mithril.cholesky %a : (tensor<?x?xf64>) -> tensor<?x?xf64>
  mithril.output %0 : tensor<?x?xf64>
}

// -----

// tsne_p_joint searches each row's bandwidth by bisection (a while loop of at
// most 1001 steps over the row's perplexity: max, sum of exponentials, clipped
// entropy in bits), writes the row's conditional probabilities, and
// symmetrizes them: (P + P^T) / (2 N). Without a threshold operand the
// machine epsilon of f32 clips the probabilities.
// CHECK-LABEL: func.func @TsnePJoint(
// CHECK: arith.constant 1.1920929E-7 : f32
// CHECK: scf.for %[[I:.+]] = %{{.+}} to %{{.+}} step %{{.+}} iter_args(%[[P:.+]] = %{{.+}}) -> (tensor<4x4xf32>)
// CHECK: scf.while
// CHECK: arith.cmpi ult
// CHECK: math.exp
// CHECK: math.log2
// CHECK: math.exp2
// CHECK: arith.cmpf ueq
// CHECK: tensor.insert %{{.+}} into %{{.+}}[%[[I]], %{{.+}}]
// CHECK: linalg.generic {indexing_maps = [#{{.+}}, #[[TRANSPOSED:.+]], #{{.+}}]
// CHECK: arith.addf
// CHECK: arith.divf
mithril.model @TsnePJoint(data %d: tensor<4x4xf32>, data %t: tensor<f32>) -> (p: tensor<4x4xf32>) {
  %0 = mithril.tsne_p_joint %d, %t : (tensor<4x4xf32>, tensor<f32>) -> tensor<4x4xf32>
  mithril.output %0 : tensor<4x4xf32>
}

// -----

// triangular_solve substitutes row by row: forward from row 0 for a lower
// matrix, back from the last row for its transpose (reading A[k][i]), each
// entry the right-hand side less the solved rows' products, divided by the
// diagonal.
// CHECK-LABEL: func.func @TriangularSolve(
// CHECK: scf.for %[[I:.+]] = %{{.+}} to %{{.+}} step %{{.+}} iter_args(%{{.+}} = %{{.+}}) -> (tensor<3x2xf32>)
// CHECK: %[[DIAG:.+]] = tensor.extract %arg0[%[[I]], %[[I]]]
// CHECK: scf.for %[[C:.+]] = %{{.+}} to %{{.+}} step %{{.+}} iter_args(%[[X:.+]] = %{{.+}})
// CHECK: tensor.extract %arg1[%[[I]], %[[C]]]
// CHECK: %[[REST:.+]] = scf.for %[[K:.+]] = %{{.+}} to %[[I]]
// CHECK: tensor.extract %arg0[%[[I]], %[[K]]]
// CHECK: arith.divf %[[REST]], %[[DIAG]]
// CHECK: tensor.insert %{{.+}} into %[[X]][%[[I]], %[[C]]]
// CHECK: scf.for %[[STEP:.+]] = %{{.+}} to %{{.+}} step %{{.+}} iter_args
// CHECK: %[[ROW:.+]] = arith.subi %{{.+}}, %[[STEP]]
// CHECK: %[[AFTER:.+]] = arith.addi %[[ROW]]
// CHECK: scf.for %[[K:.+]] = %[[AFTER]] to
// CHECK: tensor.extract %arg0[%[[K]], %[[ROW]]]
mithril.model @TriangularSolve(data %l: tensor<3x3xf32>, data %b: tensor<3x2xf32>) -> (x: tensor<3x2xf32>, y: tensor<3x2xf32>) {
  %0 = mithril.triangular_solve %l, %b : (tensor<3x3xf32>, tensor<3x2xf32>) -> tensor<3x2xf32>
  %1 = mithril.triangular_solve %l, %b {transpose = true} : (tensor<3x3xf32>, tensor<3x2xf32>) -> tensor<3x2xf32>
  mithril.output %0, %1 : tensor<3x2xf32>, tensor<3x2xf32>
}

// -----

// tril keeps an element where its column is at most `diagonal` past its row
// (the last two loop indices) and writes zero elsewhere.
// CHECK-LABEL: func.func @Tril(
// CHECK: linalg.generic {{.*}} ins(%arg0 : tensor<2x3x4xf32>)
// CHECK: %[[ROW:.+]] = linalg.index 1
// CHECK: %[[COL:.+]] = linalg.index 2
// CHECK: %[[LAST:.+]] = arith.addi %[[ROW]], %c1
// CHECK: %[[KEEP:.+]] = arith.cmpi sle, %[[COL]], %[[LAST]]
// CHECK: arith.select %[[KEEP]], %in, %cst
mithril.model @Tril(data %x: tensor<2x3x4xf32>) -> (y: tensor<2x3x4xf32>) {
  %0 = mithril.tril %x {diagonal = 1 : i64} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  mithril.output %0 : tensor<2x3x4xf32>
}

// -----

// Integer abs is max(x, 0 - x) (math.absi has no lowering for the
// multi-dimensional vectors the vectorizer makes); integer argmax starts
// from the type's smallest value and compares signed, bool unsigned.
// CHECK-LABEL: func.func @IntegerAbsArgMax(
// CHECK: %[[NEG:.+]] = arith.subi %{{.+}}, %in
// CHECK: arith.maxsi %in, %[[NEG]]
// CHECK: %[[LOW:.+]] = arith.constant -32768 : i16
// CHECK: linalg.fill ins(%[[LOW]] : i16)
// CHECK: arith.cmpi sgt
// CHECK: %[[FALSE:.+]] = arith.constant false
// CHECK: linalg.fill ins(%[[FALSE]] : i1)
// CHECK: arith.cmpi ugt
mithril.model @IntegerAbsArgMax(data %x: tensor<3x5xi16>, data %b: tensor<4xi1>) -> (a: tensor<3x5xi16>, m: tensor<3xi64>, n: tensor<i64>) {
  %0 = mithril.abs %x : (tensor<3x5xi16>) -> tensor<3x5xi16>
  %1 = mithril.argmax %x {axis = 1 : i64} : (tensor<3x5xi16>) -> tensor<3xi64>
  %2 = mithril.argmax %b : (tensor<4xi1>) -> tensor<i64>
  mithril.output %0, %1, %2 : tensor<3x5xi16>, tensor<3xi64>, tensor<i64>
}

// -----

// random_normal: each element from the key (an operand of the generic, so that
// a GPU kernel reads it) and its row-major position (two splitmix64 outputs), Box-Muller in f64, rounded to f32.
// CHECK-LABEL: func.func @RandomNormal(
// CHECK: linalg.generic {{.*}} ins(%arg0 : tensor<i64>) outs(%{{.+}} : tensor<2x3xf32>)
// CHECK: linalg.index 0
// CHECK: linalg.index 1
// CHECK: math.log
// CHECK: math.sqrt
// CHECK: math.cos
// CHECK: arith.truncf %{{.+}} : f64 to f32
mithril.model @RandomNormal(data %k: tensor<i64>) -> (z: tensor<2x3xf32>) {
  %0 = mithril.random_normal %k {shape = array<i64: 2, 3>, element_type = f32} : (tensor<i64>) -> tensor<2x3xf32>
  mithril.output %0 : tensor<2x3xf32>
}

// -----

// random_uniform: the top 53 bits of the stream at the element's position,
// times 2^-53.
// CHECK-LABEL: func.func @RandomUniform(
// CHECK: linalg.generic {{.*}} ins(%arg0 : tensor<i64>) outs(%{{.+}} : tensor<5xf64>)
// CHECK: linalg.index 0
// CHECK: arith.shrui
// CHECK: arith.uitofp %{{.+}} : i64 to f64
// CHECK: arith.mulf %{{.+}}, %cst{{.*}} : f64
// CHECK-NOT: math.log
mithril.model @RandomUniform(data %k: tensor<i64>) -> (u: tensor<5xf64>) {
  %0 = mithril.random_uniform %k {shape = array<i64: 5>, element_type = f64} : (tensor<i64>) -> tensor<5xf64>
  mithril.output %0 : tensor<5xf64>
}

// unique: three generics over pairs (i, j): earlier equal elements, the
// rank among first elements, the first element of each rank; then the count.
// Floats compare NaN as equal to NaN and after every number.
// CHECK-LABEL: func.func @Unique(
// CHECK: tensor.collapse_shape
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]
// CHECK-DAG: arith.cmpf uno
// CHECK-DAG: arith.cmpi ult
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]
// CHECK: arith.cmpf olt
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]
// CHECK: arith.select
// CHECK: linalg.generic {{.*}}iterator_types = ["reduction"]
// CHECK: return %{{.+}}, %{{.+}} : tensor<6xf32>, tensor<i64>
mithril.model @Unique(data %x: tensor<2x3xf32>) -> (u: tensor<6xf32>, n: tensor<i64>) {
  %v, %n = mithril.unique %x : (tensor<2x3xf32>) -> (tensor<6xf32>, tensor<i64>)
  mithril.output %v, %n : tensor<6xf32>, tensor<i64>
}
