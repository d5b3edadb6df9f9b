// RUN: mithril-opt %s --mithril-dispatch-chunks --split-input-file --verify-diagnostics | FileCheck %s
// RUN: mithril-opt %s --mithril-dispatch-chunks --split-input-file --verify-diagnostics --convert-scf-to-cf --expand-strided-metadata --lower-affine --finalize-memref-to-llvm --convert-to-llvm --reconcile-unrealized-casts | FileCheck %s --check-prefix=LLVM

// A split op's chunks: the body becomes a function of the context and the
// chunk index, the loop one call of the host's pool. The memref (its aligned
// pointer alone: its shape, strides and offset are static, and the chunk
// function rebuilds its descriptor from its type) and the scalar travel in
// the context struct; the constants are cloned.
// CHECK: func.func private @mithrilParallelFor((!llvm.ptr, index) -> (), !llvm.ptr, index)
// CHECK-LABEL: func.func @scale(
// CHECK-SAME: %[[BUF:.+]]: memref<512xf32>, %[[FACTOR:.+]]: f32)
// CHECK: %[[CTX:.+]] = llvm.alloca %{{.+}} x !llvm.struct<(ptr, f32)>
// CHECK-NOT: scf.forall
// CHECK: %[[DESC:.+]] = builtin.unrealized_conversion_cast %[[BUF]] : memref<512xf32> to !llvm.struct
// CHECK: %[[ALIGNED:.+]] = llvm.extractvalue %[[DESC]][1]
// CHECK: %[[F0:.+]] = llvm.getelementptr %[[CTX]][0, 0]
// CHECK: llvm.store %[[ALIGNED]], %[[F0]] : !llvm.ptr, !llvm.ptr
// CHECK: %[[F1:.+]] = llvm.getelementptr %[[CTX]][0, 1]
// CHECK: llvm.store %[[FACTOR]], %[[F1]]
// CHECK: %[[C2:.+]] = arith.constant 2 : index
// CHECK: %[[FN:.+]] = constant @scale_chunk : (!llvm.ptr, index) -> ()
// CHECK: call @mithrilParallelFor(%[[FN]], %[[CTX]], %[[C2]])
// CHECK: return
// CHECK-LABEL: func.func private @scale_chunk(
// CHECK-SAME: %[[C:.+]]: !llvm.ptr, %[[CHUNK:.+]]: index)
// CHECK: %[[P:.+]] = llvm.load %{{.+}} : !llvm.ptr -> !llvm.ptr
// CHECK: llvm.insertvalue %[[P]], %{{.+}}[0]
// CHECK: llvm.insertvalue %[[P]], %{{.+}}[1]
// CHECK: %[[SIZE:.+]] = llvm.mlir.constant(512 : index) : i64
// CHECK: %[[D:.+]] = llvm.insertvalue %{{.+}}, %{{.+}}[4, 0]
// CHECK: %[[M:.+]] = builtin.unrealized_conversion_cast %[[D]] : {{.+}} to memref<512xf32>
// CHECK: %[[S:.+]] = llvm.load %{{.+}} : !llvm.ptr -> f32
// CHECK: %[[OFF:.+]] = arith.muli %[[CHUNK]], %[[C256:.+]] : index
// CHECK: %[[IV:.+]] = arith.addi %{{.+}}, %[[OFF]] : index
// CHECK: scf.for %[[I:.+]] = %{{.+}} to %{{.+}} step
// CHECK: %[[J:.+]] = arith.addi %[[IV]], %[[I]]
// CHECK: memref.load %[[M]][%[[J]]]
// CHECK: arith.mulf %{{.+}}, %[[S]]

// Once lowered, no casts are left and the chunk function's
// address goes to the pool.
// LLVM-LABEL: llvm.func @scale(
// LLVM: %[[FN:.+]] = llvm.mlir.addressof @scale_chunk : !llvm.ptr
// LLVM: llvm.call @mithrilParallelFor(%[[FN]], %{{.+}}, %{{.+}}) : (!llvm.ptr, !llvm.ptr, i64) -> ()
// LLVM-NOT: unrealized_conversion_cast
func.func @scale(%buf: memref<512xf32>, %factor: f32) {
  %c0 = arith.constant 0 : index
  %c256 = arith.constant 256 : index
  %c1 = arith.constant 1 : index
  scf.forall (%chunk) = (0) to (512) step (256) {
    scf.for %i = %c0 to %c256 step %c1 {
      %j = arith.addi %chunk, %i : index
      %x = memref.load %buf[%j] : memref<512xf32>
      %y = arith.mulf %x, %factor : f32
      memref.store %y, %buf[%j] : memref<512xf32>
    }
  }
  return
}

// -----

// A lower bound and a step that are not constants travel with the rest,
// and a buffer of a dynamic size as its whole descriptor; the number of
// chunks is computed where the loop was.
// CHECK-LABEL: func.func @dynamic(
// CHECK-SAME: %[[LO:.+]]: index, %[[HI:.+]]: index, %[[STEP:.+]]: index
// CHECK: llvm.alloca %{{.+}} x !llvm.struct<(struct<(ptr, ptr, i64, array<1 x i64>, array<1 x i64>)>, i64, i64)>
// CHECK: %[[SPAN:.+]] = arith.subi %[[HI]], %[[LO]]
// CHECK: %[[N:.+]] = arith.ceildivsi %[[SPAN]], %[[STEP]]
// CHECK: call @mithrilParallelFor(%{{.+}}, %{{.+}}, %[[N]])
func.func @dynamic(%lo: index, %hi: index, %step: index, %buf: memref<?xf32>) {
  %one = arith.constant 1.0 : f32
  scf.forall (%i) = (%lo) to (%hi) step (%step) {
    memref.store %one, %buf[%i] : memref<?xf32>
  }
  return
}

// -----

func.func @two_dims(%buf: memref<4x4xf32>) {
  %one = arith.constant 1.0 : f32
  // expected-error @below {{only a one-dimensional scf.forall without results}}
  scf.forall (%i, %j) in (4, 4) {
    memref.store %one, %buf[%i, %j] : memref<4x4xf32>
  }
  return
}

// -----

// Nested split loops: the inner one is outlined first, and its context goes
// into the outer body, which becomes the outer chunk function's entry block:
// each outer chunk has its own.
// CHECK-LABEL: func.func @nested(
// CHECK: llvm.alloca %{{.+}} x !llvm.struct<(ptr)>
// CHECK-NOT: llvm.alloca
// CHECK: call @mithrilParallelFor
// CHECK-LABEL: func.func private @nested_chunk_0(
// CHECK: llvm.alloca %{{.+}} x !llvm.struct<(ptr, i64)>
// CHECK: constant @nested_chunk :
// CHECK: call @mithrilParallelFor
// CHECK-LABEL: func.func private @nested_chunk(
// CHECK-NOT: llvm.alloca
// CHECK: memref.store
func.func @nested(%buf: memref<4x8xf32>) {
  %one = arith.constant 1.0 : f32
  scf.forall (%i) in (4) {
    scf.forall (%j) in (8) {
      memref.store %one, %buf[%i, %j] : memref<4x8xf32>
    }
  }
  return
}

// -----

// An empty loop: no chunks, not a count wrapped around.
// CHECK-LABEL: func.func @empty(
// CHECK: %[[ZERO:.+]] = arith.constant 0 : index
// CHECK: call @mithrilParallelFor(%{{.+}}, %{{.+}}, %[[ZERO]])
func.func @empty(%buf: memref<8xf32>) {
  %one = arith.constant 1.0 : f32
  scf.forall (%i) = (6) to (2) step (1) {
    memref.store %one, %buf[%i] : memref<8xf32>
  }
  return
}

// -----

// Views of a buffer made before the loop, and the index arithmetic they
// use, are made again in the chunk function: only the buffer travels (one
// pointer, not one per view).
// CHECK-LABEL: func.func @views(
// CHECK-SAME: %[[BUF:.+]]: memref<4x64xf32>, %[[ROW:.+]]: index)
// CHECK: llvm.alloca %{{.+}} x !llvm.struct<(ptr, i64)>
// CHECK-NOT: memref.subview
// CHECK: call @mithrilParallelFor
// CHECK-LABEL: func.func private @views_chunk(
// CHECK: llvm.load %{{.+}} : !llvm.ptr -> i64
// CHECK-DAG: %[[NEXT:.+]] = arith.addi %{{.+}}, %{{.+}} : index
// CHECK-DAG: memref.subview %{{.+}}[%[[NEXT]], 0] [1, 64] [1, 1]
// CHECK-DAG: memref.subview %{{.+}}[%{{.+}}, 0] [1, 64] [1, 1]
// CHECK: memref.load
func.func @views(%buf: memref<4x64xf32>, %row: index) {
  %c1 = arith.constant 1 : index
  %next = arith.addi %row, %c1 : index
  %a = memref.subview %buf[%row, 0] [1, 64] [1, 1]
      : memref<4x64xf32> to memref<64xf32, strided<[1], offset: ?>>
  %b = memref.subview %buf[%next, 0] [1, 64] [1, 1]
      : memref<4x64xf32> to memref<64xf32, strided<[1], offset: ?>>
  scf.forall (%i) = (0) to (64) step (32) {
    %x = memref.load %a[%i] : memref<64xf32, strided<[1], offset: ?>>
    memref.store %x, %b[%i] : memref<64xf32, strided<[1], offset: ?>>
  }
  return
}
