// RUN: mithril-opt %s --split-input-file --mithril-prefetch-accumulators=min-bytes=1048576 | FileCheck %s
// RUN: mithril-opt %s --split-input-file --mithril-prefetch-accumulators=target-cpu=skylake-avx512 | FileCheck %s
// RUN: not mithril-opt %s --split-input-file --mithril-prefetch-accumulators=target-cpu=nocpu 2>&1 | FileCheck %s --check-prefix=BAD

// An 8 x 32 register tile of a 1024 x 1024 result (4 MiB), its accumulators
// read before the reduction loop and written back after it: before the read,
// the 16 lines of the next row tile (8 rows of two 64-byte lines) are
// prefetched for writing; the last tile (row 1016) prefetches its own.
// CHECK-LABEL: func.func @tile
// CHECK: scf.for %[[ROW:.+]] = %c0 to %c1024 step %c8
// CHECK: %[[NEXT:.+]] = arith.addi %[[ROW]], %c8
// CHECK: %[[CLAMPED:.+]] = arith.minsi %[[NEXT]], %c1016
// CHECK: %[[VIEW:.+]] = memref.subview %arg2[%[[CLAMPED]], %{{.+}}] [8, 32]
// CHECK: memref.prefetch %[[VIEW]][%c0, %c0], write, locality<3>, data
// CHECK: memref.prefetch %[[VIEW]][%c0, %{{.+}}], write, locality<3>, data
// CHECK-COUNT-14: memref.prefetch %[[VIEW]]
// CHECK-NOT: memref.prefetch
// CHECK: vector.transfer_read %{{.+}} : memref<8x32xf32, strided<[1024, 1], offset: ?>>, vector<8x32xf32>
// CHECK: scf.for
// BAD: unknown target-cpu 'nocpu'
func.func @tile(%a: memref<1024x1024xf32>, %b: memref<1024x32xf32>, %c: memref<1024x1024xf32>, %col: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c1024 = arith.constant 1024 : index
  %pad = ub.poison : f32
  scf.for %row = %c0 to %c1024 step %c8 {
    %view = memref.subview %c[%row, %col] [8, 32] [1, 1] : memref<1024x1024xf32> to memref<8x32xf32, strided<[1024, 1], offset: ?>>
    %acc = vector.transfer_read %view[%c0, %c0], %pad {in_bounds = [true, true]} : memref<8x32xf32, strided<[1024, 1], offset: ?>>, vector<8x32xf32>
    %sum = scf.for %k = %c0 to %c1024 step %c1 iter_args(%carried = %acc) -> (vector<8x32xf32>) {
      %lhs = vector.transfer_read %a[%row, %k], %pad {in_bounds = [true], permutation_map = affine_map<(d0, d1) -> (d0)>} : memref<1024x1024xf32>, vector<8xf32>
      %rhs = vector.transfer_read %b[%k, %c0], %pad {in_bounds = [true]} : memref<1024x32xf32>, vector<32xf32>
      %lhsColumn = vector.shape_cast %lhs : vector<8xf32> to vector<8x1xf32>
      %lhsTile = vector.broadcast %lhsColumn : vector<8x1xf32> to vector<8x32xf32>
      %rhsTile = vector.broadcast %rhs : vector<32xf32> to vector<8x32xf32>
      %product = arith.mulf %lhsTile, %rhsTile : vector<8x32xf32>
      %next = arith.addf %carried, %product : vector<8x32xf32>
      scf.yield %next : vector<8x32xf32>
    }
    vector.transfer_write %sum, %view[%c0, %c0] {in_bounds = [true, true]} : vector<8x32xf32>, memref<8x32xf32, strided<[1024, 1], offset: ?>>
  }
  return
}

// -----

// A result of 256 KiB stays in L2: no prefetches. Nor where the trip count
// does not divide evenly (the last tile would be partial), nor where the
// loop's result is not written back where it was read.
// CHECK-LABEL: func.func @small
// CHECK-NOT: memref.prefetch
// CHECK-LABEL: func.func @uneven
// CHECK-NOT: memref.prefetch
// CHECK-LABEL: func.func @elsewhere
// CHECK-NOT: memref.prefetch
// CHECK-LABEL: func.func @indices
// CHECK-NOT: memref.prefetch
// CHECK: return
func.func @small(%c: memref<256x256xf32>, %col: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c256 = arith.constant 256 : index
  %pad = ub.poison : f32
  scf.for %row = %c0 to %c256 step %c8 {
    %view = memref.subview %c[%row, %col] [8, 32] [1, 1] : memref<256x256xf32> to memref<8x32xf32, strided<[256, 1], offset: ?>>
    %acc = vector.transfer_read %view[%c0, %c0], %pad {in_bounds = [true, true]} : memref<8x32xf32, strided<[256, 1], offset: ?>>, vector<8x32xf32>
    %sum = scf.for %k = %c0 to %c256 step %c1 iter_args(%carried = %acc) -> (vector<8x32xf32>) {
      %next = arith.addf %carried, %carried : vector<8x32xf32>
      scf.yield %next : vector<8x32xf32>
    }
    vector.transfer_write %sum, %view[%c0, %c0] {in_bounds = [true, true]} : vector<8x32xf32>, memref<8x32xf32, strided<[256, 1], offset: ?>>
  }
  return
}

func.func @uneven(%c: memref<1020x1024xf32>, %col: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c1012 = arith.constant 1012 : index
  %c1024 = arith.constant 1024 : index
  %pad = ub.poison : f32
  scf.for %row = %c0 to %c1012 step %c8 {
    %view = memref.subview %c[%row, %col] [8, 32] [1, 1] : memref<1020x1024xf32> to memref<8x32xf32, strided<[1024, 1], offset: ?>>
    %acc = vector.transfer_read %view[%c0, %c0], %pad {in_bounds = [true, true]} : memref<8x32xf32, strided<[1024, 1], offset: ?>>, vector<8x32xf32>
    %sum = scf.for %k = %c0 to %c1024 step %c1 iter_args(%carried = %acc) -> (vector<8x32xf32>) {
      %next = arith.addf %carried, %carried : vector<8x32xf32>
      scf.yield %next : vector<8x32xf32>
    }
    vector.transfer_write %sum, %view[%c0, %c0] {in_bounds = [true, true]} : vector<8x32xf32>, memref<8x32xf32, strided<[1024, 1], offset: ?>>
  }
  return
}

func.func @elsewhere(%c: memref<1024x1024xf32>, %d: memref<1024x1024xf32>, %col: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c1024 = arith.constant 1024 : index
  %pad = ub.poison : f32
  scf.for %row = %c0 to %c1024 step %c8 {
    %view = memref.subview %c[%row, %col] [8, 32] [1, 1] : memref<1024x1024xf32> to memref<8x32xf32, strided<[1024, 1], offset: ?>>
    %acc = vector.transfer_read %view[%c0, %c0], %pad {in_bounds = [true, true]} : memref<8x32xf32, strided<[1024, 1], offset: ?>>, vector<8x32xf32>
    %sum = scf.for %k = %c0 to %c1024 step %c1 iter_args(%carried = %acc) -> (vector<8x32xf32>) {
      %next = arith.addf %carried, %carried : vector<8x32xf32>
      scf.yield %next : vector<8x32xf32>
    }
    vector.transfer_write %sum, %d[%row, %col] {in_bounds = [true, true]} : vector<8x32xf32>, memref<1024x1024xf32>
  }
  return
}

// A buffer of indices (no bit width to count lines in) is left alone.
func.func @indices(%c: memref<1024x1024xindex>, %col: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c1024 = arith.constant 1024 : index
  scf.for %row = %c0 to %c1024 step %c8 {
    %view = memref.subview %c[%row, %col] [8, 32] [1, 1] : memref<1024x1024xindex> to memref<8x32xindex, strided<[1024, 1], offset: ?>>
    %acc = vector.transfer_read %view[%c0, %c0], %c0 {in_bounds = [true, true]} : memref<8x32xindex, strided<[1024, 1], offset: ?>>, vector<8x32xindex>
    %sum = scf.for %k = %c0 to %c1024 step %c1 iter_args(%carried = %acc) -> (vector<8x32xindex>) {
      %next = arith.addi %carried, %carried : vector<8x32xindex>
      scf.yield %next : vector<8x32xindex>
    }
    vector.transfer_write %sum, %view[%c0, %c0] {in_bounds = [true, true]} : vector<8x32xindex>, memref<8x32xindex, strided<[1024, 1], offset: ?>>
  }
  return
}

// -----

// In the CPU pipeline: the register tiles of a 2048 x 2048 product (a 16 MiB
// result, larger than a named CPU's assumed 1 MiB L2, in two reduction
// blocks) prefetch their next tile; those of a 64 x 64 product do not. (A
// product whose reduction is one block starts its tiles from zeros and
// reads no accumulators.)
// RUN: mithril-opt %S/Inputs/sgemm-2048.mlir --mithril-cpu-pipeline="target-cpu=skylake-avx512 stop-after=loops" | FileCheck %s --check-prefix=LARGE
// RUN: mithril-opt %S/Inputs/sgemm-64.mlir --mithril-cpu-pipeline="target-cpu=skylake-avx512 stop-after=loops" | FileCheck %s --check-prefix=SMALL
// LARGE-LABEL: func.func @Large
// (The reads' prefetches are mithril-prefetch-panels'.)
// LARGE-COUNT-16: memref.prefetch {{.+}}, write, locality<3>, data
// LARGE-NOT: memref.prefetch {{.+}}, write
// SMALL-LABEL: func.func @Small
// SMALL-NOT: memref.prefetch {{.+}}, write
