// Products of bf16 or f16 operands into float32 sums become warp tiles of
// mma.sync m16n8k16 (tensor cores); on the host (workgroup-memory=false) the
// lanes' fragments go to memory and loops emulate each warp's mma.sync.
// RUN: mithril-opt %s --split-input-file --mithril-gpu-tile-contractions --canonicalize --cse | FileCheck %s
// RUN: mithril-opt %s --split-input-file --mithril-gpu-tile-contractions="workgroup-memory=false" --canonicalize --cse | FileCheck %s --check-prefix=HOST
// RUN: mithril-opt %s --split-input-file --mithril-gpu-tile-contractions="tensor-cores=false" --canonicalize --cse | FileCheck %s --check-prefix=FMA

// A 20x70 result, 37 deep: one row of two 64x64 blocks, two 32-deep steps.
// CHECK-LABEL: func.func @bf16_matmul(
// CHECK-SAME: %[[A:.*]]: memref<20x37xbf16>, %[[B:.*]]: memref<37x70xbf16>, %[[C:.*]]: memref<20x70xf32>
// CHECK: scf.forall (%{{.*}}, %{{.*}}, %{{.*}}) in (1, 1, 2)
// Slices of A as [m][k] and B as [n][k], rows padded to 40.
// CHECK: %[[LHS:.*]] = memref.alloc() : memref<64x40xbf16, #gpu.address_space<workgroup>>
// CHECK: %[[RHS:.*]] = memref.alloc() : memref<64x40xbf16, #gpu.address_space<workgroup>>
// Each thread's 2x4 sums of 4 values, indexed by the thread first.
// CHECK: %[[SUMS:.*]] = memref.alloc() : memref<128x2x4x4xf32, #gpu.address_space<workgroup>>
// CHECK: scf.forall (%[[T:.*]]) in (128)
// CHECK: memref.load %[[C]]
// CHECK: memref.store %{{.*}}, %[[SUMS]][%[[T]], %c0, %c0, %c0]
// CHECK: {mapping = [#gpu.thread<x>]}
// CHECK: scf.for %[[K:.*]] = %c0 to %c37 step %c32
// CHECK: scf.forall (%{{.*}}) in (128)
// CHECK: memref.load %[[A]]
// CHECK: memref.store %{{.*}}, %[[LHS]]
// CHECK: memref.load %[[B]]
// CHECK: memref.store %{{.*}}, %[[RHS]]
// CHECK: scf.forall (%{{.*}}) in (128)
// CHECK: vector.load %[[LHS]]{{.*}} vector<2xbf16>
// CHECK: vector.load %[[RHS]]{{.*}} vector<2xbf16>
// Two 16-deep products for each of the warp's 2x4 tiles.
// CHECK-COUNT-16: nvgpu.mma.sync({{.*}}) {mmaShape = [16, 8, 16]} : (vector<4x2xbf16>, vector<2x2xbf16>, vector<2x2xf32>) -> vector<2x2xf32>
// CHECK-NOT: nvgpu.mma.sync
// Only sums inside C are stored.
// CHECK: scf.forall (%{{.*}}) in (128)
// CHECK: scf.if
// CHECK: memref.store %{{.*}}, %[[C]]

// HOST-LABEL: func.func @bf16_matmul(
// HOST-NOT: nvgpu
// HOST: memref.alloc() : memref<64x40xbf16>
// HOST: %[[SUMS:.*]] = memref.alloc() : memref<128x2x4x4xf32>
// The lanes' fragments: A's 8 values of each of 2 tiles, B's 4 of each of 4.
// HOST: %[[FA:.*]] = memref.alloc() : memref<128x2x8xbf16>
// HOST: %[[FB:.*]] = memref.alloc() : memref<128x4x4xbf16>
// HOST: scf.for
// HOST: scf.forall (%{{.*}}) in (128)
// HOST: scf.forall (%{{.*}}) in (128)
// HOST: memref.store %{{.*}}, %[[FA]]
// HOST: memref.store %{{.*}}, %[[FB]]
// Each of the 4 warps' 8 products, element by element of the 16x8 tile.
// HOST: scf.forall (%[[W:.*]]) in (4)
// HOST: scf.for %{{.*}} = %c0 to %c16 step %c1
// HOST: scf.for %{{.*}} = %c0 to %c8 step %c1
// HOST: memref.load %[[SUMS]]
// HOST: scf.for %{{.*}} = %c0 to %c16 step %c1 iter_args
// HOST: memref.load %[[FA]]
// HOST: memref.load %[[FB]]
// HOST: arith.extf
// HOST: arith.mulf
// HOST: arith.addf
// HOST: memref.store %{{.*}}, %[[SUMS]]

// FMA-LABEL: func.func @bf16_matmul(
// FMA-NOT: nvgpu
// FMA: memref.alloc() : memref<16x16x1x1xf32, #gpu.address_space<workgroup>>
func.func @bf16_matmul(%a: memref<20x37xbf16>, %b: memref<37x70xbf16>, %c: memref<20x70xf32>) {
  linalg.matmul ins(%a, %b : memref<20x37xbf16>, memref<37x70xbf16>) outs(%c : memref<20x70xf32>)
  return
}

// -----

// f16 alike; a product into f16 sums, or of f32 operands, keeps FMA tiles.
// CHECK-LABEL: func.func @f16_and_others(
// CHECK-COUNT-16: nvgpu.mma.sync({{.*}}) {mmaShape = [16, 8, 16]} : (vector<4x2xf16>, vector<2x2xf16>, vector<2x2xf32>) -> vector<2x2xf32>
// CHECK-NOT: nvgpu.mma.sync
// CHECK: return
func.func @f16_and_others(%a: memref<32x32xf16>, %b: memref<32x32xf16>, %c: memref<32x32xf32>,
                          %h: memref<32x32xf16>, %fa: memref<32x32xf32>, %fb: memref<32x32xf32>) {
  linalg.matmul ins(%a, %b : memref<32x32xf16>, memref<32x32xf16>) outs(%c : memref<32x32xf32>)
  linalg.matmul ins(%a, %b : memref<32x32xf16>, memref<32x32xf16>) outs(%h : memref<32x32xf16>)
  linalg.matmul ins(%fa, %fb : memref<32x32xf32>, memref<32x32xf32>) outs(%c : memref<32x32xf32>)
  return
}
