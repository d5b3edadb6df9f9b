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

// In the CPU pipeline, the MLP 784-512-512-10 at batch 16: each layer's
// matrix-vector tiles prefetch their next weight rows, in each part of the
// reduction (Skylake-SP's 32 KiB L1: 784 = 17 + 16 + 16 steps, 512 = 16 + 16).
// RUN: mithril-opt %S/Inputs/mlp-16.mlir --mithril-cpu-pipeline="target-cpu=skylake-avx512 stop-after=loops" | FileCheck %s --check-prefix=MLP
// MLP: memref.prefetch {{.+}}, read, locality<3>, data : memref<512x17x16xf32, strided<[784, 16, 1]>>
// MLP: memref.prefetch {{.+}}, read, locality<3>, data : memref<512x16x16xf32, strided<[784, 16, 1], offset: 272>>
// MLP: memref.prefetch {{.+}}, read, locality<3>, data : memref<512x16x16xf32, strided<[784, 16, 1], offset: 528>>
// MLP: memref.prefetch {{.+}}, read, locality<3>, data : memref<512x16x16xf32, strided<[512, 16, 1]>>
// MLP: memref.prefetch {{.+}}, read, locality<3>, data : memref<10x16x16xf32, strided<[512, 16, 1]>>
