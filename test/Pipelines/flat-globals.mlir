// RUN: mithril-opt %s --mithril-flat-globals | FileCheck %s

// A constant buffer of rank two or more becomes a flat array of its
// elements (one byte array in LLVM, not one constant per row); its readers
// view it through an expand_shape with the original type.
// CHECK: memref.global "private" constant @packed : memref<24xi8> = dense<[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23]>
// CHECK: memref.global "private" constant @splat : memref<6xf32> = dense<1.500000e+00>
// Rank one, and layouts other than the identity, stay as they are.
// CHECK: memref.global "private" constant @row : memref<4xf32>
// CHECK: memref.global "private" constant @strided : memref<2x2xf32, strided<[4, 1]>>
memref.global "private" constant @packed : memref<2x3x4xi8> = dense<[[[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]], [[12, 13, 14, 15], [16, 17, 18, 19], [20, 21, 22, 23]]]>
memref.global "private" constant @splat : memref<2x3xf32> = dense<1.5>
memref.global "private" constant @row : memref<4xf32> = dense<[1.0, 2.0, 3.0, 4.0]>
memref.global "private" constant @strided : memref<2x2xf32, strided<[4, 1]>> = dense<[[1.0, 2.0], [3.0, 4.0]]>

// CHECK-LABEL: func.func @reads
// CHECK: %[[FLAT:.+]] = memref.get_global @packed : memref<24xi8>
// CHECK: %[[VIEW:.+]] = memref.expand_shape %[[FLAT]] {{\[\[}}0, 1, 2]] output_shape [2, 3, 4] : memref<24xi8> into memref<2x3x4xi8>
// CHECK: memref.load %[[VIEW]]
// CHECK: memref.get_global @splat : memref<6xf32>
// CHECK: memref.get_global @row : memref<4xf32>
// CHECK: memref.get_global @strided : memref<2x2xf32, strided<[4, 1]>>
func.func @reads(%i: index) -> (i8, f32, f32, f32) {
  %p = memref.get_global @packed : memref<2x3x4xi8>
  %a = memref.load %p[%i, %i, %i] : memref<2x3x4xi8>
  %s = memref.get_global @splat : memref<2x3xf32>
  %b = memref.load %s[%i, %i] : memref<2x3xf32>
  %r = memref.get_global @row : memref<4xf32>
  %c = memref.load %r[%i] : memref<4xf32>
  %t = memref.get_global @strided : memref<2x2xf32, strided<[4, 1]>>
  %d = memref.load %t[%i, %i] : memref<2x2xf32, strided<[4, 1]>>
  return %a, %b, %c, %d : i8, f32, f32, f32
}
