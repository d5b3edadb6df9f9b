// RUN: mithril-opt %s -split-input-file --mithril-hoist-loop-buffers | FileCheck %s

// A temporary of each iteration, out of both loops: one buffer for all.
// CHECK-LABEL: func.func @Blocks(
// CHECK: %[[TMP:.+]] = memref.alloc() : memref<8x16xf32>
// CHECK-NEXT: scf.for
// CHECK-NEXT: scf.for
// CHECK-NEXT: linalg.fill ins(%{{.*}} : f32) outs(%[[TMP]] : memref<8x16xf32>)
func.func @Blocks(%out: memref<64x16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %c64 = arith.constant 64 : index
  %one = arith.constant 1.0 : f32
  scf.for %j = %c0 to %c4 step %c1 {
    scf.for %i = %c0 to %c64 step %c8 {
      %tmp = memref.alloc() : memref<8x16xf32>
      linalg.fill ins(%one : f32) outs(%tmp : memref<8x16xf32>)
      %dst = memref.subview %out[%i, 0] [8, 16] [1, 1] : memref<64x16xf32> to memref<8x16xf32, strided<[16, 1], offset: ?>>
      memref.copy %tmp, %dst : memref<8x16xf32> to memref<8x16xf32, strided<[16, 1], offset: ?>>
    }
  }
  return
}

// -----

// Each chunk of an scf.forall keeps a buffer of its own: out of the loop in
// the chunk, not out of the forall.
// CHECK-LABEL: func.func @Chunks(
// CHECK: scf.forall
// CHECK-NEXT: %[[TMP:.+]] = memref.alloc() : memref<8xf32>
// CHECK-NEXT: scf.for
func.func @Chunks(%out: memref<64xf32>) {
  %c0 = arith.constant 0 : index
  %c8 = arith.constant 8 : index
  %c32 = arith.constant 32 : index
  %one = arith.constant 1.0 : f32
  scf.forall (%chunk) = (0) to (64) step (32) {
    scf.for %i = %c0 to %c32 step %c8 {
      %tmp = memref.alloc() : memref<8xf32>
      linalg.fill ins(%one : f32) outs(%tmp : memref<8xf32>)
      %at = arith.addi %chunk, %i : index
      %dst = memref.subview %out[%at] [8] [1] : memref<64xf32> to memref<8xf32, strided<[1], offset: ?>>
      memref.copy %tmp, %dst : memref<8xf32> to memref<8xf32, strided<[1], offset: ?>>
    }
  }
  return
}

// -----

// Buffers that outlive their iteration, or whose size it computes, stay:
// one passed to a call, one yielded, one of a dynamic size.
// CHECK-LABEL: func.func @Kept(
// CHECK: scf.for
// CHECK: memref.alloc() : memref<8xf32>
// CHECK: call @keep
// CHECK: scf.for
// CHECK: memref.alloc() : memref<8xf32>
// CHECK: scf.yield
// CHECK: scf.for
// CHECK: memref.alloc(%{{.*}}) : memref<?xf32>
func.func private @keep(memref<8xf32>)
func.func @Kept(%n: index, %init: memref<8xf32>) -> memref<8xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %one = arith.constant 1.0 : f32
  scf.for %i = %c0 to %c4 step %c1 {
    %tmp = memref.alloc() : memref<8xf32>
    func.call @keep(%tmp) : (memref<8xf32>) -> ()
  }
  %last = scf.for %i = %c0 to %c4 step %c1 iter_args(%prev = %init) -> (memref<8xf32>) {
    %tmp = memref.alloc() : memref<8xf32>
    memref.copy %prev, %tmp : memref<8xf32> to memref<8xf32>
    scf.yield %tmp : memref<8xf32>
  }
  scf.for %i = %c0 to %c4 step %c1 {
    %size = arith.addi %n, %i : index
    %tmp = memref.alloc(%size) : memref<?xf32>
    linalg.fill ins(%one : f32) outs(%tmp : memref<?xf32>)
  }
  return %last : memref<8xf32>
}
