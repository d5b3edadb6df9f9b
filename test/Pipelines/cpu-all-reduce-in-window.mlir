// RUN: mithril-opt %s --mithril-cpu-pipeline="gradients=true all-reduce-gradients=true optimizer=sgd stop-after=bufferize" | FileCheck %s

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
// CHECK: call @mithrilAllReduceF32(%{{.+}}, %[[OPERAND]], %{{.+}})
// CHECK-NOT: memref.dealloc %[[SEGMENT]]
// CHECK-NOT: memref.dealloc %[[PLACE]]
mithril.model @Linear(data %x: tensor<32x64xf32>, param %w: tensor<16x64xf32>) -> (y: tensor<f32>) {
  %0 = mithril.transpose %w : (tensor<16x64xf32>) -> tensor<64x16xf32>
  %1 = mithril.matmul %x, %0 : (tensor<32x64xf32>, tensor<64x16xf32>) -> tensor<32x16xf32>
  %2 = mithril.sum %1 {axes = array<i64: 0, 1>, keepdim = false} : (tensor<32x16xf32>) -> tensor<f32>
  mithril.output %2 : tensor<f32>
}
