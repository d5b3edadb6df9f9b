// RUN: mithril-opt %s --mithril-cpu-schedule=vector-bits=512 | FileCheck %s
// RUN: mithril-opt %s --mithril-cpu-schedule=vector-bits=256 | FileCheck %s --check-prefix=AVX2

// An elementwise op is tiled into 8 x 32 register tiles and vectorized.
// CHECK-LABEL: func.func @relu
// CHECK: scf.for %[[I:.*]] = %{{.*}} to %{{.*}} step %c8
// CHECK:   scf.for %[[J:.*]] = %{{.*}} to %{{.*}} step %c32
// CHECK:     vector.transfer_read %arg0[%[[I]], %[[J]]]{{.*}} : tensor<16x64xf32>, vector<8x32xf32>
// CHECK:     arith.maximumf %{{.*}} : vector<8x32xf32>
// CHECK:     vector.transfer_write
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @relu(%x: tensor<16x64xf32>) -> tensor<16x64xf32> {
  %cst = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<16x64xf32>
  %0 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<16x64xf32>) outs(%e : tensor<16x64xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.maximumf %a, %cst : f32
    linalg.yield %r : f32
  } -> tensor<16x64xf32>
  return %0 : tensor<16x64xf32>
}

// An op with a loop of size 0 computes nothing: a matmul with no rows gives its
// (empty) init, one with no reduction steps its zero fill. Tiling such ops
// divided by the zero range and crashed.
// CHECK-LABEL: func.func @no_rows
// CHECK-NOT: linalg.matmul
// CHECK-NOT: scf.for
// CHECK: return
func.func @no_rows(%a: tensor<0x4xf32>, %b: tensor<4x3xf32>) -> tensor<0x3xf32> {
  %cst = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<0x3xf32>
  %z = linalg.fill ins(%cst : f32) outs(%e : tensor<0x3xf32>) -> tensor<0x3xf32>
  %0 = linalg.matmul ins(%a, %b : tensor<0x4xf32>, tensor<4x3xf32>) outs(%z : tensor<0x3xf32>) -> tensor<0x3xf32>
  return %0 : tensor<0x3xf32>
}

// CHECK-LABEL: func.func @no_steps
// CHECK: %[[ZERO:.*]] = arith.constant dense<0.000000e+00> : vector<3x4xf32>
// CHECK-NOT: linalg.matmul
// CHECK: %[[Z:.*]] = vector.transfer_write %[[ZERO]]
// CHECK-NEXT: return %[[Z]]
func.func @no_steps(%a: tensor<3x0xf32>, %b: tensor<0x4xf32>) -> tensor<3x4xf32> {
  %cst = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<3x4xf32>
  %z = linalg.fill ins(%cst : f32) outs(%e : tensor<3x4xf32>) -> tensor<3x4xf32>
  %0 = linalg.matmul ins(%a, %b : tensor<3x0xf32>, tensor<0x4xf32>) outs(%z : tensor<3x4xf32>) -> tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
}

// A row reduction over a few elements (a softmax's row maximum over 10
// classes) takes whole rows, at most one tile's 32 columns of elements: 2
// rows of 10 (a divisor of 64), not one vector of all 64 x 10 (its
// transpose was 640 element moves), nor 8 rows (the code of 8 rows for the
// same instructions per element).
// CHECK-LABEL: func.func @row_max
// CHECK: scf.for %{{.*}} = %c0 to %c64 step %c2
// CHECK:   vector.transfer_read {{.*}} : tensor<64x10xf32>, vector<2x10xf32>
// CHECK:   vector.multi_reduction <maximumf>, {{.*}} [1] : vector<2x10xf32> to vector<2xf32>
// CHECK-NOT: vector<64x10xf32>
#rows = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func @row_max(%x: tensor<64x10xf32>, %init: tensor<64xf32>) -> tensor<64xf32> {
  %0 = linalg.generic {indexing_maps = [#rows, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<64x10xf32>) outs(%init : tensor<64xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.maximumf %in, %out : f32
    linalg.yield %m : f32
  } -> tensor<64xf32>
  return %0 : tensor<64xf32>
}

// A batch matmul is tiled as a product block is: 8 x 32 register tiles of one
// batch element, then its reduction one step at a time with the accumulator
// in registers (from zeros: the fill is fused into the tiles), each step an
// outer product of a column of A and a row of B. In one level, the
// accumulator went through memory at every step, and the step's right
// operand was extracted element by element.
// CHECK-LABEL: func.func @batch_matmul
// CHECK-DAG: %[[ZERO:.*]] = arith.constant dense<0.000000e+00> : vector<8x32xf32>
// CHECK-NOT: linalg.fill
// CHECK: scf.for %[[B:.*]] = %c0 to %c4 step %c1
// CHECK: scf.for %[[M:.*]] = %c0 to %c48 step %c8
// CHECK: scf.for %[[N:.*]] = %c0 to %c64 step %c32
// CHECK: scf.for %[[K:.*]] = %c0 to %c16 step %c1 iter_args(%[[ACC:.*]] = %[[ZERO]]) -> (vector<8x32xf32>)
// CHECK-NOT: vector.extract
// CHECK: vector.transfer_read %arg1[%[[B]], %[[K]], %[[N]]]{{.*}} : tensor<4x16x64xf32>, vector<32xf32>
// CHECK: %[[PRODUCT:.*]] = arith.mulf {{.*}} : vector<8x32xf32>
// CHECK: arith.addf %[[ACC]], %[[PRODUCT]] : vector<8x32xf32>
// CHECK: vector.transfer_write {{.*}} : vector<8x32xf32>, tensor<1x8x32xf32>
func.func @batch_matmul(%a: tensor<4x48x16xf32>, %b: tensor<4x16x64xf32>) -> tensor<4x48x64xf32> {
  %cst = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x48x64xf32>
  %z = linalg.fill ins(%cst : f32) outs(%e : tensor<4x48x64xf32>) -> tensor<4x48x64xf32>
  %0 = linalg.batch_matmul ins(%a, %b : tensor<4x48x16xf32>, tensor<4x16x64xf32>) outs(%z : tensor<4x48x64xf32>) -> tensor<4x48x64xf32>
  return %0 : tensor<4x48x64xf32>
}

// Rows and columns that no register tile divides (50 = 48 + 2 rows, 40 = 32
// + 8 columns) split off, per batch element, into parts of their own, each
// tiled for its sizes (the whole tiles starting from zeros in registers),
// rather than every tile shrunk to a divisor (2 rows x 8 columns).
// CHECK-LABEL: func.func @batch_matmul_remainders
// CHECK-NOT: linalg.fill
// CHECK: scf.for %{{.*}} = %c0 to %c4 step %c1
// CHECK: tensor.extract_slice %{{.*}}[0, 0, 0] [1, 48, 32] [1, 1, 1]
// CHECK: scf.for %{{.*}} = %c0 to %c48 step %c8
// CHECK: scf.for %{{.*}} = %c0 to %c16 step %c1 iter_args(%{{.*}}) -> (vector<8x32xf32>)
// CHECK: tensor.extract_slice %{{.*}}[0, 0, 32] [1, 48, 8] [1, 1, 1]
// CHECK: scf.for %{{.*}} = %c0 to %c48 step %c8
// CHECK: scf.for %{{.*}} = %c0 to %c16 step %c1 iter_args(%{{.*}}) -> (vector<8x8xf32>)
// CHECK: tensor.extract_slice %{{.*}}[0, 48, 0] [1, 2, 40] [1, 1, 1]
// CHECK: scf.for %{{.*}} = %c0 to %c16 step %c1 iter_args(%{{.*}}) -> (vector<2x32xf32>)
// CHECK: scf.for %{{.*}} = %c0 to %c16 step %c1 iter_args(%{{.*}}) -> (vector<2x8xf32>)
func.func @batch_matmul_remainders(%a: tensor<4x50x16xf32>, %b: tensor<4x16x40xf32>) -> tensor<4x50x40xf32> {
  %cst = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x50x40xf32>
  %z = linalg.fill ins(%cst : f32) outs(%e : tensor<4x50x40xf32>) -> tensor<4x50x40xf32>
  %0 = linalg.batch_matmul ins(%a, %b : tensor<4x50x16xf32>, tensor<4x16x40xf32>) outs(%z : tensor<4x50x40xf32>) -> tensor<4x50x40xf32>
  return %0 : tensor<4x50x40xf32>
}

// 60 columns: 32, then the 28 left over in one vector and one partial one
// (16 + 12), not in 28-lane rows that LLVM assembled through the stack
// (8 x 128 x 256 x 28 at 5 GFLOP/s).
// CHECK-LABEL: func.func @batch_matmul_column_rest
// CHECK: iter_args(%{{.*}}) -> (vector<8x32xf32>)
// CHECK-NOT: x28xf32>)
// CHECK: iter_args(%{{.*}}) -> (vector<8x16xf32>)
// CHECK: iter_args(%{{.*}}) -> (vector<8x12xf32>)
// CHECK-NOT: x28xf32>)
// CHECK: return
func.func @batch_matmul_column_rest(%a: tensor<4x48x16xf32>, %b: tensor<4x16x60xf32>) -> tensor<4x48x60xf32> {
  %cst = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x48x60xf32>
  %z = linalg.fill ins(%cst : f32) outs(%e : tensor<4x48x60xf32>) -> tensor<4x48x60xf32>
  %0 = linalg.batch_matmul ins(%a, %b : tensor<4x48x16xf32>, tensor<4x16x60xf32>) outs(%z : tensor<4x48x60xf32>) -> tensor<4x48x60xf32>
  return %0 : tensor<4x48x60xf32>
}

// An op of 16 operands or more (a Winograd transform's 16 inputs or outputs
// and some 40 additions per element) is tiled one row of one vector at a
// time: its body is unrolled once per register of the tile, and on 8 x 32
// tiles (16 registers) its values spilled (the bench CNN's transforms: 8,000
// fewer LLVM ops, 0.57 -> 0.27 s to compile, no slower).
// CHECK-LABEL: func.func @many_operands
// CHECK: scf.for %{{.*}} = %c0 to %c32 step %c1
// CHECK: scf.for %{{.*}} = %c0 to %c64 step %c16
// CHECK-COUNT-8: vector.transfer_read {{.*}} : tensor<32x64xf32>, vector<1x16xf32>
// CHECK-NOT: vector<8x32xf32>
func.func @many_operands(%a0: tensor<32x64xf32>, %a1: tensor<32x64xf32>, %a2: tensor<32x64xf32>, %a3: tensor<32x64xf32>, %a4: tensor<32x64xf32>, %a5: tensor<32x64xf32>, %a6: tensor<32x64xf32>, %a7: tensor<32x64xf32>) -> tensor<32x64xf32> {
  %e = tensor.empty() : tensor<32x64xf32>
  %r:8 = linalg.generic {indexing_maps = [#id, #id, #id, #id, #id, #id, #id, #id, #id, #id, #id, #id, #id, #id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a0, %a1, %a2, %a3, %a4, %a5, %a6, %a7 : tensor<32x64xf32>, tensor<32x64xf32>, tensor<32x64xf32>, tensor<32x64xf32>, tensor<32x64xf32>, tensor<32x64xf32>, tensor<32x64xf32>, tensor<32x64xf32>) outs(%e, %e, %e, %e, %e, %e, %e, %e : tensor<32x64xf32>, tensor<32x64xf32>, tensor<32x64xf32>, tensor<32x64xf32>, tensor<32x64xf32>, tensor<32x64xf32>, tensor<32x64xf32>, tensor<32x64xf32>) {
  ^bb0(%i0: f32, %i1: f32, %i2: f32, %i3: f32, %i4: f32, %i5: f32, %i6: f32, %i7: f32, %o0: f32, %o1: f32, %o2: f32, %o3: f32, %o4: f32, %o5: f32, %o6: f32, %o7: f32):
    %s0 = arith.addf %i0, %i1 : f32
    %s1 = arith.addf %i1, %i2 : f32
    %s2 = arith.addf %i2, %i3 : f32
    %s3 = arith.addf %i3, %i4 : f32
    %s4 = arith.addf %i4, %i5 : f32
    %s5 = arith.addf %i5, %i6 : f32
    %s6 = arith.addf %i6, %i7 : f32
    %s7 = arith.addf %i7, %i0 : f32
    linalg.yield %s0, %s1, %s2, %s3, %s4, %s5, %s6, %s7 : f32, f32, f32, f32, f32, f32, f32, f32
  } -> (tensor<32x64xf32>, tensor<32x64xf32>, tensor<32x64xf32>, tensor<32x64xf32>, tensor<32x64xf32>, tensor<32x64xf32>, tensor<32x64xf32>, tensor<32x64xf32>)
  %t = arith.addf %r#0, %r#7 : tensor<32x64xf32>
  return %t : tensor<32x64xf32>
}

// A 16 x 10 transpose goes through the 16 x 16 network of whole-register
// shuffles, its rows padded to 16 lanes with poison, not through one shuffle
// of 160 lanes (which LLVM's instruction selection took 10 ms to legalize).
// CHECK-LABEL: func.func @transpose_16x10
// CHECK-NOT: vector<160xf32>
// CHECK: vector.shuffle %{{.*}}, %{{.*}} [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, -1, -1, -1, -1, -1, -1] : vector<10xf32>, vector<10xf32>
// CHECK: vector.shuffle %{{.*}}, %{{.*}} [0, 16, 1, 17, 4, 20, 5, 21, 8, 24, 9, 25, 12, 28, 13, 29] : vector<16xf32>, vector<16xf32>
// CHECK-NOT: vector<160xf32>
// CHECK: vector.transfer_write %{{.*}} : vector<10x16xf32>, tensor<10x16xf32>
func.func @transpose_16x10(%x: tensor<16x10xf32>) -> tensor<10x16xf32> {
  %e = tensor.empty() : tensor<10x16xf32>
  %t = linalg.transpose ins(%x : tensor<16x10xf32>) outs(%e : tensor<10x16xf32>) permutation = [1, 0]
  return %t : tensor<10x16xf32>
}

// Past 16 a side, or 64 elements and fewer, a transpose is not padded.
// CHECK-LABEL: func.func @transpose_3x16
// CHECK-NOT: -1, -1
// CHECK: vector.shuffle %{{.*}}, %{{.*}} [0, 16, 32, 1, 17, 33
// CHECK-NOT: -1, -1
// CHECK: return
func.func @transpose_3x16(%x: tensor<3x16xf32>) -> tensor<16x3xf32> {
  %e = tensor.empty() : tensor<16x3xf32>
  %t = linalg.transpose ins(%x : tensor<3x16xf32>) outs(%e : tensor<16x3xf32>) permutation = [1, 0]
  return %t : tensor<16x3xf32>
}

// With 256-bit registers a transpose is tiled 8 x 8 and each tile is 24
// shuffles of 8-lane rows (unpack, in-lane and lane-crossing rounds), not
// the 16 x 16 network on 16-lane rows that LLVM split into halves.
// AVX2-LABEL: func.func @transpose_tiles_8x8
// AVX2-NOT: vector<16xf32>
// AVX2: scf.for
// AVX2: scf.for
// AVX2: vector.transfer_read {{.*}} vector<8x8xf32>
// AVX2: vector.shuffle %{{.*}}, %{{.*}} [0, 8, 1, 9, 4, 12, 5, 13] : vector<8xf32>, vector<8xf32>
// AVX2: vector.shuffle %{{.*}}, %{{.*}} [2, 3, 10, 11, 6, 7, 14, 15] : vector<8xf32>, vector<8xf32>
// AVX2: vector.shuffle %{{.*}}, %{{.*}} [4, 5, 6, 7, 12, 13, 14, 15] : vector<8xf32>, vector<8xf32>
// AVX2-NOT: vector<16xf32>
// AVX2: vector.transfer_write {{.*}} vector<8x8xf32>
// AVX2-NOT: vector<16xf32>
// AVX2: return
func.func @transpose_tiles_8x8(%x: tensor<32x64xf32>) -> tensor<64x32xf32> {
  %e = tensor.empty() : tensor<64x32xf32>
  %t = linalg.transpose ins(%x : tensor<32x64xf32>) outs(%e : tensor<64x32xf32>) permutation = [1, 0]
  return %t : tensor<64x32xf32>
}

// With 256-bit registers a 6 x 8 transpose is padded to 8 x 8, and a 16 x
// 10 one takes 8 x 5 tiles, each padded to 8 x 8.
// AVX2-LABEL: func.func @transpose_6x8
// AVX2: vector.shuffle %{{.*}}, %{{.*}} [0, 8, 1, 9, 4, 12, 5, 13] : vector<8xf32>, vector<8xf32>
// AVX2: vector.transfer_write %{{.*}} : vector<8x6xf32>, tensor<8x6xf32>
// AVX2-LABEL: func.func @transpose_16x10_avx2
// AVX2-NOT: vector<16xf32>
// AVX2: vector.transfer_read {{.*}} vector<8x5xf32>
// AVX2: vector.shuffle %{{.*}}, %{{.*}} [0, 1, 2, 3, 4, -1, -1, -1] : vector<5xf32>, vector<5xf32>
// AVX2: vector.shuffle %{{.*}}, %{{.*}} [0, 8, 1, 9, 4, 12, 5, 13] : vector<8xf32>, vector<8xf32>
// AVX2-NOT: vector<16xf32>
// AVX2: vector.transfer_write {{.*}} vector<5x8xf32>
// AVX2-NOT: vector<16xf32>
// AVX2: return
func.func @transpose_6x8(%x: tensor<6x8xf32>) -> tensor<8x6xf32> {
  %e = tensor.empty() : tensor<8x6xf32>
  %t = linalg.transpose ins(%x : tensor<6x8xf32>) outs(%e : tensor<8x6xf32>) permutation = [1, 0]
  return %t : tensor<8x6xf32>
}
func.func @transpose_16x10_avx2(%x: tensor<16x10xf32>) -> tensor<10x16xf32> {
  %e = tensor.empty() : tensor<10x16xf32>
  %t = linalg.transpose ins(%x : tensor<16x10xf32>) outs(%e : tensor<10x16xf32>) permutation = [1, 0]
  return %t : tensor<10x16xf32>
}
