// Copies between buffers that are not both contiguous become linalg.copy
// (loops that LLVM vectorizes) instead of calls of the runtime's memrefCopy;
// contiguous and dynamic ones stay memref.copy.
// RUN: mithril-opt %s --mithril-strided-copies | FileCheck %s

// CHECK-LABEL: func.func @into_padded(
// CHECK: %[[VIEW:.+]] = memref.subview
// CHECK: linalg.copy ins(%arg0 : memref<2x14x14xf32>) outs(%[[VIEW]] : memref<2x14x14xf32, strided<[256, 16, 1], offset: 17>>)
// CHECK-NOT: memref.copy
func.func @into_padded(%arg0: memref<2x14x14xf32>, %arg1: memref<2x16x16xf32>) {
  %view = memref.subview %arg1[0, 1, 1] [2, 14, 14] [1, 1, 1] : memref<2x16x16xf32> to memref<2x14x14xf32, strided<[256, 16, 1], offset: 17>>
  memref.copy %arg0, %view : memref<2x14x14xf32> to memref<2x14x14xf32, strided<[256, 16, 1], offset: 17>>
  return
}

// CHECK-LABEL: func.func @contiguous(
// CHECK: memref.copy %arg0, %arg1
func.func @contiguous(%arg0: memref<4x8xf32>, %arg1: memref<4x8xf32>) {
  memref.copy %arg0, %arg1 : memref<4x8xf32> to memref<4x8xf32>
  return
}

// CHECK-LABEL: func.func @dynamic(
// CHECK: memref.copy %arg0, %arg1
func.func @dynamic(%arg0: memref<?x8xf32, strided<[16, 1]>>, %arg1: memref<?x8xf32>) {
  memref.copy %arg0, %arg1 : memref<?x8xf32, strided<[16, 1]>> to memref<?x8xf32>
  return
}
