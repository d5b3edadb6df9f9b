// RUN: mithril-opt %s --mithril-outline-kernels --split-input-file | FileCheck %s
// RUN: mithril-opt %s --mithril-outline-kernels=min-ops=1000 --split-input-file \
// RUN:   | FileCheck %s --check-prefix=NONE

// A loop nest of 8 x 32 tiles moves into a function of its own: its bounds
// and views are computed there again, the buffers it reads and writes are
// arguments, and LLVM is told not to inline it back.

// CHECK-LABEL: func.func @model(
// CHECK-SAME:      %[[A:.*]]: memref<64x32xf32>, %[[B:.*]]: memref<64x32xf32>)
// CHECK:         %[[BUF:.*]] = memref.alloc() : memref<64x32xf32>
// CHECK-NEXT:    call @model_kernel(%[[A]], %[[BUF]]) : (memref<64x32xf32>, memref<64x32xf32>) -> ()
// The small loop stays.
// CHECK-NEXT:    scf.for
// CHECK:         memref.dealloc %[[BUF]]
// CHECK-NEXT:    return
// CHECK:       func.func private @model_kernel(%[[X:.*]]: memref<64x32xf32>, %[[Y:.*]]: memref<64x32xf32>)
// CHECK-SAME:      attributes {passthrough = ["noinline"]}
// CHECK-DAG:     %[[C64:.*]] = arith.constant 64 : index
// CHECK-DAG:     %[[C8:.*]] = arith.constant 8 : index
// CHECK:         scf.for %{{.*}} = %{{.*}} to %[[C64]] step %[[C8]]
// CHECK:           vector.transfer_read %[[X]]
// CHECK:           vector.transfer_write %{{.*}}, %[[Y]]
// CHECK:         return

// NONE-LABEL: func.func @model(
// NONE-NOT:     call
// NONE:         return
// NONE-NOT:   func.func
// NONE:       // -----

func.func @model(%a: memref<64x32xf32>, %b: memref<64x32xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c8 = arith.constant 8 : index
  %c64 = arith.constant 64 : index
  %cst = arith.constant 0.0 : f32
  %buf = memref.alloc() : memref<64x32xf32>
  scf.for %i = %c0 to %c64 step %c8 {
    %v = vector.transfer_read %a[%i, %c0], %cst {in_bounds = [true, true]}
        : memref<64x32xf32>, vector<8x32xf32>
    %w = arith.addf %v, %v : vector<8x32xf32>
    vector.transfer_write %w, %buf[%i, %c0] {in_bounds = [true, true]}
        : vector<8x32xf32>, memref<64x32xf32>
  }
  scf.for %i = %c0 to %c2 step %c1 {
    %s = memref.load %buf[%i, %c0] : memref<64x32xf32>
    memref.store %s, %b[%i, %c0] : memref<64x32xf32>
  }
  memref.dealloc %buf : memref<64x32xf32>
  return
}

// -----

// A loop that reads a vector computed outside it stays: vectors would cross
// to code compiled in another piece by value.

// CHECK-LABEL: func.func @vector_operand(
// CHECK-NOT:     call
// CHECK:         scf.for
// NONE-LABEL: func.func @vector_operand(

func.func @vector_operand(%a: memref<64x32xf32>, %b: memref<64x32xf32>) {
  %c0 = arith.constant 0 : index
  %c8 = arith.constant 8 : index
  %c64 = arith.constant 64 : index
  %cst = arith.constant 0.0 : f32
  %bias = vector.transfer_read %a[%c0, %c0], %cst {in_bounds = [true, true]}
      : memref<64x32xf32>, vector<8x32xf32>
  scf.for %i = %c0 to %c64 step %c8 {
    %v = vector.transfer_read %a[%i, %c0], %cst {in_bounds = [true, true]}
        : memref<64x32xf32>, vector<8x32xf32>
    %w = arith.addf %v, %bias : vector<8x32xf32>
    vector.transfer_write %w, %b[%i, %c0] {in_bounds = [true, true]}
        : vector<8x32xf32>, memref<64x32xf32>
  }
  return
}

// -----

// Straight-line code between loops (ops vectorized whole) moves too; a
// view the code after it still uses stays where it is, and the function
// computes its own. Private functions (chunk functions) are left alone.

// CHECK-LABEL: func.func @straight(
// CHECK-SAME:      %[[A:.*]]: memref<16x32xf32>, %[[B:.*]]: memref<16x32xf32>)
// CHECK:         %[[VIEW:.*]] = memref.subview %[[B]][8, 0] [8, 32] [1, 1]
// CHECK-NEXT:    call @straight_kernel(%[[A]], %[[B]])
// CHECK-NEXT:    call @use(%[[VIEW]])
// CHECK-NEXT:    return
// CHECK:       func.func private @straight_kernel(%[[X:.*]]: memref<16x32xf32>, %[[Y:.*]]: memref<16x32xf32>)
// CHECK:         %[[INNER:.*]] = memref.subview %[[Y]][8, 0] [8, 32] [1, 1]
// CHECK:         %[[V:.*]] = vector.transfer_read %[[X]]
// CHECK:         %[[SUM:.*]] = arith.addf %[[V]], %[[V]] : vector<16x32xf32>
// CHECK:         vector.transfer_write %[[SUM]], %[[Y]]
// CHECK:         vector.transfer_write %{{.*}}, %[[INNER]]
// CHECK:       func.func private @helper(
// CHECK-NEXT:    arith.constant
// CHECK-NOT:     call
// CHECK:         return

// NONE-LABEL: func.func @straight(
// NONE-NOT:   @straight_kernel

func.func private @use(memref<8x32xf32, strided<[32, 1], offset: 256>>)

func.func @straight(%a: memref<16x32xf32>, %b: memref<16x32xf32>) {
  %c0 = arith.constant 0 : index
  %cst = arith.constant 0.0 : f32
  %v = vector.transfer_read %a[%c0, %c0], %cst {in_bounds = [true, true]}
      : memref<16x32xf32>, vector<16x32xf32>
  %sum = arith.addf %v, %v : vector<16x32xf32>
  %view = memref.subview %b[8, 0] [8, 32] [1, 1]
      : memref<16x32xf32> to memref<8x32xf32, strided<[32, 1], offset: 256>>
  vector.transfer_write %sum, %b[%c0, %c0] {in_bounds = [true, true]}
      : vector<16x32xf32>, memref<16x32xf32>
  %half = vector.extract_strided_slice %sum {offsets = [0, 0], sizes = [8, 32], strides = [1, 1]}
      : vector<16x32xf32> to vector<8x32xf32>
  vector.transfer_write %half, %view[%c0, %c0] {in_bounds = [true, true]}
      : vector<8x32xf32>, memref<8x32xf32, strided<[32, 1], offset: 256>>
  call @use(%view) : (memref<8x32xf32, strided<[32, 1], offset: 256>>) -> ()
  return
}

func.func private @helper(%a: memref<16x32xf32>) {
  %c0 = arith.constant 0 : index
  %cst = arith.constant 0.0 : f32
  %v = vector.transfer_read %a[%c0, %c0], %cst {in_bounds = [true, true]}
      : memref<16x32xf32>, vector<16x32xf32>
  vector.transfer_write %v, %a[%c0, %c0] {in_bounds = [true, true]}
      : vector<16x32xf32>, memref<16x32xf32>
  return
}

// Through the whole pipeline: the MLP's matmul kernels are LLVM functions
// that LLVM must not inline, called from the model's function.
// RUN: mithril-opt %S/../../examples/models/mlp.mlir \
// RUN:   --mithril-cpu-pipeline="threads=1 outline-kernels=true shapes=input:64x784" \
// RUN:   | FileCheck %s --check-prefix=PIPE
// PIPE-LABEL: llvm.func @MLP(
// PIPE:         llvm.call @MLP_kernel(
// PIPE:         llvm.call @MLP_kernel_0(
// PIPE:       llvm.func @MLP_kernel(
// PIPE-SAME:      passthrough = ["noinline"]
