// RUN: mithril-opt %s -split-input-file --mithril-stack-in-place | FileCheck %s

// Two buffers computed, then copied whole into the slices of a new stack:
// one allocation of bytes, the stack and each buffer a view of it at its
// slice's offset, and no copy. A slice read again later keeps its subview.
// CHECK-LABEL: func.func @Stacked(
// CHECK: %[[RAW:.+]] = memref.alloc() {alignment = 64 : i64} : memref<512xi8>
// CHECK-DAG: %[[C256:.+]] = arith.constant 256 : index
// CHECK-DAG: %[[B0:.+]] = memref.view %[[RAW]][%{{.+}}][] : memref<512xi8> to memref<8x8xf32>
// CHECK-DAG: %[[B1:.+]] = memref.view %[[RAW]][%[[C256]]][] : memref<512xi8> to memref<4x16xf32>
// CHECK-DAG: %[[STACK:.+]] = memref.view %[[RAW]][%{{.+}}][] : memref<512xi8> to memref<2x64xf32>
// CHECK: linalg.fill ins(%{{.+}} : f32) outs(%[[B0]] : memref<8x8xf32>)
// CHECK: linalg.fill ins(%{{.+}} : f32) outs(%[[B1]] : memref<4x16xf32>)
// CHECK-NOT: memref.copy
// CHECK: %[[S1:.+]] = memref.subview %[[STACK]][1, 0] [1, 64] [1, 1]
// CHECK: memref.copy %[[STACK]], %arg0
// CHECK: memref.copy %[[S1]], %arg1
func.func @Stacked(%out: memref<2x64xf32>, %row: memref<64xf32>) {
  %one = arith.constant 1.0 : f32
  %two = arith.constant 2.0 : f32
  %a = memref.alloc() {alignment = 64 : i64} : memref<8x8xf32>
  %b = memref.alloc() {alignment = 64 : i64} : memref<4x16xf32>
  linalg.fill ins(%one : f32) outs(%a : memref<8x8xf32>)
  linalg.fill ins(%two : f32) outs(%b : memref<4x16xf32>)
  %stack = memref.alloc() {alignment = 64 : i64} : memref<2x64xf32>
  %a64 = memref.collapse_shape %a [[0, 1]] : memref<8x8xf32> into memref<64xf32>
  %s0 = memref.subview %stack[0, 0] [1, 64] [1, 1] : memref<2x64xf32> to memref<64xf32, strided<[1]>>
  memref.copy %a64, %s0 : memref<64xf32> to memref<64xf32, strided<[1]>>
  %b64 = memref.collapse_shape %b [[0, 1]] : memref<4x16xf32> into memref<64xf32>
  %s1 = memref.subview %stack[1, 0] [1, 64] [1, 1] : memref<2x64xf32> to memref<64xf32, strided<[1], offset: 64>>
  memref.copy %b64, %s1 : memref<64xf32> to memref<64xf32, strided<[1], offset: 64>>
  memref.copy %stack, %out : memref<2x64xf32> to memref<2x64xf32>
  memref.copy %s1, %row : memref<64xf32, strided<[1], offset: 64>> to memref<64xf32>
  return
}

// -----

// A buffer written after its copy: the stack keeps its own memory.
// CHECK-LABEL: func.func @WrittenAfterCopy(
// CHECK-COUNT-2: memref.alloc()
// CHECK: memref.copy %{{.+}}, %{{.+}} : memref<16xf32> to memref<16xf32, strided<[1]>>
func.func @WrittenAfterCopy(%out: memref<2x16xf32>) {
  %one = arith.constant 1.0 : f32
  %a = memref.alloc() {alignment = 64 : i64} : memref<16xf32>
  linalg.fill ins(%one : f32) outs(%a : memref<16xf32>)
  %stack = memref.alloc() {alignment = 64 : i64} : memref<2x16xf32>
  %s0 = memref.subview %stack[0, 0] [1, 16] [1, 1] : memref<2x16xf32> to memref<16xf32, strided<[1]>>
  memref.copy %a, %s0 : memref<16xf32> to memref<16xf32, strided<[1]>>
  linalg.fill ins(%one : f32) outs(%a : memref<16xf32>)
  memref.copy %stack, %out : memref<2x16xf32> to memref<2x16xf32>
  return
}

// -----

// The stack read while the buffer is computed (it was written before):
// the buffer's writes would change what is read.
// CHECK-LABEL: func.func @StackReadMeanwhile(
// CHECK-COUNT-2: memref.alloc()
// CHECK: memref.copy %{{.+}}, %{{.+}} : memref<16xf32> to memref<16xf32, strided<[1]>>
func.func @StackReadMeanwhile(%out: memref<2x16xf32>, %early: memref<2x16xf32>) {
  %one = arith.constant 1.0 : f32
  %stack = memref.alloc() {alignment = 64 : i64} : memref<2x16xf32>
  linalg.fill ins(%one : f32) outs(%stack : memref<2x16xf32>)
  %a = memref.alloc() {alignment = 64 : i64} : memref<16xf32>
  linalg.fill ins(%one : f32) outs(%a : memref<16xf32>)
  memref.copy %stack, %early : memref<2x16xf32> to memref<2x16xf32>
  %s0 = memref.subview %stack[0, 0] [1, 16] [1, 1] : memref<2x16xf32> to memref<16xf32, strided<[1]>>
  memref.copy %a, %s0 : memref<16xf32> to memref<16xf32, strided<[1]>>
  memref.copy %stack, %out : memref<2x16xf32> to memref<2x16xf32>
  return
}

// -----

// A slice 40 bytes into the stack: a view there would not be aligned.
// CHECK-LABEL: func.func @Unaligned(
// CHECK-NOT: memref.view
// CHECK: memref.copy %{{.+}}, %{{.+}} : memref<10xf32> to memref<10xf32, strided<[1], offset: 10>>
func.func @Unaligned(%out: memref<2x10xf32>) {
  %one = arith.constant 1.0 : f32
  %a = memref.alloc() {alignment = 64 : i64} : memref<10xf32>
  linalg.fill ins(%one : f32) outs(%a : memref<10xf32>)
  %stack = memref.alloc() {alignment = 64 : i64} : memref<2x10xf32>
  %s1 = memref.subview %stack[1, 0] [1, 10] [1, 1] : memref<2x10xf32> to memref<10xf32, strided<[1], offset: 10>>
  memref.copy %a, %s1 : memref<10xf32> to memref<10xf32, strided<[1], offset: 10>>
  memref.copy %stack, %out : memref<2x10xf32> to memref<2x10xf32>
  return
}

// -----

// Two buffers copied over the same slice: they cannot both be it.
// CHECK-LABEL: func.func @Overlapping(
// CHECK-NOT: memref.view
// CHECK-COUNT-2: memref.copy %{{.+}}, %{{.+}} : memref<16xf32> to memref<16xf32, strided<[1]>>
func.func @Overlapping(%out: memref<2x16xf32>) {
  %one = arith.constant 1.0 : f32
  %two = arith.constant 2.0 : f32
  %a = memref.alloc() {alignment = 64 : i64} : memref<16xf32>
  %b = memref.alloc() {alignment = 64 : i64} : memref<16xf32>
  linalg.fill ins(%one : f32) outs(%a : memref<16xf32>)
  linalg.fill ins(%two : f32) outs(%b : memref<16xf32>)
  %stack = memref.alloc() {alignment = 64 : i64} : memref<2x16xf32>
  %s0 = memref.subview %stack[0, 0] [1, 16] [1, 1] : memref<2x16xf32> to memref<16xf32, strided<[1]>>
  memref.copy %a, %s0 : memref<16xf32> to memref<16xf32, strided<[1]>>
  %s0b = memref.subview %stack[0, 0] [1, 16] [1, 1] : memref<2x16xf32> to memref<16xf32, strided<[1]>>
  memref.copy %b, %s0b : memref<16xf32> to memref<16xf32, strided<[1]>>
  memref.copy %stack, %out : memref<2x16xf32> to memref<2x16xf32>
  return
}
