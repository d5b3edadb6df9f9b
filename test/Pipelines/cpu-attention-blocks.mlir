// Attention row block by row block (Scheduler::fuseAttentionBlocks): the
// product of the softmax with V tiled over blocks of 8 rows of each head,
// the softmax's chain and the product of Q and K^T fused into each block, so
// that a block's scores stay in the L1 cache.
// RUN: mithril-opt %s -split-input-file --mithril-cpu-pipeline="target-cpu=znver4 stop-after=fusion" | FileCheck %s
// RUN: mithril-opt %s -split-input-file --mithril-cpu-pipeline="target-cpu=znver4 threads=2 stop-after=fusion" | FileCheck %s --check-prefix=THREADS
// RUN: mithril-opt %s -split-input-file --mithril-cpu-pipeline="target-cpu=haswell stop-after=fusion" | FileCheck %s --check-prefix=AVX2

// One loop over the 8 heads and, in it, one over blocks of 8 rows: the
// block's scores (8 x 32 register tiles over 32 steps of the heads' depth),
// its softmax, and its 8 x 32 result over the 64 steps of its row.
// CHECK-LABEL: func.func @Attention
// CHECK: scf.for %{{.*}} = %c0 to %c8 step %c1 iter_args
// CHECK-NEXT: scf.for %{{.*}} = %c0 to %c64 step %c8 iter_args
// CHECK: scf.for %{{.*}} = %c0 to %c32 step %c1 iter_args(%{{.*}}) -> (vector<8x32xf32>)
// CHECK: arith.maximumf
// CHECK: math.exp
// CHECK: arith.divf
// CHECK: scf.for %{{.*}} = %c0 to %c64 step %c1 iter_args(%{{.*}}) -> (vector<8x32xf32>)
// CHECK-NOT: scf.for
// CHECK: return
// Two threads: four heads each.
// THREADS-LABEL: func.func @Attention
// THREADS: scf.forall (%{{.*}}) = (0) to (8) step (4)
// THREADS-NEXT: tensor.extract_slice
// THREADS-NEXT: scf.for %{{.*}} = %c0 to %c4 step %c1 iter_args
// THREADS-NEXT: scf.for %{{.*}} = %c0 to %c64 step %c8 iter_args
// THREADS: math.exp
// THREADS-NOT: scf.forall (
// THREADS: return
// With AVX2's 6-row register tiles, blocks of 4 rows (one 4-row tile each,
// not a tile of 6 and a rest of 2).
// AVX2-LABEL: func.func @Attention
// AVX2: scf.for %{{.*}} = %c0 to %c8 step %c1 iter_args
// AVX2-NEXT: scf.for %{{.*}} = %c0 to %c64 step %c4 iter_args
// AVX2: iter_args(%{{.*}}) -> (vector<4x16xf32>)
// AVX2: math.exp
// AVX2: iter_args(%{{.*}}) -> (vector<4x16xf32>)
// AVX2-NOT: scf.for %{{.*}} = %c0 to %c8 step %c1 iter_args
// AVX2: return
mithril.model @Attention(data %q: tensor<2x4x64x32xf32>, data %kt: tensor<2x4x32x64xf32>, data %v: tensor<2x4x64x32xf32>) -> (y: tensor<2x4x64x32xf32>) {
  %s = mithril.matmul %q, %kt : (tensor<2x4x64x32xf32>, tensor<2x4x32x64xf32>) -> tensor<2x4x64x64xf32>
  %c = mithril.constant dense<0.125> : tensor<1xf32>
  %t = mithril.multiply %s, %c : (tensor<2x4x64x64xf32>, tensor<1xf32>) -> tensor<2x4x64x64xf32>
  %p = mithril.softmax %t {axis = -1 : i64} : (tensor<2x4x64x64xf32>) -> tensor<2x4x64x64xf32>
  %y = mithril.matmul %p, %v : (tensor<2x4x64x64xf32>, tensor<2x4x64x32xf32>) -> tensor<2x4x64x32xf32>
  mithril.output %y : tensor<2x4x64x32xf32>
}

// -----

// The probabilities are an output too (as a training step keeps them for
// the backward pass): the products stay apart, the softmax in its own row
// blocks of the [2, 4, 64, 64] scores.
// CHECK-LABEL: func.func @AttentionProbabilities
// CHECK: scf.for %{{.*}} = %c0 to %c8 step %c1 iter_args(%{{.*}}) -> (tensor<8x64x64xf32>)
// CHECK: scf.for %{{.*}} = %c0 to %c2 step %c1 iter_args(%{{.*}}) -> (tensor<2x4x64x64xf32>)
// CHECK: math.exp
// CHECK: scf.for %{{.*}} = %c0 to %c8 step %c1 iter_args(%{{.*}}) -> (tensor<8x64x32xf32>)
// CHECK: return
mithril.model @AttentionProbabilities(data %q: tensor<2x4x64x32xf32>, data %kt: tensor<2x4x32x64xf32>, data %v: tensor<2x4x64x32xf32>) -> (y: tensor<2x4x64x32xf32>, p: tensor<2x4x64x64xf32>) {
  %s = mithril.matmul %q, %kt : (tensor<2x4x64x32xf32>, tensor<2x4x32x64xf32>) -> tensor<2x4x64x64xf32>
  %c = mithril.constant dense<0.125> : tensor<1xf32>
  %t = mithril.multiply %s, %c : (tensor<2x4x64x64xf32>, tensor<1xf32>) -> tensor<2x4x64x64xf32>
  %p = mithril.softmax %t {axis = -1 : i64} : (tensor<2x4x64x64xf32>) -> tensor<2x4x64x64xf32>
  %y = mithril.matmul %p, %v : (tensor<2x4x64x64xf32>, tensor<2x4x64x32xf32>) -> tensor<2x4x64x32xf32>
  mithril.output %y, %p : tensor<2x4x64x32xf32>, tensor<2x4x64x64xf32>
}

// -----

// One head per batch entry, [batch, T, d]: the chain over the products'
// own [batch, T, T], no reshapes between them.
// CHECK-LABEL: func.func @AttentionOneHead
// CHECK: scf.for %{{.*}} = %c0 to %c4 step %c1 iter_args
// CHECK-NEXT: scf.for %{{.*}} = %c0 to %c64 step %c8 iter_args
// CHECK: math.exp
// CHECK: scf.for %{{.*}} = %c0 to %c64 step %c1 iter_args(%{{.*}}) -> (vector<8x32xf32>)
// CHECK-NOT: scf.for
// CHECK: return
mithril.model @AttentionOneHead(data %q: tensor<4x64x32xf32>, data %kt: tensor<4x32x64xf32>, data %v: tensor<4x64x32xf32>) -> (y: tensor<4x64x32xf32>) {
  %s = mithril.matmul %q, %kt : (tensor<4x64x32xf32>, tensor<4x32x64xf32>) -> tensor<4x64x64xf32>
  %p = mithril.softmax %s {axis = -1 : i64} : (tensor<4x64x64xf32>) -> tensor<4x64x64xf32>
  %y = mithril.matmul %p, %v : (tensor<4x64x64xf32>, tensor<4x64x32xf32>) -> tensor<4x64x32xf32>
  mithril.output %y : tensor<4x64x32xf32>
}
