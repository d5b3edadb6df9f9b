// RUN: mithril-opt %s --split-input-file --mithril-prefetch-next-rows | FileCheck %s

// A matrix-vector product at batch 16: groups of 4 weight rows, 4 row groups
// of the batch, 49 steps of 16 lanes. Each step prefetches one line of the
// next weight group: row group r takes row j + 4 + r at the step's chunk.
// The batch's reads get none.
// CHECK-LABEL: func.func @batch16
// CHECK: scf.for %[[J:.+]] = %c0 to %c512 step %c4
// CHECK: scf.for %[[R:.+]] = %c0 to %c16 step %c4
// CHECK: scf.for %[[K:.+]] = %c0 to %c49 step %c1
// CHECK-NOT: memref.prefetch %arg0
// CHECK: %[[GROUP:.+]] = arith.divui %[[R]], %c4
// CHECK: %[[WITHIN:.+]] = arith.remui %[[GROUP]], %c4
// CHECK: %[[FROM:.+]] = arith.addi %[[J]], %[[WITHIN]]
// CHECK: %[[ROW:.+]] = arith.addi %[[FROM]], %c4
// CHECK: memref.prefetch %arg1[%[[ROW]], %[[K]], %c0{{.*}}], read, locality<3>, data : memref<512x49x16xf32>
// CHECK-NOT: memref.prefetch
// CHECK: vector.transfer_read %arg1[%[[J]], %[[K]], %c0]
func.func @batch16(%x: memref<16x49x16xf32>, %w: memref<512x49x16xf32>, %y: memref<16x512x16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c16 = arith.constant 16 : index
  %c49 = arith.constant 49 : index
  %c512 = arith.constant 512 : index
  %zero = arith.constant dense<0.0> : vector<4x4x16xf32>
  %pad = ub.poison : f32
  scf.for %j = %c0 to %c512 step %c4 {
    scf.for %r = %c0 to %c16 step %c4 {
      %sum = scf.for %k = %c0 to %c49 step %c1 iter_args(%acc = %zero) -> (vector<4x4x16xf32>) {
        %xv = vector.transfer_read %x[%r, %k, %c0], %pad {in_bounds = [true, true, true]} : memref<16x49x16xf32>, vector<4x1x16xf32>
        %wv = vector.transfer_read %w[%j, %k, %c0], %pad {in_bounds = [true, true, true]} : memref<512x49x16xf32>, vector<4x1x16xf32>
        %xs = vector.shape_cast %xv : vector<4x1x16xf32> to vector<4x1x16xf32>
        %xb = vector.broadcast %xs : vector<4x1x16xf32> to vector<4x4x1x16xf32>
        %wt = vector.transpose %xb, [1, 0, 2, 3] : vector<4x4x1x16xf32> to vector<4x4x1x16xf32>
        %p = vector.shape_cast %wt : vector<4x4x1x16xf32> to vector<4x4x16xf32>
        %ws = vector.shape_cast %wv : vector<4x1x16xf32> to vector<4x16xf32>
        %wb = vector.broadcast %ws : vector<4x16xf32> to vector<4x4x16xf32>
        %next = vector.fma %p, %wb, %acc : vector<4x4x16xf32>
        scf.yield %next : vector<4x4x16xf32>
      }
      vector.transfer_write %sum, %y[%r, %j, %c0] {in_bounds = [true, true, true]} : vector<4x4x16xf32>, memref<16x512x16xf32>
    }
  }
  return
}

// -----

// Batch 8 (two row groups): two lines a step. Batch 1 (no loop over row
// groups) and groups of 8 rows over one row group (8 lines a step) get none.
// CHECK-LABEL: func.func @batch8
// CHECK-COUNT-2: memref.prefetch %arg1
// CHECK-NOT: memref.prefetch
// CHECK-LABEL: func.func @batch1
// CHECK-NOT: memref.prefetch
// CHECK-LABEL: func.func @crowded
// CHECK-NOT: memref.prefetch
// CHECK: return
func.func @batch8(%x: memref<8x49x16xf32>, %w: memref<512x49x16xf32>, %y: memref<8x512x16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %c49 = arith.constant 49 : index
  %c512 = arith.constant 512 : index
  %zero = arith.constant dense<0.0> : vector<4x16xf32>
  %pad = ub.poison : f32
  scf.for %j = %c0 to %c512 step %c4 {
    scf.for %r = %c0 to %c8 step %c4 {
      %sum = scf.for %k = %c0 to %c49 step %c1 iter_args(%acc = %zero) -> (vector<4x16xf32>) {
        %wv = vector.transfer_read %w[%j, %k, %c0], %pad {in_bounds = [true, true, true]} : memref<512x49x16xf32>, vector<4x1x16xf32>
        %ws = vector.shape_cast %wv : vector<4x1x16xf32> to vector<4x16xf32>
        %next = arith.addf %ws, %acc : vector<4x16xf32>
        scf.yield %next : vector<4x16xf32>
      }
      vector.transfer_write %sum, %y[%r, %j, %c0] {in_bounds = [true, true]} : vector<4x16xf32>, memref<8x512x16xf32>
    }
  }
  return
}
func.func @batch1(%w: memref<512x49x16xf32>, %y: memref<512x16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c49 = arith.constant 49 : index
  %c512 = arith.constant 512 : index
  %zero = arith.constant dense<0.0> : vector<8x16xf32>
  %pad = ub.poison : f32
  scf.for %j = %c0 to %c512 step %c8 {
    %sum = scf.for %k = %c0 to %c49 step %c1 iter_args(%acc = %zero) -> (vector<8x16xf32>) {
      %wv = vector.transfer_read %w[%j, %k, %c0], %pad {in_bounds = [true, true, true]} : memref<512x49x16xf32>, vector<8x1x16xf32>
      %ws = vector.shape_cast %wv : vector<8x1x16xf32> to vector<8x16xf32>
      %next = arith.addf %ws, %acc : vector<8x16xf32>
      scf.yield %next : vector<8x16xf32>
    }
    vector.transfer_write %sum, %y[%j, %c0] {in_bounds = [true, true]} : vector<8x16xf32>, memref<512x16xf32>
  }
  return
}
func.func @crowded(%w: memref<512x49x16xf32>, %y: memref<512x16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c49 = arith.constant 49 : index
  %c512 = arith.constant 512 : index
  %zero = arith.constant dense<0.0> : vector<8x16xf32>
  %pad = ub.poison : f32
  scf.for %j = %c0 to %c512 step %c8 {
    scf.for %r = %c0 to %c1 step %c1 {
      %sum = scf.for %k = %c0 to %c49 step %c1 iter_args(%acc = %zero) -> (vector<8x16xf32>) {
        %wv = vector.transfer_read %w[%j, %k, %c0], %pad {in_bounds = [true, true, true]} : memref<512x49x16xf32>, vector<8x1x16xf32>
        %ws = vector.shape_cast %wv : vector<8x1x16xf32> to vector<8x16xf32>
        %next = arith.addf %ws, %acc : vector<8x16xf32>
        scf.yield %next : vector<8x16xf32>
      }
      vector.transfer_write %sum, %y[%j, %c0] {in_bounds = [true, true]} : vector<8x16xf32>, memref<512x16xf32>
    }
  }
  return
}

// -----

// AVX2's float lanes: a step reads 8 floats, half a line. Batch 16's 4 row
// groups of 3 each prefetch their row of the next group, at the step's
// chunk (each line twice); a loop of 2 row groups (the last 4 rows, or batch
// 8), which would take two a step, gets none, and so does a weight 1024
// deep, whose group and the next (2 x 16 KiB) would fill an L1.
// CHECK-LABEL: func.func @half_lines
// CHECK: scf.for %[[J:.+]] = %c0 to %c512 step %c4
// CHECK: scf.for %[[R:.+]] = %c0 to %c12 step %c3
// CHECK: scf.for %[[K:.+]] = %c0 to %c98 step %c1
// CHECK: %[[GROUP:.+]] = arith.divui %[[R]], %c3
// CHECK: %[[WITHIN:.+]] = arith.remui %[[GROUP]], %c4
// CHECK: %[[FROM:.+]] = arith.addi %[[J]], %[[WITHIN]]
// CHECK: %[[ROW:.+]] = arith.addi %[[FROM]], %c4
// CHECK: memref.prefetch %arg1[%[[ROW]], %[[K]], %c0{{.*}}], read, locality<3>, data : memref<512x98x8xf32>
// CHECK-NOT: memref.prefetch
// CHECK: scf.for %{{.+}} = %c12 to %c16 step %c2
// CHECK-NOT: memref.prefetch
// CHECK-LABEL: func.func @half_lines_deep
// CHECK-NOT: memref.prefetch
// CHECK: return
func.func @half_lines(%x: memref<16x98x8xf32>, %w: memref<512x98x8xf32>, %y: memref<16x512x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %c12 = arith.constant 12 : index
  %c16 = arith.constant 16 : index
  %c98 = arith.constant 98 : index
  %c512 = arith.constant 512 : index
  %zero = arith.constant dense<0.0> : vector<4x8xf32>
  %pad = ub.poison : f32
  scf.for %j = %c0 to %c512 step %c4 {
    scf.for %r = %c0 to %c12 step %c3 {
      %sum = scf.for %k = %c0 to %c98 step %c1 iter_args(%acc = %zero) -> (vector<4x8xf32>) {
        %wv = vector.transfer_read %w[%j, %k, %c0], %pad {in_bounds = [true, true, true]} : memref<512x98x8xf32>, vector<4x1x8xf32>
        %ws = vector.shape_cast %wv : vector<4x1x8xf32> to vector<4x8xf32>
        %next = arith.addf %ws, %acc : vector<4x8xf32>
        scf.yield %next : vector<4x8xf32>
      }
      vector.transfer_write %sum, %y[%r, %j, %c0] {in_bounds = [true, true]} : vector<4x8xf32>, memref<16x512x8xf32>
    }
    scf.for %r = %c12 to %c16 step %c2 {
      %sum = scf.for %k = %c0 to %c98 step %c1 iter_args(%acc = %zero) -> (vector<4x8xf32>) {
        %wv = vector.transfer_read %w[%j, %k, %c0], %pad {in_bounds = [true, true, true]} : memref<512x98x8xf32>, vector<4x1x8xf32>
        %ws = vector.shape_cast %wv : vector<4x1x8xf32> to vector<4x8xf32>
        %next = arith.addf %ws, %acc : vector<4x8xf32>
        scf.yield %next : vector<4x8xf32>
      }
      vector.transfer_write %sum, %y[%r, %j, %c0] {in_bounds = [true, true]} : vector<4x8xf32>, memref<16x512x8xf32>
    }
  }
  return
}
func.func @half_lines_deep(%x: memref<16x128x8xf32>, %w: memref<512x128x8xf32>, %y: memref<16x512x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %c12 = arith.constant 12 : index
  %c128 = arith.constant 128 : index
  %c512 = arith.constant 512 : index
  %zero = arith.constant dense<0.0> : vector<4x8xf32>
  %pad = ub.poison : f32
  scf.for %j = %c0 to %c512 step %c4 {
    scf.for %r = %c0 to %c12 step %c3 {
      %sum = scf.for %k = %c0 to %c128 step %c1 iter_args(%acc = %zero) -> (vector<4x8xf32>) {
        %wv = vector.transfer_read %w[%j, %k, %c0], %pad {in_bounds = [true, true, true]} : memref<512x128x8xf32>, vector<4x1x8xf32>
        %ws = vector.shape_cast %wv : vector<4x1x8xf32> to vector<4x8xf32>
        %next = arith.addf %ws, %acc : vector<4x8xf32>
        scf.yield %next : vector<4x8xf32>
      }
      vector.transfer_write %sum, %y[%r, %j, %c0] {in_bounds = [true, true]} : vector<4x8xf32>, memref<16x512x8xf32>
    }
  }
  return
}

// -----

// A register tile of 8 rows of a weight [1024, 256] read in place, one
// column of them broadcast a step (a swapped product, C^T = W * A^T), over
// 256 steps: each step prefetches one line of the next tile's rows, a line
// of every row at a time, last line first, through the weight flattened: row
// k mod 8, line 15 - min(k / 8, 15) from (r + 8) * 256, at most the last
// element (first line first, rows 4 KiB apart, the prefetched lines went
// into the L1 set the tile was reading). A tile
// of 6 rows (AVX2's 6 x 16) prefetches the next 6 rows' elements in memory
// order, one line a step from (r + 6) * K. Tiles of a reduction shorter
// than the row (a block of it, with the rows loop right around: below for
// a loop of panels around) or of more rows than a line has elements (16
// rows of f64: 16 x 32 lines would outnumber the 256 steps) get none.
// CHECK-LABEL: func.func @broadcast_rows
// CHECK: scf.for %[[R:.+]] = %c0 to %c1024 step %c8
// CHECK: %[[FLAT:.+]] = memref.collapse_shape %arg0 {{\[\[}}0, 1]] : memref<1024x256xf32> into memref<262144xf32>
// CHECK: %[[NEXT:.+]] = arith.addi %[[R]], %{{.+}} : index
// CHECK: %[[START:.+]] = arith.muli %[[NEXT]], %{{.+}} : index
// CHECK: scf.for %[[K:.+]] = %c0 to %c256 step %c1
// CHECK: %[[ROW:.+]] = arith.andi %[[K]], %c7
// CHECK: %[[STEP:.+]] = arith.shrui %[[K]], %c3
// CHECK: %[[CLAMPED:.+]] = arith.minui %[[STEP]], %c15
// CHECK: %[[LINE:.+]] = arith.subi %c15{{.*}}, %[[CLAMPED]]
// CHECK: %[[COLUMN:.+]] = arith.muli %[[LINE]], %c16
// CHECK: %[[ROWS:.+]] = arith.muli %[[ROW]], %c256
// CHECK: %[[OFFSET:.+]] = arith.addi %[[ROWS]], %[[COLUMN]]
// CHECK: %[[AT:.+]] = arith.addi %[[START]], %[[OFFSET]]
// CHECK: %[[INDEX:.+]] = arith.minui %[[AT]], %c262143
// CHECK: memref.prefetch %[[FLAT]][%[[INDEX]]], read, locality<3>, data : memref<262144xf32>
// CHECK-NOT: memref.prefetch
// CHECK: vector.transfer_read %arg0[%[[R]], %[[K]]]
// CHECK-LABEL: func.func @six_rows
// CHECK: scf.for %[[R:.+]] = %c0 to %c510 step %c6
// CHECK: %[[FIRST:.+]] = arith.addi %[[R]], %c0 : index
// CHECK: %[[FLAT:.+]] = memref.collapse_shape %arg0 {{\[\[}}0, 1]] : memref<510x784xf32> into memref<399840xf32>
// CHECK: %[[NEXT:.+]] = arith.addi %[[FIRST]], %{{.+}} : index
// CHECK: %[[START:.+]] = arith.muli %[[NEXT]], %{{.+}} : index
// CHECK: scf.for %[[K:.+]] = %c0 to %c784 step %c1
// CHECK: %[[COLUMN:.+]] = arith.muli %[[K]], %c16
// CHECK: %[[AT:.+]] = arith.addi %[[START]], %[[COLUMN]]
// CHECK: %[[INDEX:.+]] = arith.minui %[[AT]], %c399839
// CHECK: memref.prefetch %[[FLAT]][%[[INDEX]]], read, locality<3>, data : memref<399840xf32>
// CHECK-NOT: memref.prefetch
// CHECK: vector.transfer_read %arg0[%[[FIRST]], %[[K]]]
// CHECK-LABEL: func.func @reduction_block
// CHECK-NOT: memref.prefetch
// CHECK-LABEL: func.func @many_rows
// CHECK-NOT: memref.prefetch
// CHECK: return
func.func @broadcast_rows(%w: memref<1024x256xf32>, %p: memref<256x32xf32>, %y: memref<1024x32xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c256 = arith.constant 256 : index
  %c1024 = arith.constant 1024 : index
  %zero = arith.constant dense<0.0> : vector<8x32xf32>
  %pad = ub.poison : f32
  scf.for %r = %c0 to %c1024 step %c8 {
    %sum = scf.for %k = %c0 to %c256 step %c1 iter_args(%acc = %zero) -> (vector<8x32xf32>) {
      %column = vector.transfer_read %w[%r, %k], %pad {in_bounds = [true], permutation_map = affine_map<(d0, d1) -> (d0)>} : memref<1024x256xf32>, vector<8xf32>
      %a = vector.shape_cast %column : vector<8xf32> to vector<8x1xf32>
      %ab = vector.broadcast %a : vector<8x1xf32> to vector<8x32xf32>
      %row = vector.transfer_read %p[%k, %c0], %pad {in_bounds = [true]} : memref<256x32xf32>, vector<32xf32>
      %bb = vector.broadcast %row : vector<32xf32> to vector<8x32xf32>
      %next = vector.fma %ab, %bb, %acc : vector<8x32xf32>
      scf.yield %next : vector<8x32xf32>
    }
    vector.transfer_write %sum, %y[%r, %c0] {in_bounds = [true, true]} : vector<8x32xf32>, memref<1024x32xf32>
  }
  return
}
// (The tile's first row, r + 0 of a block, computed in the reduction, as
// the pipeline leaves it: moved out before the prefetch's index uses it.)
func.func @six_rows(%w: memref<510x784xf32>, %p: memref<784x16xf32>, %y: memref<510x16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c6 = arith.constant 6 : index
  %c510 = arith.constant 510 : index
  %c784 = arith.constant 784 : index
  %zero = arith.constant dense<0.0> : vector<6x16xf32>
  %pad = ub.poison : f32
  scf.for %r = %c0 to %c510 step %c6 {
    %sum = scf.for %k = %c0 to %c784 step %c1 iter_args(%acc = %zero) -> (vector<6x16xf32>) {
      %first = arith.addi %r, %c0 : index
      %column = vector.transfer_read %w[%first, %k], %pad {in_bounds = [true], permutation_map = affine_map<(d0, d1) -> (d0)>} : memref<510x784xf32>, vector<6xf32>
      %a = vector.shape_cast %column : vector<6xf32> to vector<6x1xf32>
      %ab = vector.broadcast %a : vector<6x1xf32> to vector<6x16xf32>
      %row = vector.transfer_read %p[%k, %c0], %pad {in_bounds = [true]} : memref<784x16xf32>, vector<16xf32>
      %bb = vector.broadcast %row : vector<16xf32> to vector<6x16xf32>
      %next = vector.fma %ab, %bb, %acc : vector<6x16xf32>
      scf.yield %next : vector<6x16xf32>
    }
    vector.transfer_write %sum, %y[%r, %c0] {in_bounds = [true, true]} : vector<6x16xf32>, memref<510x16xf32>
  }
  return
}
func.func @reduction_block(%w: memref<1024x256xf32>, %p: memref<256x32xf32>, %y: memref<1024x32xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c128 = arith.constant 128 : index
  %c1024 = arith.constant 1024 : index
  %zero = arith.constant dense<0.0> : vector<8x32xf32>
  %pad = ub.poison : f32
  scf.for %r = %c0 to %c1024 step %c8 {
    %sum = scf.for %k = %c0 to %c128 step %c1 iter_args(%acc = %zero) -> (vector<8x32xf32>) {
      %column = vector.transfer_read %w[%r, %k], %pad {in_bounds = [true], permutation_map = affine_map<(d0, d1) -> (d0)>} : memref<1024x256xf32>, vector<8xf32>
      %a = vector.shape_cast %column : vector<8xf32> to vector<8x1xf32>
      %ab = vector.broadcast %a : vector<8x1xf32> to vector<8x32xf32>
      %row = vector.transfer_read %p[%k, %c0], %pad {in_bounds = [true]} : memref<256x32xf32>, vector<32xf32>
      %bb = vector.broadcast %row : vector<32xf32> to vector<8x32xf32>
      %next = vector.fma %ab, %bb, %acc : vector<8x32xf32>
      scf.yield %next : vector<8x32xf32>
    }
    vector.transfer_write %sum, %y[%r, %c0] {in_bounds = [true, true]} : vector<8x32xf32>, memref<1024x32xf32>
  }
  return
}
func.func @many_rows(%w: memref<1024x256xf64>, %p: memref<256x16xf64>, %y: memref<1024x16xf64>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %c256 = arith.constant 256 : index
  %c1024 = arith.constant 1024 : index
  %zero = arith.constant dense<0.0> : vector<16x16xf64>
  %pad = ub.poison : f64
  scf.for %r = %c0 to %c1024 step %c16 {
    %sum = scf.for %k = %c0 to %c256 step %c1 iter_args(%acc = %zero) -> (vector<16x16xf64>) {
      %column = vector.transfer_read %w[%r, %k], %pad {in_bounds = [true], permutation_map = affine_map<(d0, d1) -> (d0)>} : memref<1024x256xf64>, vector<16xf64>
      %a = vector.shape_cast %column : vector<16xf64> to vector<16x1xf64>
      %ab = vector.broadcast %a : vector<16x1xf64> to vector<16x16xf64>
      %row = vector.transfer_read %p[%k, %c0], %pad {in_bounds = [true]} : memref<256x16xf64>, vector<16xf64>
      %bb = vector.broadcast %row : vector<16xf64> to vector<16x16xf64>
      %next = vector.fma %ab, %bb, %acc : vector<16x16xf64>
      scf.yield %next : vector<16x16xf64>
    }
    vector.transfer_write %sum, %y[%r, %c0] {in_bounds = [true, true]} : vector<16x16xf64>, memref<1024x16xf64>
  }
  return
}

// -----

// A 6 x 16 tile over a block of 256 of A's 1024 steps (columns 256 to 511),
// once for each of 16 panels, its rows the same for all of them (AVX2's
// float32 row tiles outermost): before each panel's reduction, 6 of the next
// tile's 6 x 16 lines, slot s = 6 * panel + i at row r + 6 + min(s / 16, 5)
// and column 256 + (s mod 16) * 16, clamped to the matrix. A tile whose rows
// the loop around changes (panels outermost: @rows_around) or whose rows are
// constant (a last tile of the remaining rows: @last_rows) gets none, and
// neither does a tile of a matrix smaller than 64 KiB (@small).
// CHECK-LABEL: func.func @tile_block
// CHECK: scf.for %[[R:.+]] = %c0 to %c1020 step %c6
// CHECK: %[[START:.+]] = arith.addi %c0{{.*}}, %c256
// CHECK: scf.for %[[J:.+]] = %c0 to %c16 step %c1
// CHECK: %[[NEXT:.+]] = arith.addi %[[R]], %c6
// CHECK: %[[SLOT:.+]] = arith.muli %[[J]], %c6
// CHECK: %[[ROW:.+]] = arith.divui %[[SLOT]], %c16
// CHECK: %[[ROWC:.+]] = arith.minui %[[ROW]], %c5
// CHECK: %[[AT:.+]] = arith.addi %[[NEXT]], %[[ROWC]]
// CHECK: %[[ROWI:.+]] = arith.minui %[[AT]], %c1023
// CHECK: %[[LINE:.+]] = arith.remui %[[SLOT]], %c16
// CHECK: %[[OFFSET:.+]] = arith.muli %[[LINE]], %c16
// CHECK: %[[COLUMN:.+]] = arith.addi %[[START]], %[[OFFSET]]
// CHECK: %[[COLUMNI:.+]] = arith.minui %[[COLUMN]], %c1023
// CHECK: memref.prefetch %arg0[%[[ROWI]], %[[COLUMNI]]], read, locality<3>, data : memref<1024x1024xf32>
// CHECK-COUNT-5: memref.prefetch %arg0
// CHECK-NOT: memref.prefetch
// CHECK: scf.for %{{.+}} = %c0 to %c256 step %c1
// CHECK-NOT: memref.prefetch
// CHECK-LABEL: func.func @rows_around
// CHECK-NOT: memref.prefetch
// CHECK-LABEL: func.func @last_rows
// CHECK-NOT: memref.prefetch
// CHECK-LABEL: func.func @small
// CHECK-NOT: memref.prefetch
// CHECK-LABEL: func.func @whole_reduction
// CHECK-NOT: memref.prefetch
// CHECK: return
func.func @tile_block(%a: memref<1024x1024xf32>, %p: memref<16x256x16xf32>, %y: memref<1020x16x16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c6 = arith.constant 6 : index
  %c16 = arith.constant 16 : index
  %c256 = arith.constant 256 : index
  %c1020 = arith.constant 1020 : index
  %zero = arith.constant dense<0.0> : vector<6x16xf32>
  %pad = ub.poison : f32
  scf.for %r = %c0 to %c1020 step %c6 {
    scf.for %j = %c0 to %c16 step %c1 {
      %sum = scf.for %k = %c0 to %c256 step %c1 iter_args(%acc = %zero) -> (vector<6x16xf32>) {
        %kk = arith.addi %k, %c256 : index
        %column = vector.transfer_read %a[%r, %kk], %pad {in_bounds = [true], permutation_map = affine_map<(d0, d1) -> (d0)>} : memref<1024x1024xf32>, vector<6xf32>
        %a6 = vector.shape_cast %column : vector<6xf32> to vector<6x1xf32>
        %ab = vector.broadcast %a6 : vector<6x1xf32> to vector<6x16xf32>
        %row = vector.transfer_read %p[%j, %k, %c0], %pad {in_bounds = [true]} : memref<16x256x16xf32>, vector<16xf32>
        %bb = vector.broadcast %row : vector<16xf32> to vector<6x16xf32>
        %next = vector.fma %ab, %bb, %acc : vector<6x16xf32>
        scf.yield %next : vector<6x16xf32>
      }
      vector.transfer_write %sum, %y[%r, %j, %c0] {in_bounds = [true, true], permutation_map = affine_map<(d0, d1, d2) -> (d0, d2)>} : vector<6x16xf32>, memref<1020x16x16xf32>
    }
  }
  return
}
func.func @rows_around(%a: memref<1024x1024xf32>, %p: memref<16x256x16xf32>, %y: memref<1020x16x16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c6 = arith.constant 6 : index
  %c16 = arith.constant 16 : index
  %c256 = arith.constant 256 : index
  %c1020 = arith.constant 1020 : index
  %zero = arith.constant dense<0.0> : vector<6x16xf32>
  %pad = ub.poison : f32
  scf.for %j = %c0 to %c16 step %c1 {
    scf.for %r = %c0 to %c1020 step %c6 {
      %sum = scf.for %k = %c0 to %c256 step %c1 iter_args(%acc = %zero) -> (vector<6x16xf32>) {
        %kk = arith.addi %k, %c256 : index
        %column = vector.transfer_read %a[%r, %kk], %pad {in_bounds = [true], permutation_map = affine_map<(d0, d1) -> (d0)>} : memref<1024x1024xf32>, vector<6xf32>
        %a6 = vector.shape_cast %column : vector<6xf32> to vector<6x1xf32>
        %ab = vector.broadcast %a6 : vector<6x1xf32> to vector<6x16xf32>
        %row = vector.transfer_read %p[%j, %k, %c0], %pad {in_bounds = [true]} : memref<16x256x16xf32>, vector<16xf32>
        %bb = vector.broadcast %row : vector<16xf32> to vector<6x16xf32>
        %next = vector.fma %ab, %bb, %acc : vector<6x16xf32>
        scf.yield %next : vector<6x16xf32>
      }
      vector.transfer_write %sum, %y[%r, %j, %c0] {in_bounds = [true, true], permutation_map = affine_map<(d0, d1, d2) -> (d0, d2)>} : vector<6x16xf32>, memref<1020x16x16xf32>
    }
  }
  return
}
func.func @last_rows(%a: memref<1024x1024xf32>, %p: memref<16x256x16xf32>, %y: memref<4x16x16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %c256 = arith.constant 256 : index
  %c1020 = arith.constant 1020 : index
  %zero = arith.constant dense<0.0> : vector<4x16xf32>
  %pad = ub.poison : f32
  scf.for %j = %c0 to %c16 step %c1 {
    %sum = scf.for %k = %c0 to %c256 step %c1 iter_args(%acc = %zero) -> (vector<4x16xf32>) {
      %column = vector.transfer_read %a[%c1020, %k], %pad {in_bounds = [true], permutation_map = affine_map<(d0, d1) -> (d0)>} : memref<1024x1024xf32>, vector<4xf32>
      %a4 = vector.shape_cast %column : vector<4xf32> to vector<4x1xf32>
      %ab = vector.broadcast %a4 : vector<4x1xf32> to vector<4x16xf32>
      %row = vector.transfer_read %p[%j, %k, %c0], %pad {in_bounds = [true]} : memref<16x256x16xf32>, vector<16xf32>
      %bb = vector.broadcast %row : vector<16xf32> to vector<4x16xf32>
      %next = vector.fma %ab, %bb, %acc : vector<4x16xf32>
      scf.yield %next : vector<4x16xf32>
    }
    vector.transfer_write %sum, %y[%c0, %j, %c0] {in_bounds = [true, true], permutation_map = affine_map<(d0, d1, d2) -> (d0, d2)>} : vector<4x16xf32>, memref<4x16x16xf32>
  }
  return
}
func.func @small(%a: memref<60x256xf32>, %p: memref<16x128x16xf32>, %y: memref<60x16x16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c6 = arith.constant 6 : index
  %c16 = arith.constant 16 : index
  %c60 = arith.constant 60 : index
  %c128 = arith.constant 128 : index
  %zero = arith.constant dense<0.0> : vector<6x16xf32>
  %pad = ub.poison : f32
  scf.for %r = %c0 to %c60 step %c6 {
    scf.for %j = %c0 to %c16 step %c1 {
      %sum = scf.for %k = %c0 to %c128 step %c1 iter_args(%acc = %zero) -> (vector<6x16xf32>) {
        %column = vector.transfer_read %a[%r, %k], %pad {in_bounds = [true], permutation_map = affine_map<(d0, d1) -> (d0)>} : memref<60x256xf32>, vector<6xf32>
        %a6 = vector.shape_cast %column : vector<6xf32> to vector<6x1xf32>
        %ab = vector.broadcast %a6 : vector<6x1xf32> to vector<6x16xf32>
        %row = vector.transfer_read %p[%j, %k, %c0], %pad {in_bounds = [true]} : memref<16x128x16xf32>, vector<16xf32>
        %bb = vector.broadcast %row : vector<16xf32> to vector<6x16xf32>
        %next = vector.fma %ab, %bb, %acc : vector<6x16xf32>
        scf.yield %next : vector<6x16xf32>
      }
      vector.transfer_write %sum, %y[%r, %j, %c0] {in_bounds = [true, true], permutation_map = affine_map<(d0, d1, d2) -> (d0, d2)>} : vector<6x16xf32>, memref<60x16x16xf32>
    }
  }
  return
}
// The same tile over the whole reduction of A (1024 steps), once for each of
// 32 panels: too many lines of the next tile for the panels to spread
// (12 an iteration), and its rows are read again by the next panel, not the
// next tile's rows, which the tile's reduction would otherwise prefetch
// each panel (prefetchNextBroadcastRows), 16 rows' lines into L1 32 times.
func.func @whole_reduction(%a: memref<1024x1024xf32>, %p: memref<32x1024x16xf32>, %y: memref<1020x32x16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c6 = arith.constant 6 : index
  %c32 = arith.constant 32 : index
  %c1024 = arith.constant 1024 : index
  %c1020 = arith.constant 1020 : index
  %zero = arith.constant dense<0.0> : vector<6x16xf32>
  %pad = ub.poison : f32
  scf.for %r = %c0 to %c1020 step %c6 {
    scf.for %j = %c0 to %c32 step %c1 {
      %sum = scf.for %k = %c0 to %c1024 step %c1 iter_args(%acc = %zero) -> (vector<6x16xf32>) {
        %column = vector.transfer_read %a[%r, %k], %pad {in_bounds = [true], permutation_map = affine_map<(d0, d1) -> (d0)>} : memref<1024x1024xf32>, vector<6xf32>
        %a6 = vector.shape_cast %column : vector<6xf32> to vector<6x1xf32>
        %ab = vector.broadcast %a6 : vector<6x1xf32> to vector<6x16xf32>
        %row = vector.transfer_read %p[%j, %k, %c0], %pad {in_bounds = [true]} : memref<32x1024x16xf32>, vector<16xf32>
        %bb = vector.broadcast %row : vector<16xf32> to vector<6x16xf32>
        %next = vector.fma %ab, %bb, %acc : vector<6x16xf32>
        scf.yield %next : vector<6x16xf32>
      }
      vector.transfer_write %sum, %y[%r, %j, %c0] {in_bounds = [true, true], permutation_map = affine_map<(d0, d1, d2) -> (d0, d2)>} : vector<6x16xf32>, memref<1020x32x16xf32>
    }
  }
  return
}

// -----

// In the CPU pipeline, the MLP 784-512-512-10 at batch 16: each layer's
// matrix-vector tiles prefetch their next weight rows, in each part of the
// reduction (Skylake-SP's 32 KiB L1: 784 = 17 + 16 + 16 steps, 512 = 16 + 16).
// RUN: mithril-opt %S/Inputs/mlp-16.mlir --mithril-cpu-pipeline="target-cpu=skylake-avx512 stop-after=loops" | FileCheck %s --check-prefix=MLP
// MLP: memref.prefetch {{.+}}, read, locality<3>, data : memref<512x17x16xf32, strided<[784, 16, 1]>>
// MLP: memref.prefetch {{.+}}, read, locality<3>, data : memref<512x16x16xf32, strided<[784, 16, 1], offset: 272>>
// MLP: memref.prefetch {{.+}}, read, locality<3>, data : memref<512x16x16xf32, strided<[784, 16, 1], offset: 528>>
// MLP: memref.prefetch {{.+}}, read, locality<3>, data : memref<512x16x16xf32, strided<[512, 16, 1]>>
// MLP: memref.prefetch {{.+}}, read, locality<3>, data : memref<10x16x16xf32, strided<[512, 16, 1]>>

// -----

// In the CPU pipeline, a Linear layer 784 -> 512, swapped (the weight's rows
// broadcast in place): in AVX2 code (6 x 16 tiles, batch 32) each step
// prefetches the next rows in memory order, in AVX-512 code (8 x 32, batch
// 256) in the order the next tile reads them; neither divides by the tile's
// rows or the lines of a row. AVX2's tiles at batch 256 sweep the batch's 16
// panels with the same 6 weight rows: none (@whole_reduction above).
// RUN: mithril-opt %S/Inputs/linear-32.mlir --mithril-cpu-pipeline="target-cpu=haswell threads=1 stop-after=loops" | FileCheck %s --check-prefix=AVX2ROWS --implicit-check-not=arith.remui --implicit-check-not=arith.divui
// RUN: mithril-opt %S/Inputs/linear-256.mlir --mithril-cpu-pipeline="target-cpu=haswell threads=1 stop-after=loops" | FileCheck %s --check-prefix=AVX2KEPT
// AVX2KEPT-NOT: memref.collapse_shape %arg1
// AVX2KEPT: return
// RUN: mithril-opt %S/Inputs/linear-256.mlir --mithril-cpu-pipeline="target-cpu=znver4 threads=1 stop-after=loops" | FileCheck %s --check-prefix=AVX512ROWS --implicit-check-not=arith.remui --implicit-check-not=arith.divui
// AVX2ROWS: %[[FLAT:.+]] = memref.collapse_shape %arg1 {{\[\[}}0, 1]] : memref<512x784xf32> into memref<401408xf32>
// AVX2ROWS-NOT: arith.andi
// AVX2ROWS: %[[INDEX:.+]] = arith.minui %{{.+}}, %c401407 : index
// AVX2ROWS: memref.prefetch %[[FLAT]][%[[INDEX]]], read, locality<3>, data : memref<401408xf32>
// AVX512ROWS: %[[FLAT:.+]] = memref.collapse_shape %arg1 {{\[\[}}0, 1]] : memref<512x784xf32> into memref<401408xf32>
// AVX512ROWS: arith.andi %{{.+}}, %c7 : index
// AVX512ROWS: arith.shrui %{{.+}}, %c3 : index
// AVX512ROWS: %[[CLAMPED:.+]] = arith.minui %{{.+}}, %c48 : index
// AVX512ROWS: arith.subi %c48{{.*}}, %[[CLAMPED]] : index
// AVX512ROWS: %[[INDEX:.+]] = arith.minui %{{.+}}, %c401407 : index
// AVX512ROWS: memref.prefetch %[[FLAT]][%[[INDEX]]], read, locality<3>, data : memref<401408xf32>
