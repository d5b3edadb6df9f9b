// RUN: mithril-opt %s --pass-pipeline='builtin.module(func.func(mithril-expand-strided-metadata))' | FileCheck %s

// A subview becomes a reinterpret_cast of its source's base buffer at the
// offset it computes from the source's metadata.
// CHECK-LABEL: func.func @subview
// CHECK: %[[BASE:.+]], %{{.+}}, %{{.+}}:2, %{{.+}}:2 = memref.extract_strided_metadata %arg0
// CHECK: %[[OFFSET:.+]] = affine.apply
// CHECK: memref.reinterpret_cast %[[BASE]] to offset: [%[[OFFSET]]], sizes: [4, 8], strides: [16, 1]
// CHECK-NOT: memref.subview
func.func @subview(%m: memref<16x16xf32>, %i: index) -> f32 {
  %c0 = arith.constant 0 : index
  %v = memref.subview %m[%i, 4] [4, 8] [1, 1] : memref<16x16xf32> to memref<4x8xf32, strided<[16, 1], offset: ?>>
  %x = memref.load %v[%c0, %c0] : memref<4x8xf32, strided<[16, 1], offset: ?>>
  return %x : f32
}

// A collapse of a contiguous buffer: a reinterpret_cast too.
// CHECK-LABEL: func.func @collapse
// CHECK: memref.reinterpret_cast %{{.+}} to offset: [0], sizes: [256], strides: [1]
// CHECK-NOT: memref.collapse_shape
func.func @collapse(%m: memref<16x16xf32>) -> memref<256xf32> {
  %c = memref.collapse_shape %m [[0, 1]] : memref<16x16xf32> into memref<256xf32>
  return %c : memref<256xf32>
}

// Ops of other dialects are left as they are (upstream's pass, a greedy
// rewrite of every op, would have folded the add of zero).
// CHECK-LABEL: func.func @others
// CHECK: arith.addi
func.func @others(%a: index) -> index {
  %c0 = arith.constant 0 : index
  %b = arith.addi %a, %c0 : index
  return %b : index
}
