// RUN: mithril-opt %s --mithril-cpu-pipeline="gradients=true all-reduce-gradients=true optimizer=sgd stop-after=bufferize" | FileCheck %s
// RUN: mithril-opt %s --mithril-cpu-pipeline="gradients=true all-reduce-gradients=true optimizer=sgd window-ranks=2 stop-after=bufferize" | FileCheck %s --check-prefix=RANKS

// A data-parallel training step: the weight's gradient, summed over the
// ranks, is computed in its place in the window the runtime gives (its zero
// fill and product write the view; nothing is copied there), the sum reads
// it there, and nothing frees the window.
// CHECK: func.func private @mithrilCollectiveWindow(i64, i64) -> memref<?xi8> attributes {llvm.emit_c_interface}
// CHECK-LABEL: func.func @Linear(
// CHECK: %[[SEGMENT:.+]] = call @mithrilCollectiveWindow(%{{.+}}, %{{.+}}) : (i64, i64) -> memref<?xi8>
// CHECK: %[[PLACE:.+]] = memref.view %[[SEGMENT]][%{{.+}}][] : memref<?xi8> to memref<16x64xf32>
// CHECK-NOT: memref.copy
// CHECK: vector.transfer_write %{{.+}}, %[[PLACE]]
// CHECK-NOT: memref.copy
// CHECK: %[[OPERAND:.+]] = memref.cast %[[PLACE]] : memref<16x64xf32> to memref<*xf32>
// CHECK: call @mithrilAllReduceStartF32(%{{.+}}, %[[OPERAND]], %{{.+}})
// CHECK: call @mithrilAllReduceWait(
// CHECK-NOT: memref.dealloc %[[SEGMENT]]
// CHECK-NOT: memref.dealloc %[[PLACE]]
// With two ranks that share the window (window-ranks=2), the code adds
// their gradients itself, reading both segments where they lie after a
// barrier, in one loop with the SGD update (no runtime sum, no separate
// update), and waits for the other rank before it returns: the other may
// still be reading this rank's segment.
// RANKS-DAG: func.func private @mithrilCollectiveBarrier(i64, i64)
// RANKS-DAG: func.func private @mithrilCollectiveWindowSegment(i64, i64, i64) -> memref<?xi8> attributes {llvm.emit_c_interface}
// RANKS-NOT: mithrilAllReduce
// RANKS-LABEL: func.func @Linear(
// RANKS-SAME: %[[W:[^:]+]]: memref<16x64xf32> {mithril.kind = #mithril.input_kind<param>
// RANKS-SAME: %[[NEW:[^:]+]]: memref<16x64xf32> {mithril.name = "new:w"}
// RANKS: %[[OWN:.+]] = call @mithrilCollectiveWindow(
// RANKS: %[[FIRST:.+]] = call @mithrilCollectiveWindowSegment(%{{.+}}, %{{.+}}, %c0_i64)
// RANKS: %[[SECOND:.+]] = call @mithrilCollectiveWindowSegment(%{{.+}}, %{{.+}}, %c1_i64)
// RANKS: %[[PLACE:.+]] = memref.view %[[OWN]]
// RANKS: vector.transfer_write %{{.+}}, %[[PLACE]]
// RANKS: %[[ADDRESS:.+]] = memref.extract_aligned_pointer_as_index %[[PLACE]]
// RANKS: %[[ADDRESS64:.+]] = arith.index_cast %[[ADDRESS]]
// RANKS: call @mithrilCollectiveBarrier(%{{.+}}, %[[ADDRESS64]])
// RANKS: %[[OPERAND0:.+]] = memref.view %[[FIRST]]
// RANKS: %[[OPERAND1:.+]] = memref.view %[[SECOND]]
// RANKS: scf.for
// RANKS: %[[OLD:.+]] = vector.transfer_read %[[W]]
// RANKS: %[[G0:.+]] = vector.transfer_read %[[OPERAND0]]
// RANKS: %[[G1:.+]] = vector.transfer_read %[[OPERAND1]]
// RANKS: %[[SUM:.+]] = arith.addf %[[G0]], %[[G1]]
// RANKS: %[[STEP:.+]] = arith.mulf %[[SUM]]
// RANKS: %[[UPDATED:.+]] = arith.subf %[[OLD]], %[[STEP]]
// RANKS: vector.transfer_write %[[UPDATED]], %[[NEW]]
// RANKS-NOT: memref.copy
// RANKS: call @mithrilCollectiveBarrier(%{{.+}}, %c0_i64)
// RANKS-NEXT: return
mithril.model @Linear(data %x: tensor<32x64xf32>, param %w: tensor<16x64xf32>) -> (y: tensor<f32>) {
  %0 = mithril.transpose %w : (tensor<16x64xf32>) -> tensor<64x16xf32>
  %1 = mithril.matmul %x, %0 : (tensor<32x64xf32>, tensor<64x16xf32>) -> tensor<32x16xf32>
  %2 = mithril.sum %1 {axes = array<i64: 0, 1>, keepdim = false} : (tensor<32x16xf32>) -> tensor<f32>
  mithril.output %2 : tensor<f32>
}

// A weight gradient whose columns the register tiles do not divide (48 =
// 32 + 16) is computed in two parts, each into its slice of the window,
// each part's zero fill in its own tiles: no pass zeroes the whole place
// first, and nothing is copied there.
// CHECK-LABEL: func.func @Parts(
// CHECK: %[[SEGMENT:.+]] = call @mithrilCollectiveWindow(%{{.+}}, %{{.+}}) : (i64, i64) -> memref<?xi8>
// CHECK: %[[PLACE:.+]] = memref.view %[[SEGMENT]][%{{.+}}][] : memref<?xi8> to memref<64x48xf32>
// CHECK-NOT: vector.transfer_write %{{.+}}, %[[PLACE]][
// CHECK-NOT: memref.copy
// CHECK: %[[LEFT:.+]] = memref.subview %[[PLACE]][0, 0] [64, 32] [1, 1]
// CHECK: vector.transfer_write %{{.+}}, %[[LEFT]]
// CHECK: %[[RIGHT:.+]] = memref.subview %[[PLACE]][0, 32] [64, 16] [1, 1]
// CHECK: vector.transfer_write %{{.+}}, %[[RIGHT]]
// CHECK-NOT: memref.copy
// CHECK: call @mithrilAllReduceStartF32(%{{.+}}, %{{.+}}, %{{.+}})
mithril.model @Parts(data %x: tensor<32x48xf32>, param %w: tensor<64x48xf32>) -> (y: tensor<f32>) {
  %0 = mithril.transpose %w : (tensor<64x48xf32>) -> tensor<48x64xf32>
  %1 = mithril.matmul %x, %0 : (tensor<32x48xf32>, tensor<48x64xf32>) -> tensor<32x64xf32>
  %2 = mithril.sum %1 {axes = array<i64: 0, 1>, keepdim = false} : (tensor<32x64xf32>) -> tensor<f32>
  mithril.output %2 : tensor<f32>
}
