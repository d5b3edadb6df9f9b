// RUN: mithril-opt %s --mithril-lower-collective-windows | FileCheck %s

// Each window is the runtime's segment for its group (0 data, 1 tensor) and
// size, through a C interface that fills the descriptor; no deallocation.
// (Another rank's segment, @Segments below, through a second entry.)
// CHECK-DAG: func.func private @mithrilCollectiveWindow(i64, i64) -> memref<?xi8> attributes {llvm.emit_c_interface}
// CHECK-DAG: func.func private @mithrilCollectiveWindowSegment(i64, i64, i64) -> memref<?xi8> attributes {llvm.emit_c_interface}
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

// Another rank's segment of a window its group's ranks share: the runtime's
// mithrilCollectiveWindowSegment(group, size, rank).
// CHECK-LABEL: func.func @Segments(
// CHECK: call @mithrilCollectiveWindow(
// CHECK-DAG: %[[DATA:.+]] = arith.constant 0 : i64
// CHECK-DAG: %[[SIZE:.+]] = arith.constant 4096 : i64
// CHECK-DAG: %[[RANK:.+]] = arith.constant 1 : i64
// CHECK: %[[SEGMENT:.+]] = call @mithrilCollectiveWindowSegment(%[[DATA]], %[[SIZE]], %[[RANK]]) : (i64, i64, i64) -> memref<?xi8>
// CHECK: memref.cast %[[SEGMENT]] : memref<?xi8> to memref<4096xi8>
func.func @Segments() -> (memref<4096xi8>, memref<4096xi8>) {
  %own = mithril.collective_window : memref<4096xi8>
  %other = mithril.collective_window {rank = 1} : memref<4096xi8>
  return %own, %other : memref<4096xi8>, memref<4096xi8>
}
