// RUN: mithril-opt %s --pass-pipeline='builtin.module(func.func(mithril-gpu-serial-kernels))' --split-input-file --verify-diagnostics | FileCheck %s

// A reduction to one value has no parallel loop to map: the loop, the load
// of its result and the arithmetic on it run as one kernel of one thread,
// not as host code reading device memory. The kernel launched before it stays.
// CHECK-LABEL: func.func @reduction
// CHECK: gpu.launch blocks(%{{.*}}) in (%{{.*}} = %[[C32:.*]], %{{.*}} = %[[C32]], %{{.*}} = %[[C32]])
// CHECK: memref.store %{{.*}}, %arg0
// CHECK: gpu.terminator
// CHECK: %[[ONE:.*]] = arith.constant 1 : index
// CHECK: gpu.launch blocks(%{{.*}}) in (%{{.*}} = %[[ONE]], %{{.*}} = %[[ONE]], %{{.*}} = %[[ONE]]) threads(%{{.*}}) in (%{{.*}} = %[[ONE]], %{{.*}} = %[[ONE]], %{{.*}} = %[[ONE]])
// CHECK-NEXT: memref.store %{{.*}}, %arg1[]
// CHECK-NEXT: scf.for
// CHECK: memref.load %arg1[]
// CHECK: arith.divf
// CHECK: memref.store %{{.*}}, %arg2[]
// CHECK-NEXT: gpu.terminator
// CHECK: return
func.func @reduction(%x: memref<32xf32>, %acc: memref<f32>, %mean: memref<f32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %zero = arith.constant 0.0 : f32
  %n = arith.constant 32.0 : f32
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c32, %gy = %c32, %gz = %c32)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    memref.store %zero, %x[%bx] : memref<32xf32>
    gpu.terminator
  }
  memref.store %zero, %acc[] : memref<f32>
  scf.for %i = %c0 to %c32 step %c1 {
    %v = memref.load %x[%i] : memref<32xf32>
    %a = memref.load %acc[] : memref<f32>
    %s = arith.addf %a, %v : f32
    memref.store %s, %acc[] : memref<f32>
  }
  %total = memref.load %acc[] : memref<f32>
  %m = arith.divf %total, %n : f32
  memref.store %m, %mean[] : memref<f32>
  return
}

// -----

// A host loop around kernels stays on the host; the buffer accesses inside it
// become kernels of their own.
// CHECK-LABEL: func.func @host_loop
// CHECK: scf.for
// CHECK-NEXT: %[[ONE:.*]] = arith.constant 1 : index
// CHECK-NEXT: gpu.launch blocks(%{{.*}}) in (%{{.*}} = %[[ONE]],
// CHECK-NEXT: memref.store
// CHECK: gpu.launch blocks
// CHECK: }
// CHECK-NEXT: }
// CHECK: gpu.launch blocks
// CHECK-NEXT: memref.load
// CHECK-NEXT: memref.store
func.func @host_loop(%x: memref<4xf32>, %y: memref<f32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %zero = arith.constant 0.0 : f32
  scf.for %i = %c0 to %c4 step %c1 {
    memref.store %zero, %x[%i] : memref<4xf32>
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %c4, %gy = %c1, %gz = %c1)
               threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
      memref.store %zero, %x[%bx] : memref<4xf32>
      gpu.terminator
    }
  }
  %v = memref.load %x[%c0] : memref<4xf32>
  memref.store %v, %y[] : memref<f32>
  return
}

// -----

// A value read from a buffer that an allocation needs cannot move into a
// kernel: a clear error rather than host code reading device memory.
func.func @needs_host(%n: memref<index>) {
  %size = memref.load %n[] : memref<index>
  // expected-error @+1 {{'memref.alloc' op stays in host code but takes a value read from a GPU buffer}}
  %b = memref.alloc(%size) : memref<?xf32>
  memref.dealloc %b : memref<?xf32>
  return
}
