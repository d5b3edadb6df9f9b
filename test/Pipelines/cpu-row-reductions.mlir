// Row reductions in the row blocks of the ops that read them
// (Scheduler::fuseRowReductions), rows that are not whole vectors split into
// whole vectors and a rest (splitColumnRemainders), and reduction loops that
// carry their tile's lanes (carryLanePartials).
// RUN: mithril-opt %s -split-input-file --mithril-cpu-pipeline="target-cpu=znver4 stop-after=fusion" | FileCheck %s
// RUN: mithril-opt %s -split-input-file --mithril-cpu-pipeline="target-cpu=znver4 threads=2 stop-after=fusion" | FileCheck %s --check-prefix=THREADS
// RUN: mithril-opt %s -split-input-file --mithril-cpu-pipeline="target-cpu=haswell stop-after=fusion" | FileCheck %s --check-prefix=AVX2
// Operator fusion off (`optimizations={"fusion": False}`): a pass per op.
// RUN: mithril-opt %s -split-input-file --mithril-cpu-pipeline="target-cpu=znver4 fusion=false stop-after=fusion" | FileCheck %s --check-prefix=UNFUSED

// A softmax is one loop over blocks of 8 rows: each block's maximum (its
// 8 x 32 tile's lanes carried across the 992 columns of whole vectors, then
// the rest of 8), exp (4-row tiles: the polynomial's chains fit the
// registers), sum (float64 lanes, 8 x 16) and division, the block's rows
// read from memory once.
// CHECK-LABEL: func.func @Softmax
// CHECK: scf.for %{{.*}} = %c0 to %c256 step %c8
// CHECK: scf.for %{{.*}} = %c0 to %c992 step %c32 iter_args(%{{.*}}) -> (vector<8x32xf32>)
// CHECK-NEXT: vector.transfer_read
// CHECK-NEXT: arith.maximumf %{{.*}} : vector<8x32xf32>
// CHECK: math.exp %{{.*}} : vector<4x32xf32>
// CHECK: math.exp %{{.*}} : vector<4x8xf32>
// CHECK: scf.for %{{.*}} = %c0 to %c992 step %c16 iter_args(%{{.*}}) -> (vector<8x16xf64>)
// CHECK: arith.divf %{{.*}} : vector<8x32xf32>
// CHECK: arith.divf %{{.*}} : vector<4x8xf32>
// CHECK-NOT: scf.for
// CHECK: return
// Two threads: each chunk of 128 rows, its blocks in turn.
// THREADS-LABEL: func.func @Softmax
// THREADS: scf.forall (%{{.*}}) = (0) to (256) step (128)
// THREADS: scf.for %{{.*}} = %c0 to %c128 step %c8
// THREADS: math.exp
// THREADS: arith.divf
// THREADS-NOT: scf.forall (
// THREADS: return
// With AVX2, 1000 columns are whole 8-lane vectors; the float64 sum's lanes in 4
// rows (8 of the 16 registers).
// AVX2-LABEL: func.func @Softmax
// AVX2: scf.for %{{.*}} = %c0 to %c256 step %c8
// AVX2: scf.for %{{.*}} = %c0 to %c1000 step %c8 iter_args(%{{.*}}) -> (vector<8x8xf32>)
// AVX2: math.exp %{{.*}} : vector<4x8xf32>
// AVX2: iter_args(%{{.*}}) -> (vector<4x8xf64>)
// AVX2: arith.divf
// AVX2-NOT: scf.for %{{.*}} = %c0 to %c256
// AVX2: return
// UNFUSED-LABEL: func.func @Softmax
// UNFUSED-COUNT-4: scf.for %{{.*}} = %c0 to %c256 step %c8
mithril.model @Softmax(data %x: tensor<256x1000xf32>) -> (y: tensor<256x1000xf32>) {
  %y = mithril.softmax %x {axis = -1 : i64} : (tensor<256x1000xf32>) -> tensor<256x1000xf32>
  mithril.output %y : tensor<256x1000xf32>
}

// -----

// A reduction that is also an output: the block loop yields it, in the same
// pass as the difference that reads it back along the rows. (Rows that fit
// half the L1 whole are not blocked.)
// CHECK-LABEL: func.func @ShiftByMaximum
// CHECK: %[[LOOP:.+]]:2 = scf.for %{{.*}} = %c0 to %c256 step %c8 {{.*}} -> (tensor<256x48xf32>, tensor<256xf32>)
// CHECK: arith.maximumf %{{.*}} : vector<8x16xf32>
// CHECK: arith.subf
// CHECK-NOT: scf.for
// CHECK: %[[M:.+]] = tensor.expand_shape %[[LOOP]]#1
// CHECK: return %[[LOOP]]#0, %[[M]]
mithril.model @ShiftByMaximum(data %x: tensor<256x48xf32>) -> (shifted: tensor<256x48xf32>, m: tensor<256x1xf32>) {
  %m = mithril.max %x {axes = array<i64: 1>, keepdim = true} : (tensor<256x48xf32>) -> tensor<256x1xf32>
  %s = mithril.subtract %x, %m : (tensor<256x48xf32>, tensor<256x1xf32>) -> tensor<256x48xf32>
  mithril.output %s, %m : tensor<256x48xf32>, tensor<256x1xf32>
}

// -----

// A softmax whose rows fit half the L1 stays a pass per op (rows of 10 in
// tiles of 2 rows).
// CHECK-LABEL: func.func @SmallSoftmax
// CHECK-COUNT-4: scf.for %{{.*}} = %c0 to %c16 step %c2
// CHECK-NOT: scf.for
// CHECK: return
mithril.model @SmallSoftmax(data %x: tensor<16x10xf32>) -> (y: tensor<16x10xf32>) {
  %y = mithril.softmax %x {axis = -1 : i64} : (tensor<16x10xf32>) -> tensor<16x10xf32>
  mithril.output %y : tensor<16x10xf32>
}
