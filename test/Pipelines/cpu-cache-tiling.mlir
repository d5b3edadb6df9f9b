// A matmul larger than a cache block is tiled into 128 x 256 x 256 blocks,
// columns outermost and rows innermost, so that each 256 x 256 block of the
// right operand is reused from L2 by every row block. That block is first
// packed into panels of 32 columns ([8][256][32], out of the row loop), so
// that a register tile reads its panel contiguously; the 8 x 32 register
// tiles then sweep the panels (panels outermost) with their accumulator
// hoisted out of the reduction. Smaller matmuls get the register tiles only.
// (A named CPU: the host's L2 sizes the blocks, 1 MiB is assumed for a name.)
// RUN: mithril-opt %s --mithril-cpu-pipeline="target-cpu=skylake-avx512 stop-after=fusion" | FileCheck %s
// RUN: mithril-opt %s --mithril-cpu-pipeline="vector-bits=512 stop-after=linalg" | not mithril-opt --mithril-cpu-schedule="cache-tile=1,2,3,4" 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: mithril-opt %s --mithril-cpu-pipeline="target-cpu=znver2 stop-after=fusion" | FileCheck %s --check-prefix=AVX2
// RUN: mithril-opt %s --mithril-cpu-pipeline="target-cpu=haswell stop-after=fusion" | FileCheck %s --check-prefix=HSW
// RUN: mithril-opt %s --mithril-cpu-pipeline="target-cpu=skylake-avx512 stop-after=fusion threads=2" | FileCheck %s --check-prefix=THREADS
// RUN: mithril-opt %s --mithril-cpu-pipeline="target-cpu=skylake-avx512 stop-after=bufferize" | FileCheck %s --check-prefix=PLACES

mithril.model @Gemm(data %a: tensor<512x512xf32>, data %b: tensor<512x512xf32>) -> (c: tensor<512x512xf32>) {
  %c = mithril.matmul %a, %b : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
  mithril.output %c : tensor<512x512xf32>
}

// 784 columns are no multiple of 32: the matmul is split into its first 768
// columns (whole register tiles, packed) and the last 16. (Before, with
// register tiles of the largest divisor, 28 columns, it ran 30x slower.)
mithril.model @Wide(data %a: tensor<512x64xf32>, data %b: tensor<64x784xf32>) -> (c: tensor<512x784xf32>) {
  %c = mithril.matmul %a, %b : (tensor<512x64xf32>, tensor<64x784xf32>) -> tensor<512x784xf32>
  mithril.output %c : tensor<512x784xf32>
}

// 1000 x 1000: the columns split at a multiple of the register tile (992)
// and of the cache block (768 = 3 x 256, then 224), the rows into 8-row
// register tiles in blocks of 40 (not 125, which left tiles of 5 x 31 and
// ran at 5 GFLOP/s). The last 8 columns, fewer than a vector's lanes, are a
// matrix-vector product: A's rows by those columns of B copied to rows.
// Each part computes into its slice of the caller's buffer: no buffer of
// the first 992 columns (nor of the 768 in it) copied into the whole.
// PLACES-LABEL: func.func @Odd(
// PLACES-NOT:     memref.alloc() {{.*}} : memref<1000x
// PLACES:         memref.subview %arg2[0, 0] [1000, 992] [1, 1]
// PLACES-NOT:     memref.copy
// PLACES-NOT:     memref.alloc() {{.*}} : memref<1000x
// PLACES:         memref.subview %arg2[0, 992] [1000, 8] [1, 1]
// PLACES-NOT:     memref.copy
// PLACES:         return
mithril.model @Odd(data %a: tensor<1000x1000xf32>, data %b: tensor<1000x1000xf32>) -> (c: tensor<1000x1000xf32>) {
  %c = mithril.matmul %a, %b : (tensor<1000x1000xf32>, tensor<1000x1000xf32>) -> tensor<1000x1000xf32>
  mithril.output %c : tensor<1000x1000xf32>
}

// 28 columns, more than one vector and not whole vectors: 16 columns, then
// the 12 left, fewer than a vector's lanes, as a matrix-vector product (in
// AVX2 code, 16 in two 8-lane vectors, then 8, then 4 as a matrix-vector
// product). As one 28-lane row the tiles went to LLVM as vectors it could
// only assemble element by element through the stack: 6 GFLOP/s; the 12 in
// one masked vector, A gathered down its columns, ran at half the speed of
// the 16 (256 x 512 by 20 columns on one Zen 5 core: 0.037 -> 0.024 ms).
mithril.model @Columns28(data %a: tensor<64x256xf32>, data %b: tensor<256x28xf32>) -> (c: tensor<64x28xf32>) {
  %c = mithril.matmul %a, %b : (tensor<64x256xf32>, tensor<256x28xf32>) -> tensor<64x28xf32>
  mithril.output %c : tensor<64x28xf32>
}

// 17 columns in AVX2 code: 16, then one column, as a matrix-vector product
// reading A's rows by the column as one row (a view). (Before, it ran down
// the rows 8 at a time, A gathered down its columns; in 6-row tiles a
// masked vector each step, kept out of registers: 1.6 GFLOP/s. Fewer than
// 16 columns take the matrix-vector kernel: cpu-gemv.mlir.)
mithril.model @Columns17(data %a: tensor<256x512xf32>, data %b: tensor<512x17xf32>) -> (c: tensor<256x17xf32>) {
  %c = mithril.matmul %a, %b : (tensor<256x512xf32>, tensor<512x17xf32>) -> tensor<256x17xf32>
  mithril.output %c : tensor<256x17xf32>
}

// A 1 MiB L2 takes 16 rows a block in AVX2 tiles of 6 rows; 1056 rows (a
// multiple of 6) take blocks of whole tiles, 12. The packed block still
// serves all 88 row blocks: it is packed, and out of the row loop. (It was
// not, for the block's 12 rows: the tiles read B a matrix row apart, and
// sgemm 1056 and 2112 in AVX2 code ran at 0.75x of OpenBLAS's speed.)
mithril.model @Rows1056(data %a: tensor<1056x264xf32>, data %b: tensor<264x256xf32>) -> (c: tensor<1056x256xf32>) {
  %c = mithril.matmul %a, %b : (tensor<1056x264xf32>, tensor<264x256xf32>) -> tensor<1056x256xf32>
  mithril.output %c : tensor<1056x256xf32>
}

// 1030 rows in AVX2's 6-row tiles, more than two blocks of rows: the 4 rows
// no tile divides split off once, before the blocks, rather than a 4-row
// tile off each block; the rest, fewer rows than a tile, streams B as
// stored. (sgemm 2048 in AVX2 code, one Zen 5 core, 16-row blocks: 131 ->
// 127 ms, two cores 67 -> 63.) Its result and packed block outgrow the L2:
// the 6 x 16 tiles take their rows outermost, each sweeping all 16 panels
// (mithril.row_tiles_outer), so that it writes its C rows line after line.
// Each part starts from a zero fill of its own, fused into its register tiles:
// no fill of all 1030 rows written first and read back.
mithril.model @RowsOfBlocks(data %a: tensor<1030x64xf32>, data %b: tensor<64x256xf32>) -> (c: tensor<1030x256xf32>) {
  %c = mithril.matmul %a, %b : (tensor<1030x64xf32>, tensor<64x256xf32>) -> tensor<1030x256xf32>
  mithril.output %c : tensor<1030x256xf32>
}

// The same 1030 rows by two 256-column blocks: row tiles outermost in
// blocks of columns take the rows whole, so that in each block the 4 rows
// no tile divides read the packed panels (and run in each thread's share)
// rather than B as stored, after the blocks, on one thread.
mithril.model @RowsWholeInBlocks(data %a: tensor<1030x256xf32>, data %b: tensor<256x512xf32>) -> (c: tensor<1030x512xf32>) {
  %c = mithril.matmul %a, %b : (tensor<1030x256xf32>, tensor<256x512xf32>) -> tensor<1030x512xf32>
  mithril.output %c : tensor<1030x512xf32>
}

mithril.model @LinearRows(data %x: tensor<256x784xf32>, param %w: tensor<256x784xf32>) -> (y: tensor<256x256xf32>) {
  %wt = mithril.transpose %w : (tensor<256x784xf32>) -> tensor<784x256xf32>
  %y = mithril.matmul %x, %wt : (tensor<256x784xf32>, tensor<784x256xf32>) -> tensor<256x256xf32>
  mithril.output %y : tensor<256x256xf32>
}

mithril.model @Linear(data %x: tensor<512x784xf32>, param %w: tensor<512x784xf32>) -> (y: tensor<512x512xf32>) {
  %wt = mithril.transpose %w : (tensor<512x784xf32>) -> tensor<784x512xf32>
  %y = mithril.matmul %x, %wt : (tensor<512x784xf32>, tensor<784x512xf32>) -> tensor<512x512xf32>
  mithril.output %y : tensor<512x512xf32>
}

mithril.model @LinearBatch64(data %x: tensor<64x784xf32>, param %w: tensor<512x784xf32>) -> (y: tensor<64x512xf32>) {
  %wt = mithril.transpose %w : (tensor<512x784xf32>) -> tensor<784x512xf32>
  %y = mithril.matmul %x, %wt : (tensor<64x784xf32>, tensor<784x512xf32>) -> tensor<64x512xf32>
  mithril.output %y : tensor<64x512xf32>
}

mithril.model @LinearReluBatch64(data %x: tensor<64x784xf32>, param %w: tensor<512x784xf32>, param %b: tensor<512xf32>) -> (y: tensor<64x512xf32>) {
  %wt = mithril.transpose %w : (tensor<512x784xf32>) -> tensor<784x512xf32>
  %p = mithril.matmul %x, %wt : (tensor<64x784xf32>, tensor<784x512xf32>) -> tensor<64x512xf32>
  %s = mithril.add %p, %b : (tensor<64x512xf32>, tensor<512xf32>) -> tensor<64x512xf32>
  %y = mithril.relu %s : (tensor<64x512xf32>) -> tensor<64x512xf32>
  mithril.output %y : tensor<64x512xf32>
}

mithril.model @MLPBatch64(data %x: tensor<64x784xf32>, param %w0: tensor<512x784xf32>, param %b0: tensor<512xf32>, param %w1: tensor<512x512xf32>, param %b1: tensor<512xf32>, param %w2: tensor<10x512xf32>, param %b2: tensor<10xf32>) -> (y: tensor<64x10xf32>) {
  %w0t = mithril.transpose %w0 : (tensor<512x784xf32>) -> tensor<784x512xf32>
  %p0 = mithril.matmul %x, %w0t : (tensor<64x784xf32>, tensor<784x512xf32>) -> tensor<64x512xf32>
  %s0 = mithril.add %p0, %b0 : (tensor<64x512xf32>, tensor<512xf32>) -> tensor<64x512xf32>
  %h0 = mithril.relu %s0 : (tensor<64x512xf32>) -> tensor<64x512xf32>
  %w1t = mithril.transpose %w1 : (tensor<512x512xf32>) -> tensor<512x512xf32>
  %p1 = mithril.matmul %h0, %w1t : (tensor<64x512xf32>, tensor<512x512xf32>) -> tensor<64x512xf32>
  %s1 = mithril.add %p1, %b1 : (tensor<64x512xf32>, tensor<512xf32>) -> tensor<64x512xf32>
  %h1 = mithril.relu %s1 : (tensor<64x512xf32>) -> tensor<64x512xf32>
  %w2t = mithril.transpose %w2 : (tensor<10x512xf32>) -> tensor<512x10xf32>
  %p2 = mithril.matmul %h1, %w2t : (tensor<64x512xf32>, tensor<512x10xf32>) -> tensor<64x10xf32>
  %y = mithril.add %p2, %b2 : (tensor<64x10xf32>, tensor<10xf32>) -> tensor<64x10xf32>
  mithril.output %y : tensor<64x10xf32>
}

// Fewer rows than a register tile's by a right operand read as stored (a
// small batch's `x @ w`, a backward `dy @ w`): the columns split at whole
// tiles, 992 + 8 (not 768 + 224 + 8 at the cache blocks', nor tiles of 25
// of all 1000), and blocks of every column by 8 steps of the reduction, so
// that each block reads 8 whole rows of b while the accumulators stay in L1
// (blocks of 256 x 256 read 128 bytes of a row at a time: 0.30 against
// 0.056 ms, one Zen 4 core). A one-row tile keeps its accumulators in
// registers over the block's 8 steps (they were loaded and stored each step:
// 1 x 4096 by 4096 2.24 -> 1.38-1.48 ms on a Zen 5 core, numpy 1.58-1.67).
mithril.model @FewRows(data %x: tensor<1x1000xf32>, data %b: tensor<1000x1000xf32>) -> (y: tensor<1x1000xf32>) {
  %y = mithril.matmul %x, %b : (tensor<1x1000xf32>, tensor<1000x1000xf32>) -> tensor<1x1000xf32>
  mithril.output %y : tensor<1x1000xf32>
}

// On two threads such a product splits its columns only where each thread's
// part of a row of b is a page or more (2048 columns: 1024 each); with half a
// page each, both cores read every page, and two threads were slower than
// one (4 x 1024 by 1024: 0.083 -> 0.138 ms).
mithril.model @FewRowsWide(data %x: tensor<1x2048xf32>, data %b: tensor<2048x2048xf32>) -> (y: tensor<1x2048xf32>) {
  %y = mithril.matmul %x, %b : (tensor<1x2048xf32>, tensor<2048x2048xf32>) -> tensor<1x2048xf32>
  mithril.output %y : tensor<1x2048xf32>
}

// A product of 9 or 10 rows with AVX-512 takes them in one register tile
// (20 accumulators of 32 f32), on two threads in each thread's columns; 8-row
// tiles and a rest of 2 read B twice, the rest on one thread all of B (the
// MLP 784-512-512-10 at batch 256, its last layer swapped, two threads of a
// Zen 5: 0.71 -> 0.69 ms). AVX2's 16 registers take 6 rows and then 4.
mithril.model @TenRows(data %w: tensor<10x512xf32>, data %h: tensor<512x256xf32>) -> (y: tensor<10x256xf32>) {
  %y = mithril.matmul %w, %h : (tensor<10x512xf32>, tensor<512x256xf32>) -> tensor<10x256xf32>
  mithril.output %y : tensor<10x256xf32>
}

// One cache block in AVX2 code: B is packed all the same, [32][256][8] (its
// rows are 2 KiB apart, so a 6 x 8 float64 tile reading a line of each in
// turn used 8 of L1's 64 sets: dgemm 256 0.69 -> 0.61 ms on a Zen 4 core),
// and the tiles of both row parts start from zeros in registers (no fill).
mithril.model @OneBlockF64(data %a: tensor<256x256xf64>, data %b: tensor<256x256xf64>) -> (c: tensor<256x256xf64>) {
  %c = mithril.matmul %a, %b : (tensor<256x256xf64>, tensor<256x256xf64>) -> tensor<256x256xf64>
  mithril.output %c : tensor<256x256xf64>
}

mithril.model @FewRowsHalfPage(data %x: tensor<4x1024xf32>, data %b: tensor<1024x1024xf32>) -> (y: tensor<4x1024xf32>) {
  %y = mithril.matmul %x, %b : (tensor<4x1024xf32>, tensor<1024x1024xf32>) -> tensor<4x1024xf32>
  mithril.output %y : tensor<4x1024xf32>
}

// The first reduction block is a product of its own whose register tiles
// start from zeros in registers: C has no zero fill, written and then read
// back by the first block. The other blocks accumulate into its result.
// CHECK-LABEL: func.func @Gemm(
// CHECK: %[[ZERO:.+]] = arith.constant dense<0.000000e+00> : vector<8x32xf32>
// CHECK-NOT: linalg.fill
// CHECK: %[[FIRSTB:.+]] = tensor.extract_slice %arg1[0, 0] [256, 512] [1, 1]
// CHECK: %[[PANELS:.+]] = tensor.empty() : tensor<8x256x32xf32>
// CHECK: %[[FIRST:.+]] = scf.for %[[N:.+]] = %c0 to %c512 step %c256
// CHECK-NEXT: %[[BBLOCK:.+]] = tensor.extract_slice %[[FIRSTB]][0, %[[N]]] [256, 256] [1, 1]
// CHECK-NEXT: %[[BVIEW:.+]] = tensor.expand_shape %[[BBLOCK]] {{.*}} into tensor<256x8x32xf32>
// CHECK: vector.transfer_read %[[BVIEW]]
// CHECK: vector.transfer_write {{.*}} : vector<8x32xf32>, tensor<1x8x32xf32>
// CHECK: scf.for %[[M:.+]] = %c0 to %c512 step %c128
// CHECK: scf.for {{.*}} to %c8 step %c1 {{.*}} -> (tensor<128x8x32xf32>)
// CHECK-NEXT: scf.for {{.*}} to %c128 step %c8
// CHECK-NOT: vector.transfer_read {{.*}} : tensor<8x1x32xf32>, vector<8x32xf32>
// CHECK: scf.for {{.*}} to %c256 step %c1 iter_args(%{{.+}} = %[[ZERO]]) -> (vector<8x32xf32>)
// CHECK: vector.transfer_read {{.*}} : tensor<8x256x32xf32>, vector<32xf32>
// CHECK: tensor.extract_slice %arg1[256, 0] [256, 512] [1, 1]
// CHECK: scf.for %{{.+}} = %c0 to %c512 step %c256 iter_args(%{{.+}} = %[[FIRST]])
// CHECK: vector.transfer_read {{.*}} : tensor<8x1x32xf32>, vector<8x32xf32>
// CHECK-NEXT: scf.for {{.*}} to %c256 step %c1 {{.*}} -> (vector<8x32xf32>)

// CHECK-LABEL: func.func @Wide(
// CHECK: tensor.extract_slice %arg1[0, 0] [64, 768] [1, 1]
// CHECK: vector.transfer_read {{.*}} : tensor<8x64x32xf32>, vector<32xf32>
// CHECK: tensor.extract_slice %{{.+}}[0, 768] [512, 16] [1, 1]
// CHECK: vector<8x16xf32>

// CHECK-LABEL: func.func @Odd(
// CHECK: %[[COLS:.+]] = tensor.extract_slice %arg1[0, 0] [1000, 992] [1, 1]
// CHECK: tensor.extract_slice %[[COLS]][0, 0] [1000, 768] [1, 1]
// CHECK: scf.for %{{.+}} = %c0 to %c1000 step %c40
// CHECK: vector.transfer_read {{.*}} : tensor<8x1x32xf32>, vector<8x32xf32>
// CHECK-NEXT: scf.for {{.*}} to %c250 step %c1 {{.*}} -> (vector<8x32xf32>)
// CHECK: tensor.extract_slice %[[COLS]][0, 768] [1000, 224] [1, 1]
// CHECK: tensor.extract_slice %{{.+}}[0, 992] [1000, 8] [1, 1]
// CHECK: -> (tensor<8x1000xf32>)
// CHECK: tensor.expand_shape %{{.+}} into tensor<8x62x16xf32>
// CHECK: scf.for %{{.+}} = %c0 to %c62 step %c1 iter_args(%{{.+}} = %{{.+}}) -> (vector<4x4x16xf32>)

// A Linear layer's weight [out, in] (of a batch at least half its outputs:
// smaller ones swap the product's operands, LinearBatch64) is packed
// straight from its own layout,
// 16 x 16 blocks transposed in registers (AVX-512 shuffles), and its
// transposed copy is gone; the reduction blocks are whole 16-element rows
// (784: 112, not 196), the first of them a product of its own (from zero)
// and the other 672 steps in blocks of 112 too.
// CHECK-LABEL: func.func @Columns28(
// CHECK-NOT: vector<8x28xf32>
// CHECK: -> (vector<8x16xf32>)
// CHECK-NOT: vector<8x28xf32>
// CHECK: tensor.expand_shape %{{.+}} into tensor<12x16x16xf32>
// CHECK: -> (vector<4x4x16xf32>)
// CHECK-NOT: vector<8x28xf32>
// CHECK-LABEL: func.func @Linear(
// CHECK-NOT: tensor<784x512xf32>
// CHECK: tensor.extract_slice %arg1[%{{.+}}, 0] [256, 112] [1, 1] : tensor<512x784xf32> to tensor<256x112xf32>
// CHECK: scf.for %{{.+}} = %c0 to %c672 step %c112
// CHECK: %[[WBLOCK:.+]] = tensor.extract_slice %arg1[%{{.+}}, %{{.+}}] [256, 112] [1, 1] : tensor<512x784xf32> to tensor<256x112xf32>
// CHECK: %[[WVIEW:.+]] = tensor.expand_shape %[[WBLOCK]] {{.*}} into tensor<8x32x112xf32>
// CHECK: vector.transfer_read %[[WVIEW]]{{.*}} vector<16x16xf32>
// CHECK: vector.shuffle {{.*}} : vector<16xf32>, vector<16xf32>

// At batch 64 the weight has 8 times as many columns as x has rows: the
// product swaps its operands, y = (w * x^T)^T. The register tiles broadcast
// the weight's elements where they lie, x^T is what gets packed (64 x 112
// blocks of x, transposed in registers), and the [512, 64] result comes back
// in 16 x 16 transposes. The weight is read in place, so the reduction is one
// block (784, not 7 of 112): each accumulator tile is loaded and stored once.
// CHECK-LABEL: func.func @LinearBatch64(
// CHECK-NOT: tensor<784x512xf32>
// CHECK-NOT: step %c112
// CHECK: tensor.expand_shape %arg0 {{.*}} into tensor<2x32x784xf32>
// CHECK: vector.transfer_read {{.*}} : tensor<2x32x784xf32>, vector<16x16xf32>
// CHECK: scf.for %{{.+}} = %c0 to %c784 step %c1 {{.*}} -> (vector<8x32xf32>)
// CHECK: tensor.empty() : tensor<64x512xf32>
// CHECK: scf.for %{{.+}} = %c0 to %c64 step %c16

// With a bias and ReLU after it, those read the swapped product transposed,
// in 16 x 16 register tiles: no transposed copy of the product of its own.
// CHECK-LABEL: func.func @LinearReluBatch64(
// CHECK: scf.for {{.*}} -> (vector<8x32xf32>)
// CHECK-NOT: tensor.empty() : tensor<64x512xf32>
// CHECK: scf.for %[[I:.+]] = %c0 to %c64 step %c16
// CHECK: scf.for %[[J:.+]] = %c0 to %c512 step %c16
// CHECK: vector.transfer_read %{{.+}}[%[[J]], %[[I]]]{{.*}} : tensor<512x64xf32>, vector<16x16xf32>
// CHECK: vector.shuffle {{.*}} : vector<16xf32>, vector<16xf32>
// CHECK: vector.transfer_read %arg2[%[[J]]]{{.*}} vector<16xf32>
// CHECK: arith.addf {{.*}} : vector<16x16xf32>
// CHECK: arith.maximumf {{.*}} : vector<16x16xf32>
// CHECK: vector.transfer_write {{.*}}[%[[I]], %[[J]]]{{.*}} : vector<16x16xf32>, tensor<64x512xf32>

// Two such layers in a row, then a narrow one: each hidden layer's bias and
// ReLU are computed transposed, [512, 64], as the next product's operand,
// in the blocks of the product before them (its epilogue), and nothing
// transposes between the layers: x^T is packed once, the next layers' panels
// are copies. The 10-output layer swaps too (its operand comes transposed
// at no cost), and only its [10, 64] result is transposed back, with the
// bias. Its 10 rows take one 10 x 32 register tile (not 8 x 32 and then 2 x
// 32, which read its operand again at a quarter of the FMAs per load).
// CHECK-LABEL: func.func @MLPBatch64(
// CHECK: vector.transfer_read {{.*}} : tensor<2x32x784xf32>, vector<16x16xf32>
// CHECK: scf.for %{{.+}} = %c0 to %c784 step %c1 {{.*}} -> (vector<8x32xf32>)
// CHECK-NOT: vector<16x16xf32>
// CHECK: arith.maximumf {{.*}} : vector<8x32xf32>
// CHECK-NEXT: vector.transfer_write {{.*}} : vector<8x32xf32>, tensor<128x64xf32>
// CHECK-NOT: vector<16x16xf32>
// CHECK: tensor.empty() : tensor<2x512x32xf32>
// CHECK-NOT: vector<16x16xf32>
// CHECK: scf.for %{{.+}} = %c0 to %c512 step %c1 {{.*}} -> (vector<8x32xf32>)
// CHECK-NOT: vector<16x16xf32>
// CHECK: arith.maximumf {{.*}} : vector<8x32xf32>
// CHECK-NOT: vector<16x16xf32>
// CHECK: bufferization.alloc_tensor() : tensor<10x64xf32>
// CHECK-NOT: vector<16x16xf32>
// CHECK-NOT: vector<2x32xf32>
// CHECK: scf.for %{{.+}} = %c0 to %c512 step %c1 {{.*}} -> (vector<10x32xf32>)
// CHECK-NOT: vector<2x32xf32>
// CHECK: arith.addf {{.*}} : vector<16x10xf32>
// CHECK-NEXT: vector.transfer_write {{.*}} : vector<16x10xf32>, tensor<64x10xf32>

// CHECK-LABEL: func.func @FewRows(
// CHECK-NOT: tensor<1x768xf32>
// CHECK: scf.for %{{.+}} = %c0 to %c1000 step %c8 iter_args(%{{.+}} = %{{.+}}) -> (tensor<1x992xf32>)
// CHECK: scf.for %[[J:.+]] = %c0 to %c992 step %c32
// CHECK: scf.for %{{.+}} = %c0 to %c8 step %c1 iter_args(%{{.+}} = %{{.+}}) -> (vector<32xf32>)
// CHECK: vector.transfer_read %arg1[%{{.+}}, %[[J]]]{{.*}} : tensor<1000x1000xf32>, vector<32xf32>
// CHECK: scf.for %{{.+}} = %c0 to %c1000 step %c8 iter_args(%{{.+}} = %{{.+}}) -> (vector<8xf32>)
// CHECK: vector.transfer_read %arg1[%{{.+}}, %c992]{{.*}} : tensor<1000x1000xf32>, vector<8xf32>

// BAD: cache-tile needs 3 positive sizes (rows, columns, reduction)

// 256 rows in AVX2's 6-row tiles: the rows stay whole until each block of
// the weight is packed (straight from the weight: no transposed copy), and
// the block's product then splits into 252 rows of 6-row tiles and 4 rows
// of 4-row tiles, both reading the one packed block.
// AVX2-LABEL: func.func @LinearRows(
// AVX2-NOT: tensor<784x256xf32>
// AVX2: %[[PANELS:.+]] = scf.for {{.*}} -> (tensor<16x112x16xf32>)
// AVX2: scf.for {{.*}} to %c252 step %c6 {{.*}} -> (tensor<252x16x16xf32>)
// AVX2: scf.for {{.*}} -> (vector<6x16xf32>)
// AVX2: vector.transfer_read %[[PANELS]]
// AVX2: -> (tensor<4x16x16xf32>)
// AVX2: scf.for {{.*}} -> (vector<4x16xf32>)
// AVX2: vector.transfer_read %[[PANELS]]
// AVX2-LABEL: func.func @Linear(

// HSW-LABEL: func.func @Columns28(
// HSW-NOT: vector<6x28xf32>
// HSW: -> (vector<6x16xf32>)
// HSW: -> (vector<6x8xf32>)
// HSW: tensor.expand_shape %{{.+}} into tensor<4x32x8xf32>
// HSW: -> (vector<3x4x8xf32>)
// HSW-LABEL: func.func @Columns17(
// HSW: -> (vector<6x16xf32>)
// HSW: %[[COLUMN:.+]] = tensor.extract_slice %arg1[0, 16] [512, 1] [1, 1]
// HSW: %[[FLAT:.+]] = tensor.collapse_shape %[[COLUMN]]
// HSW: tensor.expand_shape %[[FLAT]] {{.*}} into tensor<1x64x8xf32>
// HSW: -> (vector<3x1x8xf32>)
// HSW-LABEL: func.func @Rows1056(
// HSW: %[[PANELS:.+]] = scf.for {{.*}} -> (tensor<16x264x16xf32>)
// HSW: scf.for {{.*}} to %c1056 step %c12
// HSW: scf.for {{.*}} -> (vector<6x16xf32>)
// HSW: vector.transfer_read %[[PANELS]]
// HSW-LABEL: func.func @RowsOfBlocks(
// HSW-NOT: to %c1030
// HSW: scf.for %{{.+}} = %c0 to %c1026 step %c114 {{.*}} -> (tensor<1026x256xf32>)
// HSW: scf.for {{.*}} to %c114 step %c6 {{.*}} -> (tensor<114x16x16xf32>)
// HSW-NEXT: scf.for {{.*}} to %c16 step %c1 {{.*}} -> (tensor<114x16x16xf32>)
// HSW: -> (vector<6x16xf32>)
// HSW-NOT: vector<4x16xf32>
// HSW: -> (tensor<4x256xf32>)
// HSW: scf.for %{{.+}} = %c0 to %c8 step %c1 iter_args(%{{.+}} = %{{.+}}) -> (vector<4x16xf32>)
// HSW-LABEL: func.func @RowsWholeInBlocks(
// HSW-NOT: to %c1026 step %c114
// HSW: scf.for %{{.+}} = %c0 to %c512 step %c256
// HSW: %[[PANELS:.+]] = scf.for {{.*}} -> (tensor<16x256x16xf32>)
// HSW: scf.for %{{.+}} = %c0 to %c1026 step %c6 {{.*}} -> (tensor<1026x16x16xf32>)
// HSW-NEXT: scf.for {{.*}} to %c16 step %c1
// HSW: -> (vector<6x16xf32>)
// HSW: vector.transfer_read %[[PANELS]]
// HSW: scf.for {{.*}} -> (vector<4x16xf32>)
// HSW: vector.transfer_read %arg0[%c1026
// HSW: vector.transfer_read %[[PANELS]]
// HSW: scf.yield
// HSW-LABEL: func.func @FewRows(
// HSW: scf.for %{{.+}} = %c0 to %c1000 step %c8 iter_args(%{{.+}} = %{{.+}}) -> (tensor<1x992xf32>)
// HSW: scf.for %{{.+}} = %c0 to %c992 step %c16

// THREADS-LABEL: func.func @FewRowsWide(
// THREADS: scf.forall (%{{.+}}) = (0) to (2048) step (1024)
// THREADS-LABEL: func.func @TenRows(
// THREADS: scf.forall (%{{.+}}) = (0) to (256) step (128)
// THREADS-NOT: vector<2x32xf32>
// THREADS: -> (vector<10x32xf32>)
// THREADS: scf.forall.in_parallel
// THREADS-NOT: vector<2x32xf32>
// THREADS: return
// HSW-LABEL: func.func @TenRows(
// HSW: -> (vector<6x16xf32>)
// HSW: -> (vector<4x16xf32>)
// THREADS-LABEL: func.func @FewRowsHalfPage(
// THREADS-NOT: scf.forall
// THREADS: return
// HSW-LABEL: func.func @OneBlockF64(
// HSW-DAG: %[[ZERO6:.+]] = arith.constant dense<0.000000e+00> : vector<6x8xf64>
// HSW-DAG: %[[ZERO4:.+]] = arith.constant dense<0.000000e+00> : vector<4x8xf64>
// HSW-NOT: linalg.fill
// HSW: %[[PANELS:.+]] = scf.for {{.*}} -> (tensor<32x256x8xf64>)
// HSW: scf.for {{.*}} to %c252 step %c6
// HSW: scf.for {{.*}} to %c256 step %c1 iter_args(%{{.+}} = %[[ZERO6]]) -> (vector<6x8xf64>)
// HSW: vector.transfer_read %[[PANELS]]
// HSW: scf.for {{.*}} to %c256 step %c1 iter_args(%{{.+}} = %[[ZERO4]]) -> (vector<4x8xf64>)
// HSW: vector.transfer_read %[[PANELS]]
