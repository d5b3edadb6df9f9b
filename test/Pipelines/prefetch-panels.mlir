// RUN: mithril-opt %s --split-input-file --mithril-prefetch-panels | FileCheck %s
// RUN: mithril-opt %s --split-input-file --mithril-prefetch-panels=distance=4 | FileCheck %s --check-prefix=FOUR
// RUN: not mithril-opt %s --split-input-file --mithril-prefetch-panels=distance=0 2>&1 | FileCheck %s --check-prefix=BAD

// A 6 x 64 register tile over a packed panel [panel][k][64]: each step of the
// reduction reads a row of four 64-byte lines; the row 8 steps ahead (4 with
// distance=4) is prefetched into L1 before the read, unclamped. The
// broadcast column of A (a read along rows) gets none.
// CHECK-LABEL: func.func @panel
// CHECK: scf.for %[[PANEL:.+]] = %c0 to %c4
// CHECK: scf.for %[[K:.+]] = %c0 to %c1024 step %c1 iter_args
// CHECK: %[[AHEAD:.+]] = arith.addi %[[K]], %c8{{.*}} : index
// CHECK: vector.transfer_read %arg0[%{{.+}}, %[[K]]]
// CHECK-NOT: memref.prefetch %arg0
// CHECK: memref.prefetch %arg1[%[[PANEL]], %[[AHEAD]], %c0], read, locality<3>, data
// CHECK: memref.prefetch %arg1[%[[PANEL]], %[[AHEAD]], %c16{{.*}}], read, locality<3>, data
// CHECK: memref.prefetch %arg1[%[[PANEL]], %[[AHEAD]], %c32{{.*}}], read, locality<3>, data
// CHECK: memref.prefetch %arg1[%[[PANEL]], %[[AHEAD]], %c48{{.*}}], read, locality<3>, data
// CHECK-NEXT: vector.transfer_read %arg1[%[[PANEL]], %[[K]], %c0]
// FOUR-LABEL: func.func @panel
// FOUR: arith.addi %{{.+}}, %c4{{.*}} : index
// FOUR-COUNT-4: memref.prefetch
// BAD: mithril-prefetch-panels: distance must be at least 1, got 0
func.func @panel(%a: memref<128x1024xf32>, %b: memref<4x1024x64xf32>, %c: memref<128x256xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c6 = arith.constant 6 : index
  %c126 = arith.constant 126 : index
  %c1024 = arith.constant 1024 : index
  %zero = arith.constant dense<0.0> : vector<6x64xf32>
  %pad = ub.poison : f32
  scf.for %panel = %c0 to %c4 step %c1 {
    scf.for %row = %c0 to %c126 step %c6 {
      %sum = scf.for %k = %c0 to %c1024 step %c1 iter_args(%acc = %zero) -> (vector<6x64xf32>) {
        %lhs = vector.transfer_read %a[%row, %k], %pad {in_bounds = [true], permutation_map = affine_map<(d0, d1) -> (d0)>} : memref<128x1024xf32>, vector<6xf32>
        %rhs = vector.transfer_read %b[%panel, %k, %c0], %pad {in_bounds = [true]} : memref<4x1024x64xf32>, vector<64xf32>
        %column = vector.shape_cast %lhs : vector<6xf32> to vector<6x1xf32>
        %lhsTile = vector.broadcast %column : vector<6x1xf32> to vector<6x64xf32>
        %rhsTile = vector.broadcast %rhs : vector<64xf32> to vector<6x64xf32>
        %next = vector.fma %lhsTile, %rhsTile, %acc : vector<6x64xf32>
        scf.yield %next : vector<6x64xf32>
      }
      vector.transfer_write %sum, %c[%row, %c0] {in_bounds = [true, true]} : vector<6x64xf32>, memref<128x256xf32>
    }
  }
  return
}

// -----

// A matrix-vector tile's reduction steps along the innermost dimension (its
// lanes), which the hardware prefetchers follow; and a reduction shorter than
// the distance has nothing ahead: neither gets prefetches.
// CHECK-LABEL: func.func @lanes
// CHECK-NOT: memref.prefetch
// CHECK: return
func.func @lanes(%x: memref<4x784xf32>, %w: memref<512x784xf32>, %short: memref<4x8x16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %c512 = arith.constant 512 : index
  %c784 = arith.constant 784 : index
  %zero = arith.constant dense<0.0> : vector<16xf32>
  %pad = ub.poison : f32
  scf.for %j = %c0 to %c512 step %c1 {
    %s = scf.for %k = %c0 to %c784 step %c16 iter_args(%acc = %zero) -> (vector<16xf32>) {
      %xv = vector.transfer_read %x[%c0, %k], %pad {in_bounds = [true]} : memref<4x784xf32>, vector<16xf32>
      %wv = vector.transfer_read %w[%j, %k], %pad {in_bounds = [true]} : memref<512x784xf32>, vector<16xf32>
      %next = vector.fma %xv, %wv, %acc : vector<16xf32>
      scf.yield %next : vector<16xf32>
    }
    %t = scf.for %k = %c0 to %c8 step %c1 iter_args(%acc = %s) -> (vector<16xf32>) {
      %v = vector.transfer_read %short[%c0, %k, %c0], %pad {in_bounds = [true]} : memref<4x8x16xf32>, vector<16xf32>
      %next = arith.addf %v, %acc : vector<16xf32>
      scf.yield %next : vector<16xf32>
    }
    vector.transfer_write %t, %x[%c0, %c0] {in_bounds = [true]} : vector<16xf32>, memref<4x784xf32>
  }
  return
}

// -----

// In the CPU pipeline, every product's register tiles prefetch their panel
// rows, large or small: an 8 x 32 tile reads two lines a step. (sgemm 2048's
// first reduction block is a product of its own, from zero: two products.)
// RUN: mithril-opt %S/Inputs/sgemm-2048.mlir --mithril-cpu-pipeline="target-cpu=skylake-avx512 stop-after=loops" | FileCheck %s --check-prefix=PIPE2
// RUN: mithril-opt %S/Inputs/sgemm-64.mlir --mithril-cpu-pipeline="target-cpu=skylake-avx512 stop-after=loops" | FileCheck %s --check-prefix=PIPE
// PIPE-COUNT-2: memref.prefetch {{.+}}, read, locality<3>, data
// PIPE-NOT: memref.prefetch {{.+}}, read
// PIPE2-COUNT-4: memref.prefetch {{.+}}, read, locality<3>, data
// PIPE2-NOT: memref.prefetch {{.+}}, read
