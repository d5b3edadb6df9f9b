// RUN: mithril-opt %s -split-input-file --mithril-reshaped-results | FileCheck %s
// RUN: mithril-opt %s -split-input-file --mithril-reshaped-results --buffer-results-to-out-params="hoist-static-allocs=true modify-public-functions=true" | FileCheck %s --check-prefix=OUT

// A buffer computed flat and returned expanded: the allocation takes the
// result's shape and its users write a collapsed view of it. With the
// results as out-parameters, the caller's buffer is written in place.
// CHECK-LABEL: func.func @expanded(
// CHECK: %[[WHOLE:.+]] = memref.alloc() {alignment = 64 : i64} : memref<4x8x12xf32>
// CHECK: %[[FLAT:.+]] = memref.collapse_shape %[[WHOLE]] {{\[}}[0, 1], [2]] : memref<4x8x12xf32> into memref<32x12xf32>
// CHECK: linalg.fill ins(%{{.+}} : f32) outs(%[[FLAT]] : memref<32x12xf32>)
// CHECK-NOT: memref.expand_shape
// CHECK: return %[[WHOLE]] : memref<4x8x12xf32>
// OUT-LABEL: func.func @expanded(
// OUT-SAME: %[[OUT:[^:]+]]: memref<4x8x12xf32>)
// OUT: %[[FLAT:.+]] = memref.collapse_shape %[[OUT]]
// OUT: linalg.fill ins(%{{.+}} : f32) outs(%[[FLAT]] : memref<32x12xf32>)
// OUT-NOT: memref.copy
// OUT: return
func.func @expanded() -> memref<4x8x12xf32> {
  %zero = arith.constant 0.0 : f32
  %flat = memref.alloc() {alignment = 64 : i64} : memref<32x12xf32>
  linalg.fill ins(%zero : f32) outs(%flat : memref<32x12xf32>)
  %y = memref.expand_shape %flat [[0, 1], [2]] output_shape [4, 8, 12] : memref<32x12xf32> into memref<4x8x12xf32>
  return %y : memref<4x8x12xf32>
}

// -----

// The other way round: a buffer collapsed for its return.
// CHECK-LABEL: func.func @collapsed(
// CHECK: %[[WHOLE:.+]] = memref.alloc() : memref<32x12xf32>
// CHECK: %[[SHAPED:.+]] = memref.expand_shape %[[WHOLE]] {{\[}}[0, 1], [2]] output_shape [4, 8, 12] : memref<32x12xf32> into memref<4x8x12xf32>
// CHECK: linalg.fill ins(%{{.+}} : f32) outs(%[[SHAPED]] : memref<4x8x12xf32>)
// CHECK: return %[[WHOLE]] : memref<32x12xf32>
func.func @collapsed() -> memref<32x12xf32> {
  %zero = arith.constant 0.0 : f32
  %buffer = memref.alloc() : memref<4x8x12xf32>
  linalg.fill ins(%zero : f32) outs(%buffer : memref<4x8x12xf32>)
  %y = memref.collapse_shape %buffer [[0, 1], [2]] : memref<4x8x12xf32> into memref<32x12xf32>
  return %y : memref<32x12xf32>
}

// -----

// A reshape of an argument, or of a dynamically sized allocation, stays.
// CHECK-LABEL: func.func @not_allocated(
// CHECK: %[[Y:.+]] = memref.expand_shape %arg0
// CHECK: return %[[Y]]
func.func @not_allocated(%x: memref<32x12xf32>) -> memref<4x8x12xf32> {
  %y = memref.expand_shape %x [[0, 1], [2]] output_shape [4, 8, 12] : memref<32x12xf32> into memref<4x8x12xf32>
  return %y : memref<4x8x12xf32>
}

// CHECK-LABEL: func.func @dynamic(
// CHECK: memref.alloc(%arg0) : memref<?x12xf32>
// CHECK: %[[Y:.+]] = memref.expand_shape
// CHECK: return %[[Y]]
func.func @dynamic(%n: index, %m: index) -> memref<?x8x12xf32> {
  %flat = memref.alloc(%n) : memref<?x12xf32>
  %y = memref.expand_shape %flat [[0, 1], [2]] output_shape [%m, 8, 12] : memref<?x12xf32> into memref<?x8x12xf32>
  return %y : memref<?x8x12xf32>
}
