// RUN: mithril-opt %s --mithril-outline-kernels --split-input-file | FileCheck %s
// RUN: mithril-opt %s --mithril-outline-kernels=min-ops=1000 --split-input-file \
// RUN:   | FileCheck %s --check-prefix=NONE
// RUN: mithril-opt %s --mithril-outline-kernels=shared-only=true --split-input-file \
// RUN:   | FileCheck %s --check-prefix=SHARED

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
// Buffers of static shapes cross as bare pointers (one argument each). The
// allocation is memory apart from the argument it reads: both noalias.
// CHECK:       func.func private @model_kernel(%[[X:[^:]*]]: memref<64x32xf32> {llvm.noalias}, %[[Y:[^:]*]]: memref<64x32xf32> {llvm.noalias})
// CHECK-SAME:      attributes {llvm.bareptr, passthrough = ["noinline"]}
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

// A loop that reads a vector computed outside it takes it through a stack
// buffer of its shape (vectors passed by value crashed code compiled in
// pieces): the caller writes it, the function reads it back.

// CHECK-LABEL: func.func @vector_operand(
// CHECK-SAME:      %[[A:.*]]: memref<64x32xf32>, %[[B:.*]]: memref<64x32xf32>)
// CHECK:         %[[STACK:.*]] = memref.alloca() : memref<8x32xf32>
// CHECK:         %[[BIAS:.*]] = vector.transfer_read %[[A]]
// CHECK:         vector.transfer_write %[[BIAS]], %[[STACK]][%{{.*}}, %{{.*}}] {in_bounds = [true, true]}
// CHECK-NEXT:    call @vector_operand_kernel(%[[A]], %[[B]], %[[STACK]])
// CHECK-NEXT:    return
// Two arguments of the entry may be one array: only the stack buffer is
// noalias.
// CHECK:       func.func private @vector_operand_kernel(%{{[^:]*}}: memref<64x32xf32>, %{{[^:]*}}: memref<64x32xf32>, %[[IN:[^:]*]]: memref<8x32xf32> {llvm.noalias})
// CHECK:         %[[READ:.*]] = vector.transfer_read %[[IN]][%{{.*}}, %{{.*}}], %{{.*}} {in_bounds = [true, true]} : memref<8x32xf32>, vector<8x32xf32>
// CHECK:         scf.for
// CHECK:           arith.addf %{{.*}}, %[[READ]] : vector<8x32xf32>
// NONE-LABEL: func.func @vector_operand(
// NONE-NOT:     call

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

// Small loops, each too small for a function, go with the straight-line
// code between them into one, past the allocation between them (which
// stays before the call); a free ends the run. A buffer with a dynamic
// size crosses as a whole descriptor: no bare pointers for that function.

// CHECK-LABEL: func.func @small_loops(
// CHECK-SAME:      %[[A:.*]]: memref<16xf32>, %[[B:.*]]: memref<16xf32>, %[[N:.*]]: index)
// CHECK:         %[[T:.*]] = memref.alloc() : memref<16xf32>
// CHECK-NEXT:    %[[D:.*]] = memref.alloc(%[[N]]) : memref<?xf32>
// CHECK-NEXT:    call @small_loops_kernel(%[[A]], %[[B]], %[[T]], %[[D]])
// CHECK-NEXT:    memref.dealloc %[[T]]
// CHECK-NEXT:    memref.dealloc %[[D]]
// CHECK-NEXT:    return
// CHECK:       func.func private @small_loops_kernel(
// CHECK-SAME:      memref<?xf32> {llvm.noalias})
// CHECK-SAME:      attributes {passthrough = ["noinline"]}
// CHECK-COUNT-3: scf.for
// CHECK:         return
// NONE-LABEL: func.func @small_loops(
// NONE-NOT:     call

func.func @small_loops(%a: memref<16xf32>, %b: memref<16xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %t = memref.alloc() : memref<16xf32>
  scf.for %i = %c0 to %c16 step %c1 {
    %x = memref.load %a[%i] : memref<16xf32>
    %y = arith.mulf %x, %x : f32
    %z = arith.addf %y, %x : f32
    %w = arith.subf %z, %y : f32
    memref.store %w, %t[%i] : memref<16xf32>
  }
  %d = memref.alloc(%n) : memref<?xf32>
  scf.for %i = %c0 to %c16 step %c1 {
    %x = memref.load %t[%i] : memref<16xf32>
    %y = arith.mulf %x, %x : f32
    %z = arith.addf %y, %x : f32
    %w = arith.subf %z, %y : f32
    memref.store %w, %b[%i] : memref<16xf32>
    memref.store %w, %d[%c0] : memref<?xf32>
  }
  scf.for %i = %c0 to %c16 step %c1 {
    %x = memref.load %b[%i] : memref<16xf32>
    %y = arith.mulf %x, %x : f32
    %z = arith.addf %y, %x : f32
    %w = arith.subf %z, %y : f32
    memref.store %w, %a[%i] : memref<16xf32>
  }
  memref.dealloc %t : memref<16xf32>
  memref.dealloc %d : memref<?xf32>
  return
}

// -----

// A small loop that reads a vector the straight-line code before it reads
// goes with that code, the read and all: no stack buffer.

// CHECK-LABEL: func.func @run_value(
// CHECK-SAME:      %[[A:.*]]: memref<4x4xf32>, %[[B:.*]]: memref<4x4xf32>)
// CHECK-NEXT:    call @run_value_kernel(%[[A]], %[[B]])
// CHECK-NEXT:    return
// CHECK:       func.func private @run_value_kernel(
// CHECK:         vector.transfer_write
// CHECK-NEXT:    %[[ROW:.*]] = vector.transfer_read %{{.*}} : memref<4x4xf32>, vector<4xf32>
// CHECK-NEXT:    scf.for
// CHECK:           arith.mulf %{{.*}}, %[[ROW]]
// NONE-LABEL: func.func @run_value(
// NONE-NOT:     call

func.func @run_value(%a: memref<4x4xf32>, %b: memref<4x4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %cst = arith.constant 0.0 : f32
  %all = vector.transfer_read %a[%c0, %c0], %cst {in_bounds = [true, true]}
      : memref<4x4xf32>, vector<4x4xf32>
  %twice = arith.addf %all, %all : vector<4x4xf32>
  vector.transfer_write %twice, %b[%c0, %c0] {in_bounds = [true, true]}
      : vector<4x4xf32>, memref<4x4xf32>
  %row = vector.transfer_read %a[%c0, %c0], %cst {in_bounds = [true]}
      : memref<4x4xf32>, vector<4xf32>
  scf.for %i = %c0 to %c4 step %c1 {
    %v = vector.transfer_read %b[%i, %c0], %cst {in_bounds = [true]}
        : memref<4x4xf32>, vector<4xf32>
    %p = arith.mulf %v, %row : vector<4xf32>
    %q = arith.addf %p, %v : vector<4xf32>
    %r = arith.mulf %q, %row : vector<4xf32>
    vector.transfer_write %r, %b[%i, %c0] {in_bounds = [true]} : vector<4xf32>, memref<4x4xf32>
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
// Their buffers cross as bare pointers.
// PIPE:       llvm.func @MLP_kernel(%{{.*}}: !llvm.ptr {llvm.noalias}, %{{.*}}: !llvm.ptr {llvm.noalias})
// PIPE-SAME:      passthrough = ["noinline"]

// -----

// Two layers alike (a transformer's blocks): their loop nests, the same op
// for op but for their buffers and locations, become one function called
// twice; a third that differs (it multiplies) gets its own.

// CHECK-LABEL: func.func @layers(
// CHECK-SAME:      %[[A:.*]]: memref<64x32xf32>, %[[B:.*]]: memref<64x32xf32>, %[[C:.*]]: memref<64x32xf32>, %[[D:.*]]: memref<64x32xf32>)
// CHECK:         call @layers_kernel(%[[A]], %[[B]])
// CHECK-NEXT:    call @layers_kernel(%[[B]], %[[C]])
// CHECK-NEXT:    call @[[THIRD:layers_kernel_[0-9]+]](%[[C]], %[[D]])
// CHECK-NEXT:    return
// CHECK:       func.func private @layers_kernel(
// CHECK:           arith.addf
// CHECK-NOT:   func.func private
// CHECK:       func.func private @[[THIRD]](
// CHECK:           arith.mulf
// CHECK-NOT:   func.func private
// NONE-LABEL: func.func @layers(
// NONE-NOT:     call

// With shared-only, the two alike still share a function; the third stays
// where it was.
// SHARED-LABEL: func.func @layers(
// SHARED:         call @layers_kernel(%{{.*}}, %{{.*}})
// SHARED-NEXT:    call @layers_kernel(%{{.*}}, %{{.*}})
// SHARED-NEXT:    scf.for
// SHARED:           arith.mulf
// SHARED:         return
// SHARED:       func.func private @layers_kernel(
// SHARED-NOT:   func.func private

func.func @layers(%a: memref<64x32xf32>, %b: memref<64x32xf32>, %c: memref<64x32xf32>, %d: memref<64x32xf32>) {
  %c0 = arith.constant 0 : index
  %c8 = arith.constant 8 : index
  %c64 = arith.constant 64 : index
  %cst = arith.constant 0.0 : f32
  scf.for %i = %c0 to %c64 step %c8 {
    %v = vector.transfer_read %a[%i, %c0], %cst {in_bounds = [true, true]}
        : memref<64x32xf32>, vector<8x32xf32>
    %w = arith.addf %v, %v : vector<8x32xf32>
    vector.transfer_write %w, %b[%i, %c0] {in_bounds = [true, true]}
        : vector<8x32xf32>, memref<64x32xf32>
  } loc("layer0")
  scf.for %i = %c0 to %c64 step %c8 {
    %v = vector.transfer_read %b[%i, %c0], %cst {in_bounds = [true, true]}
        : memref<64x32xf32>, vector<8x32xf32>
    %w = arith.addf %v, %v : vector<8x32xf32>
    vector.transfer_write %w, %c[%i, %c0] {in_bounds = [true, true]}
        : vector<8x32xf32>, memref<64x32xf32>
  } loc("layer1")
  scf.for %i = %c0 to %c64 step %c8 {
    %v = vector.transfer_read %c[%i, %c0], %cst {in_bounds = [true, true]}
        : memref<64x32xf32>, vector<8x32xf32>
    %w = arith.mulf %v, %v : vector<8x32xf32>
    vector.transfer_write %w, %d[%i, %c0] {in_bounds = [true, true]}
        : vector<8x32xf32>, memref<64x32xf32>
  }
  return
}

// -----

// A function shared by two kernels takes noalias only where every call
// passes memory apart: the first call reads the entry's argument and writes
// an allocation, the second reads one argument of the entry and writes
// another, which may be the same array. A kernel that writes the entry's
// argument and reads a global may be handed that global too; its
// allocation is apart from both.

// CHECK-LABEL: func.func @apart(
// CHECK-SAME:      %[[A:[^:]*]]: memref<64x32xf32>, %[[B:[^:]*]]: memref<64x32xf32>)
// CHECK:         %[[Y:.*]] = memref.alloc()
// CHECK-NEXT:    call @apart_kernel(%[[A]], %[[Y]]) :
// CHECK-NEXT:    call @apart_kernel(%[[A]], %[[B]]) :
// CHECK:         call @[[THIRD:apart_kernel_[0-9]+]](%[[A]], %[[Y]]) :
// CHECK:       func.func private @apart_kernel(%{{[^:]*}}: memref<64x32xf32>, %{{[^:]*}}: memref<64x32xf32>) attributes
// CHECK:       func.func private @[[THIRD]](%{{[^:]*}}: memref<64x32xf32>, %{{[^:]*}}: memref<64x32xf32> {llvm.noalias}) attributes
// CHECK:         memref.get_global @table
// SHARED-LABEL: func.func @apart(
// SHARED:         call @apart_kernel(
// SHARED-NEXT:    call @apart_kernel(
// SHARED-NEXT:    memref.get_global
// SHARED-NEXT:    scf.for
// SHARED:       func.func private @apart_kernel(

memref.global "private" constant @table : memref<64x32xf32> = dense<1.0>

func.func @apart(%a: memref<64x32xf32>, %b: memref<64x32xf32>) {
  %c0 = arith.constant 0 : index
  %c8 = arith.constant 8 : index
  %c64 = arith.constant 64 : index
  %cst = arith.constant 0.0 : f32
  %y = memref.alloc() : memref<64x32xf32>
  scf.for %i = %c0 to %c64 step %c8 {
    %v = vector.transfer_read %a[%i, %c0], %cst {in_bounds = [true, true]}
        : memref<64x32xf32>, vector<8x32xf32>
    %w = arith.addf %v, %v : vector<8x32xf32>
    vector.transfer_write %w, %y[%i, %c0] {in_bounds = [true, true]}
        : vector<8x32xf32>, memref<64x32xf32>
  }
  scf.for %i = %c0 to %c64 step %c8 {
    %v = vector.transfer_read %a[%i, %c0], %cst {in_bounds = [true, true]}
        : memref<64x32xf32>, vector<8x32xf32>
    %w = arith.addf %v, %v : vector<8x32xf32>
    vector.transfer_write %w, %b[%i, %c0] {in_bounds = [true, true]}
        : vector<8x32xf32>, memref<64x32xf32>
  }
  %t = memref.get_global @table : memref<64x32xf32>
  scf.for %i = %c0 to %c64 step %c8 {
    %v = vector.transfer_read %t[%i, %c0], %cst {in_bounds = [true, true]}
        : memref<64x32xf32>, vector<8x32xf32>
    %u = vector.transfer_read %y[%i, %c0], %cst {in_bounds = [true, true]}
        : memref<64x32xf32>, vector<8x32xf32>
    %w = arith.mulf %v, %u : vector<8x32xf32>
    vector.transfer_write %w, %a[%i, %c0] {in_bounds = [true, true]}
        : vector<8x32xf32>, memref<64x32xf32>
  }
  memref.dealloc %y : memref<64x32xf32>
  return
}
