// A product whose reduction one cache block takes whole, read only by an
// element-wise op (a weight gradient's SGD update, w - lr * dw), is tiled
// together with it: per block of 128 rows x 256 columns, the product into
// a block of its own (its register tiles starting from zero: no fill) and
// then the update of that block. The gradient is never written whole,
// filled with zeros first or read back from memory. Columns that no
// register tile divides (784 = 768 + 16) split the update with the product.
// RUN: mithril-opt %s --mithril-cpu-pipeline="target-cpu=skylake-avx512 stop-after=fusion" | FileCheck %s
// RUN: mithril-opt %s --mithril-cpu-pipeline="target-cpu=skylake-avx512 stop-after=bufferize" | FileCheck %s --check-prefix=BUFFERS
// RUN: mithril-opt %s --mithril-cpu-pipeline="target-cpu=skylake-avx512 stop-after=fusion threads=2" | FileCheck %s --check-prefix=THREADS

mithril.model @Update(data %g: tensor<512x64xf32>, data %x: tensor<64x784xf32>, param %w: tensor<512x784xf32>, data %lr: tensor<f32>) -> (w_new: tensor<512x784xf32>) {
  %dw = mithril.matmul %g, %x : (tensor<512x64xf32>, tensor<64x784xf32>) -> tensor<512x784xf32>
  %step = mithril.multiply %dw, %lr : (tensor<512x784xf32>, tensor<f32>) -> tensor<512x784xf32>
  %new = mithril.subtract %w, %step : (tensor<512x784xf32>, tensor<512x784xf32>) -> tensor<512x784xf32>
  mithril.output %new : tensor<512x784xf32>
}

// CHECK-LABEL: func.func @Update(
// CHECK: %[[ZERO:.+]] = arith.constant dense<0.000000e+00> : vector<8x32xf32>
// CHECK-NOT: vector.transfer_write %[[ZERO]]
// The first 768 columns: column blocks of 256 (the packed panels of x
// outside the row loop), row blocks of 128, the product's register tiles
// from zero, then the update of the block.
// CHECK: scf.for %{{.+}} = %c0 to %c768 step %c256
// CHECK: scf.for %{{.+}} = %c0 to %c512 step %c128
// CHECK: scf.for %{{.+}} = %c0 to %c64 step %c1 iter_args(%{{.+}} = %[[ZERO]]) -> (vector<8x32xf32>)
// CHECK: arith.mulf {{.*}} : vector<8x32xf32>
// CHECK: tensor.collapse_shape {{.*}} : tensor<128x8x32xf32> into tensor<128x256xf32>
// CHECK: arith.mulf {{.*}} : vector<8x32xf32>
// CHECK-NEXT: arith.subf {{.*}} : vector<8x32xf32>
// CHECK: tensor.insert_slice {{.*}} : tensor<128x256xf32> into tensor<512x768xf32>
// The last 16 columns: the same per block of rows.
// CHECK: scf.for %{{.+}} = %c0 to %c512 step %c128
// CHECK: -> (vector<8x16xf32>)
// CHECK: arith.subf {{.*}} : vector<{{.+}}x16xf32>
// CHECK: tensor.insert_slice {{.*}} into tensor<512x16xf32>

// Buffers: one block of the product at a time (128 rows), the update
// written straight into the result; no buffer of the whole gradient.
// BUFFERS-LABEL: func.func @Update(
// BUFFERS-NOT: memref.alloc() {{.*}} : memref<512x784xf32>
// BUFFERS-NOT: memref.alloc() {{.*}} : memref<512x768xf32>
// BUFFERS: memref.alloc() {{.*}} : memref<128x8x32xf32>
// BUFFERS-NOT: memref.alloc() {{.*}} : memref<512x784xf32>
// BUFFERS-NOT: memref.copy
// BUFFERS: return

// On two threads, each thread's share of the columns does the same.
// THREADS-LABEL: func.func @Update(
// THREADS: %[[ZERO:.+]] = arith.constant dense<0.000000e+00> : vector<8x32xf32>
// THREADS-NOT: vector.transfer_write %[[ZERO]]
// THREADS: scf.forall
// THREADS: scf.for %{{.+}} iter_args(%{{.+}} = %[[ZERO]]) -> (vector<8x32xf32>)
// THREADS: arith.subf {{.*}} : vector<8x32xf32>
// THREADS: scf.forall.in_parallel

// With no epilogue (the gradient is an output, or all-reduced before its
// update), the product alone is tiled that way: its register tiles start
// from zero, and no pass fills the result first.
mithril.model @Gradient(data %g: tensor<512x64xf32>, data %x: tensor<64x512xf32>) -> (dw: tensor<512x512xf32>) {
  %dw = mithril.matmul %g, %x : (tensor<512x64xf32>, tensor<64x512xf32>) -> tensor<512x512xf32>
  mithril.output %dw : tensor<512x512xf32>
}

// CHECK-LABEL: func.func @Gradient(
// CHECK: %[[ZERO:.+]] = arith.constant dense<0.000000e+00> : vector<8x32xf32>
// CHECK-NOT: vector.transfer_write %[[ZERO]]
// CHECK: scf.for %{{.+}} = %c0 to %c512 step %c256
// CHECK: scf.for %{{.+}} = %c0 to %c512 step %c128
// CHECK: scf.for %{{.+}} = %c0 to %c64 step %c1 iter_args(%{{.+}} = %[[ZERO]]) -> (vector<8x32xf32>)
// CHECK: tensor.insert_slice {{.*}} : tensor<128x256xf32> into tensor<512x512xf32>
