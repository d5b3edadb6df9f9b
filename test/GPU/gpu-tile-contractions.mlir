// Contractions on buffers become shared-memory tiled GEMMs in scf.forall
// loops mapped to GPU blocks and threads.
// RUN: mithril-opt %s --split-input-file --mithril-gpu-tile-contractions --canonicalize --cse | FileCheck %s
// RUN: mithril-opt %s --split-input-file --mithril-gpu-tile-contractions="workgroup-memory=false tile-size=8" --canonicalize | FileCheck %s --check-prefix=HOST
// RUN: mithril-opt %s --split-input-file --mithril-gpu-tile-contractions="thread-tile=2 min-blocks=1" --canonicalize --cse | FileCheck %s --check-prefix=MICRO
// RUN: not mithril-opt %s --mithril-gpu-tile-contractions="tile-size=64" 2>&1 | FileCheck %s --check-prefix=BADTILE
// RUN: not mithril-opt %s --mithril-gpu-tile-contractions="thread-tile=9" 2>&1 | FileCheck %s --check-prefix=BADTHREADTILE
// RUN: mithril-opt %s --split-input-file --mithril-gpu-tile-contractions="tile-size=32 thread-tile=8 min-blocks=1" | FileCheck %s --check-prefix=SHARED

// A 20x18 result in 16x16 tiles, 37 deep: 2x2 blocks, three 16-deep steps
// and zero padding at the edges. So few blocks keep one element per thread.
// CHECK-LABEL: func.func @matmul(
// CHECK-SAME: %[[A:.*]]: memref<20x37xf32>, %[[B:.*]]: memref<37x18xf32>, %[[C:.*]]: memref<20x18xf32>
// CHECK-DAG: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: scf.forall (%{{.*}}, %[[BY:.*]], %[[BX:.*]]) in (1, 2, 2)
// CHECK: %[[LHS:.*]] = memref.alloc() : memref<16x16xf32, #gpu.address_space<workgroup>>
// CHECK: %[[RHS:.*]] = memref.alloc() : memref<16x16xf32, #gpu.address_space<workgroup>>
// The sums, indexed by the thread first.
// CHECK: %[[ACC:.*]] = memref.alloc() : memref<16x16x1x1xf32, #gpu.address_space<workgroup>>
// The sums start from the output (linalg.matmul adds to it).
// CHECK: scf.forall (%[[TY:.*]], %[[TX:.*]]) in (16, 16)
// CHECK: memref.load %[[C]]
// CHECK: memref.store %{{.*}}, %[[ACC]][%[[TY]], %[[TX]], %c0, %c0]
// CHECK: {mapping = [#gpu.thread<y>, #gpu.thread<x>]}
// CHECK: scf.for %[[K:.*]] = %c0 to %c37 step %c16
// CHECK: scf.forall
// CHECK: arith.cmpi ult, %{{.*}}, %c37
// CHECK: scf.if
// CHECK: memref.load %[[A]]
// CHECK: } else {
// CHECK: scf.yield %[[ZERO]]
// CHECK: memref.store %{{.*}}, %[[LHS]]
// CHECK: memref.load %[[B]]
// CHECK: memref.store %{{.*}}, %[[RHS]]
// CHECK: scf.forall
// CHECK: scf.for {{.*}} = %c0 to %c16 step %c1 iter_args
// CHECK: memref.load %[[LHS]]
// CHECK: memref.load %[[RHS]]
// CHECK: arith.mulf {{.*}} fastmath<contract>
// CHECK: arith.addf {{.*}} fastmath<contract>
// CHECK: scf.forall
// CHECK: scf.if
// CHECK: memref.load %[[ACC]]
// CHECK: memref.store %{{.*}}, %[[C]]
// CHECK: memref.dealloc %[[LHS]]
// CHECK: {mapping = [#gpu.block<z>, #gpu.block<y>, #gpu.block<x>]}
// CHECK-NOT: linalg.matmul

// Allowed a single block, each thread computes 2x2 elements, 16 apart: the
// block covers 32x32 and stages a 32x16 and a 16x32 tile per step.
// MICRO-LABEL: func.func @matmul(
// MICRO: scf.forall (%{{.*}}, %{{.*}}, %{{.*}}) in (1, 1, 1)
// MICRO: %[[LHS:.*]] = memref.alloc() : memref<32x16xf32, #gpu.address_space<workgroup>>
// MICRO: %[[RHS:.*]] = memref.alloc() : memref<16x32xf32, #gpu.address_space<workgroup>>
// MICRO: memref.alloc() : memref<16x16x2x2xf32, #gpu.address_space<workgroup>>
// MICRO: scf.for
// MICRO: scf.forall (%[[TY:.*]], %[[TX:.*]]) in (16, 16)
// MICRO: %[[TY16:.*]] = arith.addi %[[TY]], %c16
// MICRO: memref.store %{{.*}}, %[[LHS]][%[[TY16]], %[[TX]]]
// MICRO: %[[TX16:.*]] = arith.addi %[[TX]], %c16
// MICRO: memref.store %{{.*}}, %[[RHS]][%[[TY]], %[[TX16]]]
// MICRO: scf.for {{.*}} iter_args(%{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}) -> (f32, f32, f32, f32)
// MICRO-COUNT-4: arith.mulf

// HOST-LABEL: func.func @matmul(
// HOST: scf.forall (%{{.*}}, %{{.*}}, %{{.*}}) in (1, 3, 3)
// HOST: memref.alloc() : memref<8x8xf32>
// HOST: scf.for %{{.*}} = %c0 to %c37 step %c8

// BADTILE: error: mithril-gpu-tile-contractions: tile-size 64 gives 4096 threads per block; a GPU block holds 1 to 1024
// BADTHREADTILE: error: mithril-gpu-tile-contractions: thread-tile 9 is not 1 to 8

// Tiles that would pass the 48 KiB of static shared memory shrink: 8 x 8
// elements per thread of 32 x 32 threads would stage (8 + 8) x 32 x 32 x 4
// bytes, 4 x 8 stage 48 KiB.
// SHARED-LABEL: func.func @large(
// SHARED: memref.alloc() : memref<128x32xf32, #gpu.address_space<workgroup>>
// SHARED: memref.alloc() : memref<32x256xf32, #gpu.address_space<workgroup>>
// SHARED: memref.alloc() : memref<32x32x4x8xf32, #gpu.address_space<workgroup>>
func.func @matmul(%a: memref<20x37xf32>, %b: memref<37x18xf32>, %c: memref<20x18xf32>) {
  linalg.matmul ins(%a, %b : memref<20x37xf32>, memref<37x18xf32>) outs(%c : memref<20x18xf32>)
  return
}

// -----

// A flat-row convolution, out[n, f, p] += in[n, c, p + 10 kh + kw] * w[f, c, kh, kw]:
// an implicit GEMM whose rows are the filters f (only the weight reads them),
// whose columns are the images and positions (n, p) linearized (only the
// input reads them), and whose 27-deep k linearizes (c, kh, kw). The input
// is read through its own indexing map, straight from the image.
// CHECK-LABEL: func.func @conv_flat(
// CHECK-SAME: %[[IN:.*]]: memref<2x3x120xf32>, %[[W:.*]]: memref<4x3x3x3xf32>
// CHECK: scf.forall (%{{.*}}, %{{.*}}, %{{.*}}) in (1, 1, 10)
// CHECK: scf.for %{{.*}} = %c0 to %c27 step %c16
// CHECK: arith.remui %{{.*}}, %c3
// CHECK: arith.divui %{{.*}}, %c3
// CHECK: memref.load %[[W]]
// CHECK: %[[P:.*]] = arith.remui %{{.*}}, %c80
// CHECK: %[[N:.*]] = arith.divui %{{.*}}, %c80
// CHECK: %[[COL:.*]] = affine.apply #{{.*}}(%[[P]], %{{.*}}, %{{.*}})
// CHECK: memref.load %[[IN]][%[[N]], %{{.*}}, %[[COL]]]
// CHECK-NOT: linalg.generic
#in = affine_map<(n, f, p, c, kh, kw) -> (n, c, p + kh * 10 + kw)>
#w = affine_map<(n, f, p, c, kh, kw) -> (f, c, kh, kw)>
#out = affine_map<(n, f, p, c, kh, kw) -> (n, f, p)>
func.func @conv_flat(%in: memref<2x3x120xf32>, %w: memref<4x3x3x3xf32>, %out: memref<2x4x80xf32>) {
  linalg.generic {indexing_maps = [#in, #w, #out],
                  iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
      ins(%in, %w : memref<2x3x120xf32>, memref<4x3x3x3xf32>) outs(%out : memref<2x4x80xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %m = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// Left alone: reductions that are no multiply-add, dynamic shapes, and a
// product whose inputs both read the output's columns.
// CHECK-LABEL: func.func @not_gemms(
// CHECK-NOT: scf.forall
// CHECK: linalg.generic
// CHECK: arith.maximumf
// CHECK: linalg.matmul
// CHECK: linalg.generic
// CHECK-NOT: scf.forall
#a = affine_map<(i, j, k) -> (i, k)>
#b = affine_map<(i, j, k) -> (k, j)>
#c = affine_map<(i, j, k) -> (i, j)>
#both = affine_map<(i, j, k) -> (j, k)>
func.func @not_gemms(%a: memref<8x8xf32>, %b: memref<8x8xf32>, %c: memref<8x8xf32>,
                     %d: memref<?x8xf32>, %e: memref<?x8xf32>) {
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : memref<8x8xf32>, memref<8x8xf32>) outs(%c : memref<8x8xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %m = arith.mulf %x, %y : f32
    %s = arith.maximumf %acc, %m : f32
    linalg.yield %s : f32
  }
  linalg.matmul ins(%d, %b : memref<?x8xf32>, memref<8x8xf32>) outs(%e : memref<?x8xf32>)
  linalg.generic {indexing_maps = [#both, #both, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : memref<8x8xf32>, memref<8x8xf32>) outs(%c : memref<8x8xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %m = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// CHECK-LABEL: func.func @large(
// CHECK: scf.forall (%{{.*}}, %{{.*}}, %{{.*}}) in (1, 16, 16)
// CHECK: memref.alloc() : memref<16x16x4x4xf32, #gpu.address_space<workgroup>>
func.func @large(%a: memref<1024x1024xf32>, %b: memref<1024x1024xf32>, %c: memref<1024x1024xf32>) {
  linalg.matmul ins(%a, %b : memref<1024x1024xf32>, memref<1024x1024xf32>) outs(%c : memref<1024x1024xf32>)
  return
}
