// RUN: mithril-opt %s -split-input-file --mithril-convert-bodies-to-llvm="use-aligned-alloc=true use-generic-functions=true" | FileCheck %s
// RUN: mithril-opt %s -split-input-file --mithril-convert-bodies-to-llvm --finalize-memref-to-llvm --convert-to-llvm --reconcile-unrealized-casts | FileCheck %s --check-prefix=LOWERED

// The bodies become LLVM dialect ops, function by function; the functions
// keep their signatures (for convert-to-llvm), the allocation functions
// are declared before the bodies are lowered, and the buffers' globals
// become LLVM globals.
// CHECK-DAG: llvm.func @_mlir_memref_to_llvm_free(!llvm.ptr)
// CHECK-DAG: llvm.func @_mlir_memref_to_llvm_aligned_alloc(i64, i64) -> !llvm.ptr
// CHECK-DAG: llvm.mlir.global private constant @table
// CHECK-LABEL: func.func @scale(%{{.*}}: memref<4xf32>, %{{.*}}: index) -> f32
// CHECK: llvm.mlir.addressof @table
// CHECK: llvm.fmul
// CHECK-NOT: memref.
// CHECK: return
// CHECK-LABEL: func.func @temporary(%{{.*}}: index) -> f32
// CHECK: llvm.call @_mlir_memref_to_llvm_aligned_alloc
// CHECK: llvm.cond_br
// CHECK: llvm.call @_mlir_memref_to_llvm_free
// CHECK: return
// CHECK: func.func private @external(memref<4xf32>)
// LOWERED-LABEL: llvm.func @scale(
// LOWERED-LABEL: llvm.func @temporary(
// LOWERED-NOT: builtin.unrealized_conversion_cast
memref.global "private" constant @table : memref<4xf32> = dense<[1.0, 2.0, 3.0, 4.0]>

func.func @scale(%x: memref<4xf32>, %i: index) -> f32 {
  %t = memref.get_global @table : memref<4xf32>
  %a = memref.load %x[%i] : memref<4xf32>
  %b = memref.load %t[%i] : memref<4xf32>
  %c = arith.mulf %a, %b : f32
  return %c : f32
}

func.func @temporary(%n: index) -> f32 {
  %buf = memref.alloc() : memref<16xf32>
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %negative = arith.cmpi slt, %n, %c0 : index
  cf.cond_br %negative, ^zero, ^read
^zero:
  cf.br ^done(%zero : f32)
^read:
  %v = memref.load %buf[%c0] : memref<16xf32>
  cf.br ^done(%v : f32)
^done(%r: f32):
  memref.dealloc %buf : memref<16xf32>
  return %r : f32
}

func.func private @external(memref<4xf32>)

// -----

// A strided copy's lowering declares memrefCopy: such a module's functions
// are lowered one after the other, with the same result.
// CHECK-LABEL: func.func @strided_copy
// CHECK: llvm.call @memrefCopy
// CHECK-NOT: memref.copy
// LOWERED-LABEL: llvm.func @strided_copy(
// LOWERED: llvm.call @memrefCopy
func.func @strided_copy(%from: memref<4x4xf32, strided<[8, 1]>>, %to: memref<4x4xf32>) {
  memref.copy %from, %to : memref<4x4xf32, strided<[8, 1]>> to memref<4x4xf32>
  return
}
