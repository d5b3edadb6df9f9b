// Block and thread loops become gpu.launch: workgroup buffers become
// attributions, thread loops their bodies on the thread ids, each followed
// by a barrier.
// RUN: mithril-opt %s --split-input-file --verify-diagnostics --mithril-gpu-map-forall --canonicalize | FileCheck %s

// CHECK-LABEL: func.func @stage_and_sum(
// CHECK-SAME: %[[IN:.*]]: memref<4x64xf32>, %[[OUT:.*]]: memref<4x32xf32>
// CHECK-DAG: %[[C4:.*]] = arith.constant 4 : index
// CHECK-DAG: %[[C32:.*]] = arith.constant 32 : index
// CHECK-DAG: %[[C1:.*]] = arith.constant 1 : index
// CHECK: gpu.launch blocks(%[[BX:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %[[C4]], %{{.*}} = %[[C1]], %{{.*}} = %[[C1]]) threads(%[[TX:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %[[C32]], %{{.*}} = %[[C1]], %{{.*}} = %[[C1]])
// CHECK-SAME: workgroup(%[[SHARED:.*]] : memref<64xf32, #gpu.address_space<workgroup>>)
// CHECK-NOT: memref.alloc
// The staging loop covers the whole block: no guard.
// CHECK: %[[HI:.*]] = arith.addi %[[TX]], %[[C32]]
// CHECK: memref.load %[[IN]][%[[BX]], %[[TX]]]
// CHECK: memref.store %{{.*}}, %[[SHARED]][%[[TX]]]
// CHECK: memref.store %{{.*}}, %[[SHARED]][%[[HI]]]
// CHECK-NEXT: gpu.barrier
// The 16-thread loop runs on the first 16 threads.
// CHECK: %[[ACTIVE:.*]] = arith.cmpi ult, %[[TX]], %{{.*}} : index
// CHECK: scf.if %[[ACTIVE]] {
// CHECK: memref.store %{{.*}}, %[[OUT]][%[[BX]], %[[TX]]]
// CHECK: }
// CHECK-NEXT: gpu.barrier
// CHECK-NOT: memref.dealloc
// CHECK: gpu.terminator
func.func @stage_and_sum(%in: memref<4x64xf32>, %out: memref<4x32xf32>) {
  %c32 = arith.constant 32 : index
  scf.forall (%row) in (4) {
    %shared = memref.alloc() : memref<64xf32, #gpu.address_space<workgroup>>
    scf.forall (%t) in (32) {
      %hi = arith.addi %t, %c32 : index
      %a = memref.load %in[%row, %t] : memref<4x64xf32>
      %b = memref.load %in[%row, %hi] : memref<4x64xf32>
      memref.store %a, %shared[%t] : memref<64xf32, #gpu.address_space<workgroup>>
      memref.store %b, %shared[%hi] : memref<64xf32, #gpu.address_space<workgroup>>
    } {mapping = [#gpu.thread<x>]}
    scf.forall (%t) in (16) {
      %hi = arith.addi %t, %c32 : index
      %a = memref.load %shared[%t] : memref<64xf32, #gpu.address_space<workgroup>>
      %b = memref.load %shared[%hi] : memref<64xf32, #gpu.address_space<workgroup>>
      %s = arith.addf %a, %b : f32
      memref.store %s, %out[%row, %t] : memref<4x32xf32>
    } {mapping = [#gpu.thread<x>]}
    memref.dealloc %shared : memref<64xf32, #gpu.address_space<workgroup>>
  } {mapping = [#gpu.block<x>]}
  return
}

// -----

func.func @dynamic_grid(%n: index, %out: memref<?xf32>) {
  %zero = arith.constant 0.0 : f32
  // expected-error @+1 {{needs static bounds and a GPU mapping to become a kernel}}
  scf.forall (%i) in (%n) {
    memref.store %zero, %out[%i] : memref<?xf32>
  } {mapping = [#gpu.block<x>]}
  return
}

// -----

func.func @too_many_threads(%out: memref<64x64xf32>) {
  %zero = arith.constant 0.0 : f32
  // expected-error @+1 {{needs 4096 threads per block; a GPU block holds at most 1024}}
  scf.forall (%i) in (1) {
    scf.forall (%y, %x) in (64, 64) {
      memref.store %zero, %out[%y, %x] : memref<64x64xf32>
    } {mapping = [#gpu.thread<y>, #gpu.thread<x>]}
  } {mapping = [#gpu.block<x>]}
  return
}

// -----

func.func @block_mapped_threads(%out: memref<8xf32>) {
  %zero = arith.constant 0.0 : f32
  scf.forall (%i) in (1) {
    // expected-error @+1 {{dimension 0 needs bounds from 0 with step 1 and a thread x, y or z mapping, not #gpu.block<y>}}
    scf.forall (%x) in (8) {
      memref.store %zero, %out[%x] : memref<8xf32>
    } {mapping = [#gpu.block<y>]}
  } {mapping = [#gpu.block<x>]}
  return
}

// -----

// A buffer each thread indexes by its own id first holds that thread's data:
// it becomes private memory (registers), the rest of its indices kept.
// CHECK-LABEL: func.func @thread_owned(
// CHECK: gpu.launch
// CHECK-SAME: private(%[[OWN:.*]] : memref<2xf32, #gpu.address_space<private>>)
// CHECK-NOT: workgroup(
// CHECK: memref.store %{{.*}}, %[[OWN]][%c0]
// CHECK: memref.store %{{.*}}, %[[OWN]][%c1]
// CHECK: gpu.barrier
// CHECK: memref.load %[[OWN]][%c0]
// CHECK: memref.load %[[OWN]][%c1]
func.func @thread_owned(%in: memref<32xf32>, %out: memref<32xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.forall (%b) in (1) {
    %own = memref.alloc() : memref<32x2xf32, #gpu.address_space<workgroup>>
    scf.forall (%t) in (32) {
      %x = memref.load %in[%t] : memref<32xf32>
      memref.store %x, %own[%t, %c0] : memref<32x2xf32, #gpu.address_space<workgroup>>
      memref.store %x, %own[%t, %c1] : memref<32x2xf32, #gpu.address_space<workgroup>>
    } {mapping = [#gpu.thread<x>]}
    scf.forall (%t) in (32) {
      %a = memref.load %own[%t, %c0] : memref<32x2xf32, #gpu.address_space<workgroup>>
      %b2 = memref.load %own[%t, %c1] : memref<32x2xf32, #gpu.address_space<workgroup>>
      %s = arith.addf %a, %b2 : f32
      memref.store %s, %out[%t] : memref<32xf32>
    } {mapping = [#gpu.thread<x>]}
    memref.dealloc %own : memref<32x2xf32, #gpu.address_space<workgroup>>
  } {mapping = [#gpu.block<x>]}
  return
}
