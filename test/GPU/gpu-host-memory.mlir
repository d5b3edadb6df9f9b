// RUN: mithril-opt %s --pass-pipeline='builtin.module(func.func(mithril-gpu-host-memory))' | FileCheck %s

// Host code that launches kernels allocates, frees and copies device buffers:
// memref.alloc/dealloc/copy become gpu.alloc/dealloc/memcpy (target first).
// CHECK-LABEL: func.func @host
// CHECK: %[[B:.*]] = gpu.alloc (%{{.*}}) : memref<?x4xf32>
// CHECK: gpu.memcpy %arg1, %[[B]] : memref<?x4xf32>, memref<?x4xf32>
// CHECK: gpu.dealloc %[[B]] : memref<?x4xf32>
// CHECK-NOT: memref.alloc
// CHECK-NOT: memref.copy
func.func @host(%n: index, %out: memref<?x4xf32>) {
  %b = memref.alloc(%n) : memref<?x4xf32>
  memref.copy %b, %out : memref<?x4xf32> to memref<?x4xf32>
  memref.dealloc %b : memref<?x4xf32>
  return
}

// A constant global is host memory: kernels get a device copy, made where the
// global is taken and freed at the return.
// CHECK-LABEL: func.func @constant
// CHECK: %[[G:.*]] = memref.get_global @table : memref<4xi32>
// CHECK: %[[D:.*]] = gpu.alloc () : memref<4xi32>
// CHECK: gpu.memcpy %[[D]], %[[G]] : memref<4xi32>, memref<4xi32>
// CHECK: gpu.memcpy %arg0, %[[D]]
// CHECK: gpu.dealloc %[[D]] : memref<4xi32>
// CHECK-NEXT: return
memref.global "private" constant @table : memref<4xi32> = dense<[0, 1, 2, 3]>
func.func @constant(%out: memref<4xi32>) {
  %g = memref.get_global @table : memref<4xi32>
  memref.copy %g, %out : memref<4xi32> to memref<4xi32>
  return
}
