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
