// mithril.custom_call through the CPU pipeline: the linalg lowering keeps it,
// and bufferization calls the C function through a wrapper that takes the
// buffers (so that they live until the call returns) and passes them as
// records {data, rank, sizes} in a stack array.
// RUN: mithril-opt %s --mithril-cpu-pipeline="stop-after=linalg" | FileCheck %s --check-prefix=LINALG
// RUN: mithril-opt %s --mithril-cpu-pipeline="stop-after=bufferize" | FileCheck %s
// RUN: mithril-opt %s --mithril-cpu-pipeline | FileCheck %s --check-prefix=LLVM

// LINALG: linalg.transpose
// LINALG: mithril.custom_call %{{.+}}, %{{.+}} {callee = "outer", result_shape = array<i64: 0, 1, 1, 0>}

// CHECK: func.func private @outer(!llvm.ptr, i64)
// CHECK-LABEL: func.func @M(
// CHECK: %[[T:.+]] = memref.alloc(%{{.+}}) {{.*}} : memref<8x?xf32>
// CHECK: linalg.transpose
// CHECK: %[[R:.+]] = memref.alloc(%{{.+}}) {{.*}} : memref<?x3xf32>
// CHECK: call @__mithril_custom_call_outer(%[[T]], %{{.+}}, %[[R]]) : (memref<8x?xf32>, memref<3xf32>, memref<?x3xf32>) -> ()
// CHECK-NEXT: memref.dealloc %[[T]]
// CHECK-LABEL: func.func private @__mithril_custom_call_outer(
// CHECK-SAME: %[[A:[^:]+]]: memref<8x?xf32>, %[[B:[^:]+]]: memref<3xf32>, %[[O:[^:]+]]: memref<?x3xf32>)
// Three tensors: 9 words of records, then 2 + 1 + 2 sizes.
// CHECK: %[[REC:.+]] = memref.alloca() : memref<14xi64>
// CHECK: memref.extract_aligned_pointer_as_index %[[A]]
// CHECK: memref.dim %[[A]], %{{.+}} : memref<8x?xf32>
// CHECK: memref.extract_aligned_pointer_as_index %[[B]]
// CHECK: memref.extract_aligned_pointer_as_index %[[O]]
// CHECK: %[[P:.+]] = llvm.inttoptr
// CHECK: call @outer(%[[P]], %{{.+}}) : (!llvm.ptr, i64) -> ()

// LLVM: llvm.func @outer(!llvm.ptr, i64)
// LLVM: llvm.call @__mithril_custom_call_outer(
// LLVM: llvm.func @__mithril_custom_call_outer(
// LLVM: llvm.call @outer(
mithril.model @M(data %x: tensor<?x8xf32>, data %v: tensor<3xf32>) -> (y: tensor<?x3xf32>) {
  %t = mithril.transpose %x : (tensor<?x8xf32>) -> tensor<8x?xf32>
  %y = mithril.custom_call %t, %v {callee = "outer", result_shape = array<i64: 0, 1, 1, 0>} : (tensor<8x?xf32>, tensor<3xf32>) -> tensor<?x3xf32>
  mithril.output %y : tensor<?x3xf32>
}
