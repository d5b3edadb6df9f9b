// RUN: mithril-opt %s -split-input-file --mithril-noalias-allocations | FileCheck %s

// The allocation functions the memref lowering declares return pointers
// nothing else points to.
// CHECK: llvm.func @malloc(i64) -> (!llvm.ptr {llvm.noalias})
// CHECK: llvm.func @aligned_alloc(i64, i64) -> (!llvm.ptr {llvm.noalias})
// CHECK: llvm.func @_mlir_memref_to_llvm_alloc(i64) -> (!llvm.ptr {llvm.noalias})
// CHECK: llvm.func @_mlir_memref_to_llvm_aligned_alloc(i64, i64) -> (!llvm.ptr {llvm.noalias})
llvm.func @malloc(i64) -> !llvm.ptr
llvm.func @aligned_alloc(i64, i64) -> !llvm.ptr
llvm.func @_mlir_memref_to_llvm_alloc(i64) -> !llvm.ptr
llvm.func @_mlir_memref_to_llvm_aligned_alloc(i64, i64) -> !llvm.ptr

// Other functions keep their attributes.
// CHECK: llvm.func @_mlir_memref_to_llvm_free(!llvm.ptr){{$}}
// CHECK: llvm.func @scratch(i64) -> !llvm.ptr{{$}}
llvm.func @_mlir_memref_to_llvm_free(!llvm.ptr)
llvm.func @scratch(i64) -> !llvm.ptr

// -----

// A definition of one of those names is the module's own, not the host's:
// what it returns is left as it is.
// CHECK-LABEL: llvm.func @malloc(%{{.*}}: i64) -> !llvm.ptr {
llvm.func @malloc(%size: i64) -> !llvm.ptr {
  %0 = llvm.mlir.addressof @arena : !llvm.ptr
  llvm.return %0 : !llvm.ptr
}
llvm.mlir.global internal @arena() : !llvm.array<64 x i8>
