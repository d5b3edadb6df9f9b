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

// A read along a dimension that is not the innermost (every other element of
// a row, as Winograd's parity planes read them) is one load an element, not a
// loop inserting each at a dynamic position (which LLVM compiles through a
// stack slot).
// CHECK-LABEL: func.func @strided_read
// CHECK-NOT: scf.for
// CHECK-COUNT-29: memref.load %{{.+}} : memref<29x2xf32>
// CHECK: vector.from_elements {{.+}} : vector<29xf32>
func.func @strided_read(%m: memref<29x2xf32>, %j: index) -> vector<29xf32> {
  %c0 = arith.constant 0 : index
  %pad = arith.constant 0.0 : f32
  %v = vector.transfer_read %m[%c0, %j], %pad {in_bounds = [true], permutation_map = affine_map<(d0, d1) -> (d0)>} : memref<29x2xf32>, vector<29xf32>
  return %v : vector<29xf32>
}

// Up to 8 elements (a register tile's column of A), upstream's loop stays:
// LLVM unrolls it fully into the same loads.
// CHECK-LABEL: func.func @short_strided_read
// CHECK: scf.for
func.func @short_strided_read(%m: memref<4x2xf32>, %i: index) -> vector<3xf32> {
  %c0 = arith.constant 0 : index
  %pad = arith.constant 0.0 : f32
  %v = vector.transfer_read %m[%i, %c0], %pad {in_bounds = [true], permutation_map = affine_map<(d0, d1) -> (d0)>} : memref<4x2xf32>, vector<3xf32>
  return %v : vector<3xf32>
}

// A row of every other element (an innermost stride of 2) under a constant
// mask, as Winograd's parity planes read rows on AVX2: the masked elements
// are loaded, the others are the padding.
// CHECK-LABEL: func.func @strided_row_masked
// CHECK-NOT: scf.for
// CHECK: %[[PAD:.+]] = arith.constant 0.0
// CHECK-COUNT-15: memref.load %{{.+}} : memref<15xf32, strided<[2], offset: ?>>
// CHECK: vector.from_elements {{.+}}, %[[PAD]] : vector<16xf32>
func.func @strided_row_masked(%m: memref<15xf32, strided<[2], offset: ?>>) -> vector<16xf32> {
  %c0 = arith.constant 0 : index
  %pad = arith.constant 0.0 : f32
  %mask = vector.constant_mask [15] : vector<16xi1>
  %v = vector.transfer_read %m[%c0], %pad, %mask {in_bounds = [true]} : memref<15xf32, strided<[2], offset: ?>>, vector<16xf32>
  return %v : vector<16xf32>
}

// A write along one: upstream's permutation lowering makes it one write an
// element already.
// CHECK-LABEL: func.func @strided_write
// CHECK-NOT: scf.for
// CHECK-COUNT-3: vector.transfer_write %{{.+}} : vector<1xf32>, memref<4x2xf32>
func.func @strided_write(%m: memref<4x2xf32>, %v: vector<3xf32>, %i: index) {
  %c1 = arith.constant 1 : index
  vector.transfer_write %v, %m[%i, %c1] {in_bounds = [true], permutation_map = affine_map<(d0, d1) -> (d0)>} : vector<3xf32>, memref<4x2xf32>
  return
}

// Out of bounds, the read keeps upstream's lowering (a loop that checks each
// element's index).
// CHECK-LABEL: func.func @strided_out_of_bounds
// CHECK: scf.for
func.func @strided_out_of_bounds(%m: memref<29x2xf32>, %i: index) -> vector<29xf32> {
  %c0 = arith.constant 0 : index
  %pad = arith.constant 0.0 : f32
  %v = vector.transfer_read %m[%i, %c0], %pad {in_bounds = [false], permutation_map = affine_map<(d0, d1) -> (d0)>} : memref<29x2xf32>, vector<29xf32>
  return %v : vector<29xf32>
}
