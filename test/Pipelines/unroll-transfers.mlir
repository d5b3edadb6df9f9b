// RUN: mithril-opt %s --mithril-unroll-transfers | FileCheck %s

// A 2-d transfer becomes one 1-d transfer a row, with no stack buffer.
// CHECK-LABEL: func.func @rows
// CHECK-NOT: memref.alloca
// CHECK-COUNT-2: vector.transfer_read %{{.+}} : memref<4x8xf32>, vector<8xf32>
// CHECK-COUNT-2: vector.transfer_write %{{.+}} : vector<8xf32>, memref<4x8xf32>
// CHECK-NOT: vector<2x8xf32>, memref
func.func @rows(%m: memref<4x8xf32>, %i: index) {
  %pad = arith.constant 0.0 : f32
  %v = vector.transfer_read %m[%i, %i], %pad {in_bounds = [true, true]} : memref<4x8xf32>, vector<2x8xf32>
  vector.transfer_write %v, %m[%i, %i] {in_bounds = [true, true]} : vector<2x8xf32>, memref<4x8xf32>
  return
}

// A transposing read: its permutation map is lowered first (a read in the
// memory's order and a vector transpose), then unrolled.
// CHECK-LABEL: func.func @transposed
// CHECK-NOT: permutation_map
// CHECK-COUNT-2: vector.transfer_read %{{.+}} : memref<4x8xf32>, vector<8xf32>
// CHECK: vector.transpose %{{.+}}, [1, 0] : vector<2x8xf32> to vector<8x2xf32>
func.func @transposed(%m: memref<4x8xf32>) -> vector<8x2xf32> {
  %c0 = arith.constant 0 : index
  %pad = arith.constant 0.0 : f32
  %v = vector.transfer_read %m[%c0, %c0], %pad {in_bounds = [true, true], permutation_map = affine_map<(d0, d1) -> (d1, d0)>} : memref<4x8xf32>, vector<8x2xf32>
  return %v : vector<8x2xf32>
}

// Other ops are left as they are (upstream's convert-vector-to-scf, a greedy
// rewrite of the whole function, would have folded the add of zero).
// CHECK-LABEL: func.func @others
// CHECK: arith.addf
func.func @others(%a: vector<8xf32>) -> vector<8xf32> {
  %zero = arith.constant dense<0.0> : vector<8xf32>
  %same = arith.addf %a, %zero : vector<8xf32>
  return %same : vector<8xf32>
}
