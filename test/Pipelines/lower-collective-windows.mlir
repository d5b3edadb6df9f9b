// RUN: mithril-opt %s --mithril-lower-collective-windows | FileCheck %s

// Each window is the runtime's segment for its group (0 data, 1 tensor) and
// size, through a C interface that fills the descriptor; no deallocation.
// CHECK: func.func private @mithrilCollectiveWindow(i64, i64) -> memref<?xi8> attributes {llvm.emit_c_interface}
// CHECK-LABEL: func.func @Windows(
// CHECK-DAG: %[[DATA:.+]] = arith.constant 0 : i64
// CHECK-DAG: %[[SIZE:.+]] = arith.constant 4096 : i64
// CHECK: %[[SEGMENT:.+]] = call @mithrilCollectiveWindow(%[[DATA]], %[[SIZE]]) : (i64, i64) -> memref<?xi8>
// CHECK: %[[WINDOW:.+]] = memref.cast %[[SEGMENT]] : memref<?xi8> to memref<4096xi8>
// CHECK-DAG: %[[TENSOR:.+]] = arith.constant 1 : i64
// CHECK-DAG: %[[SMALL:.+]] = arith.constant 64 : i64
// CHECK: call @mithrilCollectiveWindow(%[[TENSOR]], %[[SMALL]])
// CHECK: memref.view %[[WINDOW]]
// CHECK-NOT: mithril.collective_window
// CHECK-NOT: memref.dealloc
func.func @Windows() -> (memref<16x64xf32>, memref<4xf32>) {
  %data = mithril.collective_window : memref<4096xi8>
  %tensor = mithril.collective_window {group = "tensor"} : memref<64xi8>
  %c0 = arith.constant 0 : index
  %a = memref.view %data[%c0][] : memref<4096xi8> to memref<16x64xf32>
  %b = memref.view %tensor[%c0][] : memref<64xi8> to memref<4xf32>
  return %a, %b : memref<16x64xf32>, memref<4xf32>
}
