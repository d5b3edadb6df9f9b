// Copies between buffers that are not both contiguous become loops over the
// dimensions before the longest run both store contiguously, each run moved
// by vector transfers (256 bytes, then the tail), instead of calls of the
// runtime's memrefCopy; runs shorter than 16 bytes become linalg.copy
// (scalar loops); contiguous and dynamic copies stay memref.copy.
// RUN: mithril-opt %s --mithril-strided-copies | FileCheck %s
// RUN: mithril-opt %s --mithril-strided-copies=threads=2 | FileCheck %s --check-prefix=THREADS

// A padded buffer's rows of 14 floats: one transfer per row.
// CHECK-LABEL: func.func @into_padded(
// CHECK: %[[VIEW:.+]] = memref.subview
// CHECK: scf.for %[[I:.+]] = %c0 to %c2 step %c1
// CHECK: scf.for %[[J:.+]] = %c0 to %c14 step %c1
// CHECK: %[[ROW:.+]] = vector.transfer_read %arg0[%[[I]], %[[J]], %c0], %{{.+}} {in_bounds = [true]} : memref<2x14x14xf32>, vector<14xf32>
// CHECK: vector.transfer_write %[[ROW]], %[[VIEW]][%[[I]], %[[J]], %c0] {in_bounds = [true]}
// CHECK-NOT: memref.copy
func.func @into_padded(%arg0: memref<2x14x14xf32>, %arg1: memref<2x16x16xf32>) {
  %view = memref.subview %arg1[0, 1, 1] [2, 14, 14] [1, 1, 1] : memref<2x16x16xf32> to memref<2x14x14xf32, strided<[256, 16, 1], offset: 17>>
  memref.copy %arg0, %view : memref<2x14x14xf32> to memref<2x14x14xf32, strided<[256, 16, 1], offset: 17>>
  return
}

// One slice of a concatenation along a middle axis: the trailing [1, 32]
// bytes are one run of both buffers, viewed flat.
// CHECK-LABEL: func.func @concat_slice(
// CHECK-DAG: %[[FROM:.+]] = memref.collapse_shape %arg0 {{\[}}[0], [1], [2, 3]]
// CHECK-DAG: %[[TO:.+]] = memref.collapse_shape %{{.+}} {{\[}}[0], [1], [2, 3]]
// CHECK: vector.transfer_read %[[FROM]]{{.+}} : memref<4x14x32xi8>, vector<32xi8>
// CHECK: vector.transfer_write %{{.+}}, %[[TO]]
// CHECK-NOT: memref.copy
func.func @concat_slice(%arg0: memref<4x14x1x32xi8>, %arg1: memref<4x14x9x32xi8>) {
  %view = memref.subview %arg1[0, 0, 2, 0] [4, 14, 1, 32] [1, 1, 1, 1] : memref<4x14x9x32xi8> to memref<4x14x1x32xi8, strided<[4032, 288, 32, 1], offset: 64>>
  memref.copy %arg0, %view : memref<4x14x1x32xi8> to memref<4x14x1x32xi8, strided<[4032, 288, 32, 1], offset: 64>>
  return
}

// A run of 100 floats: 64 floats, then the 36 left; a run of 300 floats: a
// loop of 64-float transfers, then the 44 left.
// CHECK-LABEL: func.func @long_rows(
// CHECK: scf.for %[[R:.+]] = %c0 to %c3 step %c1
// CHECK: vector.transfer_read %{{.+}}[%[[R]], %c0]{{.+}} vector<64xf32>
// CHECK: vector.transfer_read %{{.+}}[%[[R]], %c64]{{.+}} vector<36xf32>
// CHECK: scf.for %[[S:.+]] = %{{.+}} to %c2 step
// CHECK: scf.for %[[K:.+]] = %{{.+}} to %c256 step %c64
// CHECK: vector.transfer_read %{{.+}}[%[[S]], %[[K]]]{{.+}} vector<64xf32>
// CHECK: vector.transfer_read %{{.+}}[%[[S]], %c256{{.*}}]{{.+}} vector<44xf32>
func.func @long_rows(%arg0: memref<3x128xf32>, %arg1: memref<3x100xf32>) {
  %view = memref.subview %arg0[0, 0] [3, 100] [1, 1] : memref<3x128xf32> to memref<3x100xf32, strided<[128, 1]>>
  memref.copy %view, %arg1 : memref<3x100xf32, strided<[128, 1]>> to memref<3x100xf32>
  %wide = memref.alloc() : memref<2x320xf32>
  %part = memref.subview %wide[0, 0] [2, 300] [1, 1] : memref<2x320xf32> to memref<2x300xf32, strided<[320, 1]>>
  %rows = memref.alloc() : memref<2x300xf32>
  memref.copy %part, %rows : memref<2x300xf32, strided<[320, 1]>> to memref<2x300xf32>
  return
}

// A column (stride 8): no run, scalar loops.
// CHECK-LABEL: func.func @column(
// CHECK: linalg.copy
// CHECK-NOT: vector.transfer_read
func.func @column(%arg0: memref<4x8xf32>, %arg1: memref<4xf32>) {
  %view = memref.subview %arg0[0, 3] [4, 1] [1, 1] : memref<4x8xf32> to memref<4xf32, strided<[8], offset: 3>>
  memref.copy %view, %arg1 : memref<4xf32, strided<[8], offset: 3>> to memref<4xf32>
  return
}

// Booleans: a vector of i1 is packed bits, a buffer of i1 bytes.
// CHECK-LABEL: func.func @booleans(
// CHECK: linalg.copy
// CHECK-NOT: vector.transfer_read
func.func @booleans(%arg0: memref<4x64xi1>, %arg1: memref<4x32xi1>) {
  %view = memref.subview %arg0[0, 0] [4, 32] [1, 1] : memref<4x64xi1> to memref<4x32xi1, strided<[64, 1]>>
  memref.copy %view, %arg1 : memref<4x32xi1, strided<[64, 1]>> to memref<4x32xi1>
  return
}

// CHECK-LABEL: func.func @contiguous(
// CHECK: memref.copy %arg0, %arg1
func.func @contiguous(%arg0: memref<4x8xf32>, %arg1: memref<4x8xf32>) {
  memref.copy %arg0, %arg1 : memref<4x8xf32> to memref<4x8xf32>
  return
}

// CHECK-LABEL: func.func @dynamic(
// CHECK: memref.copy %arg0, %arg1
func.func @dynamic(%arg0: memref<?x8xf32, strided<[16, 1]>>, %arg1: memref<?x8xf32>) {
  memref.copy %arg0, %arg1 : memref<?x8xf32, strided<[16, 1]>> to memref<?x8xf32>
  return
}

// On two threads a copy of 64 KiB or more runs as a forall of two chunks of
// its outermost dimension (a bf16 convolution's window copy, 196 KiB: 8
// images a thread); the small one above stays one loop nest.
// THREADS-LABEL: func.func @into_padded(
// THREADS-NOT: scf.forall
// THREADS-LABEL: func.func @windows(
// THREADS: scf.forall (%[[T:.+]]) in (2) {
// THREADS: %[[FIRST:.+]] = arith.muli %[[T]], %c8
// THREADS: %[[LAST:.+]] = arith.addi %[[FIRST]], %c8
// THREADS: scf.for %[[N:.+]] = %[[FIRST]] to %[[LAST]] step %c1
// THREADS: vector.transfer_read %{{.+}}[%[[N]], %{{.+}}, %{{.+}}, %c0], %{{.+}} {in_bounds = [true]} : memref<16x14x14x32xbf16, strided<[8192, 512, 32, 1], offset: 544>>, vector<32xbf16>
// CHECK-LABEL: func.func @windows(
// CHECK-NOT: scf.forall
func.func @windows(%in: memref<16x16x16x32xbf16>, %out: memref<16x14x14x3x3x32xbf16>) {
  %src = memref.subview %in[0, 1, 1, 0] [16, 14, 14, 32] [1, 1, 1, 1]
      : memref<16x16x16x32xbf16> to memref<16x14x14x32xbf16, strided<[8192, 512, 32, 1], offset: 544>>
  %dst = memref.subview %out[0, 0, 0, 1, 1, 0] [16, 14, 14, 1, 1, 32] [1, 1, 1, 1, 1, 1]
      : memref<16x14x14x3x3x32xbf16> to memref<16x14x14x32xbf16, strided<[56448, 4032, 288, 1], offset: 128>>
  memref.copy %src, %dst : memref<16x14x14x32xbf16, strided<[8192, 512, 32, 1], offset: 544>>
      to memref<16x14x14x32xbf16, strided<[56448, 4032, 288, 1], offset: 128>>
  return
}

// Inside a thread's chunk already, a large copy stays one loop nest.
// CHECK-LABEL: func.func @in_a_chunk(
// THREADS-LABEL: func.func @in_a_chunk(
// THREADS: scf.forall (%{{.+}}) in (2) {
// THREADS-NOT: scf.forall
// THREADS: scf.for %{{.+}} = %c0 to %c16 step %c1
func.func @in_a_chunk(%in: memref<2x16x16x16x32xbf16>, %out: memref<2x16x14x14x32xbf16>) {
  scf.forall (%t) in (2) {
    %src = memref.subview %in[%t, 0, 1, 1, 0] [1, 16, 14, 14, 32] [1, 1, 1, 1, 1]
        : memref<2x16x16x16x32xbf16> to memref<16x14x14x32xbf16, strided<[8192, 512, 32, 1], offset: ?>>
    %dst = memref.subview %out[%t, 0, 0, 0, 0] [1, 16, 14, 14, 32] [1, 1, 1, 1, 1]
        : memref<2x16x14x14x32xbf16> to memref<16x14x14x32xbf16, strided<[6272, 448, 32, 1], offset: ?>>
    memref.copy %src, %dst : memref<16x14x14x32xbf16, strided<[8192, 512, 32, 1], offset: ?>>
        to memref<16x14x14x32xbf16, strided<[6272, 448, 32, 1], offset: ?>>
  }
  return
}
