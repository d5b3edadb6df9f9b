// RUN: mithril-opt %s --mithril-split-masked-writes | FileCheck %s
// RUN: mithril-opt %s --mithril-cpu-pipeline="target-cpu=znver2 stop-after=loops" | FileCheck %s --check-prefix=AVX2
// RUN: mithril-opt %s --mithril-cpu-pipeline="target-cpu=znver4 stop-after=loops" | FileCheck %s --check-prefix=AVX512

// 7 lanes of 8 written through a constant mask become writes of 4, 2 and 1
// lanes at offsets 0, 4 and 6, none masked: AVX2's masked store
// (vmaskmovps) is slow on AMD cores.
// CHECK-LABEL: func.func @prefix7
// CHECK: %[[FOUR:.+]] = vector.extract_strided_slice %[[V:.+]] {offsets = [0], sizes = [4], strides = [1]} : vector<8xf32> to vector<4xf32>
// CHECK: vector.transfer_write %[[FOUR]], %arg0[%arg2, %arg3] {in_bounds = [true]} : vector<4xf32>, memref<4x7xf32>
// CHECK: %[[TWO:.+]] = vector.extract_strided_slice %[[V]] {offsets = [4], sizes = [2], strides = [1]}
// CHECK: %[[C4:.+]] = arith.constant 4 : index
// CHECK: %[[J4:.+]] = arith.addi %arg3, %[[C4]] : index
// CHECK: vector.transfer_write %[[TWO]], %arg0[%arg2, %[[J4]]] {in_bounds = [true]} : vector<2xf32>, memref<4x7xf32>
// CHECK: %[[ONE:.+]] = vector.extract_strided_slice %[[V]] {offsets = [6], sizes = [1], strides = [1]}
// CHECK: %[[C6:.+]] = arith.constant 6 : index
// CHECK: %[[J6:.+]] = arith.addi %arg3, %[[C6]] : index
// CHECK: vector.transfer_write %[[ONE]], %arg0[%arg2, %[[J6]]] {in_bounds = [true]} : vector<1xf32>, memref<4x7xf32>
// CHECK-NOT: vector.transfer_write
// CHECK: return
func.func @prefix7(%m: memref<4x7xf32>, %v: vector<8xf32>, %i: index, %j: index) {
  %mask = vector.constant_mask [7] : vector<8xi1>
  vector.transfer_write %v, %m[%i, %j], %mask {in_bounds = [true]} : vector<8xf32>, memref<4x7xf32>
  return
}

// A row of a 2-D constant mask (as unrolling the transfers extracts it)
// and a constant of i1 are prefixes too; a row past the mask's rows sets no
// lane, and is left to the masked write.
// CHECK-LABEL: func.func @rows_of_masks
// CHECK: vector.transfer_write {{.*}} : vector<2xf32>, memref<4x7xf32>
// CHECK: vector.transfer_write {{.*}} : vector<1xf32>, memref<4x7xf32>
// CHECK: vector.transfer_write {{.*}} : vector<4xf32>, memref<4x7xf32>
// CHECK: vector.transfer_write %{{.+}}, %{{.+}}[%{{.+}}, %{{.+}}], %{{.+}} {in_bounds = [true]} : vector<8xf32>, memref<4x7xf32>
// CHECK: return
func.func @rows_of_masks(%m: memref<4x7xf32>, %v: vector<8xf32>, %i: index) {
  %rows = vector.constant_mask [1, 3] : vector<2x8xi1>
  %first = vector.extract %rows[0] : vector<8xi1> from vector<2x8xi1>
  vector.transfer_write %v, %m[%i, %i], %first {in_bounds = [true]} : vector<8xf32>, memref<4x7xf32>
  %bits = arith.constant dense<[true, true, true, true, false, false, false, false]> : vector<8xi1>
  vector.transfer_write %v, %m[%i, %i], %bits {in_bounds = [true]} : vector<8xf32>, memref<4x7xf32>
  %second = vector.extract %rows[1] : vector<8xi1> from vector<2x8xi1>
  vector.transfer_write %v, %m[%i, %i], %second {in_bounds = [true]} : vector<8xf32>, memref<4x7xf32>
  return
}

// Left alone: a mask not known at compile time, a strided innermost
// dimension, and a write that may go out of bounds.
// CHECK-LABEL: func.func @kept
// CHECK-COUNT-3: vector.transfer_write %arg2, %{{.+}}[%c0], %{{[0-9]+}}
// CHECK-NOT: vector.extract_strided_slice
func.func @kept(%m: memref<7xf32>, %s: memref<7xf32, strided<[2]>>, %v: vector<8xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %dynamic = vector.create_mask %n : vector<8xi1>
  vector.transfer_write %v, %m[%c0], %dynamic {in_bounds = [true]} : vector<8xf32>, memref<7xf32>
  %mask = vector.constant_mask [7] : vector<8xi1>
  vector.transfer_write %v, %s[%c0], %mask {in_bounds = [true]} : vector<8xf32>, memref<7xf32, strided<[2]>>
  vector.transfer_write %v, %m[%c0], %mask {in_bounds = [false]} : vector<8xf32>, memref<7xf32>
  return
}

// In the CPU pipeline (the functions above go through its loops stage too):
// pieces for targets without 512-bit registers, the masked write (a k
// register) with AVX-512.
// AVX2-LABEL: func.func @prefix7
// AVX2-NOT: vector.transfer_write %{{.+}}, %{{.+}}[%{{.+}}, %{{.+}}], %{{.+}}
// AVX2: vector.transfer_write {{.*}} : vector<4xf32>, memref<4x7xf32>
// AVX2: return
// AVX512-LABEL: func.func @prefix7
// AVX512: vector.transfer_write %arg1, %arg0[%arg2, %arg3], %{{.+}} {in_bounds = [true]} : vector<8xf32>, memref<4x7xf32>
// AVX512-NOT: vector<4xf32>
// AVX512: return
