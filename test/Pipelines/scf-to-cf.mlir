// RUN: mithril-opt %s --pass-pipeline='builtin.module(func.func(mithril-scf-to-cf))' | FileCheck %s

// A loop whose constant bounds run it at least once is tested at its bottom:
// the entry branches into the body, which steps and branches back or out,
// and the result is what the last iteration yields.
// CHECK-LABEL: func.func @bottom_tested
// CHECK: cf.br ^[[BODY:.+]](%{{.+}}, %{{.+}} : index, f32)
// CHECK: ^[[BODY]](%[[I:.+]]: index, %[[ACC:.+]]: f32):
// CHECK: %[[SUM:.+]] = arith.addf %[[ACC]]
// CHECK: %[[NEXT:.+]] = arith.addi %[[I]], %{{.+}} : index
// CHECK: %[[MORE:.+]] = arith.cmpi slt, %[[NEXT]], %{{.+}} : index
// CHECK: cf.cond_br %[[MORE]], ^[[BODY]](%[[NEXT]], %[[SUM]] : index, f32), ^[[EXIT:.+]]
// CHECK: ^[[EXIT]]:
// CHECK-NEXT: return %[[SUM]] : f32
func.func @bottom_tested(%m: memref<16xf32>) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %zero = arith.constant 0.0 : f32
  %s = scf.for %i = %c0 to %c16 step %c1 iter_args(%acc = %zero) -> (f32) {
    %x = memref.load %m[%i] : memref<16xf32>
    %a = arith.addf %acc, %x : f32
    scf.yield %a : f32
  }
  return %s : f32
}

// Nested: both loops bottom-tested, the inner one's exit falling into the
// outer one's step.
// CHECK-LABEL: func.func @nested
// CHECK-COUNT-2: arith.cmpi slt
// CHECK-NOT: arith.cmpi
// CHECK: return
func.func @nested(%m: memref<4x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %zero = arith.constant 0.0 : f32
  scf.for %i = %c0 to %c4 step %c1 {
    scf.for %j = %c0 to %c8 step %c1 {
      memref.store %zero, %m[%i, %j] : memref<4x8xf32>
    }
  }
  return
}

// A loop that may not run (a dynamic bound, or an empty constant range) is
// upstream's: tested at its top.
// CHECK-LABEL: func.func @top_tested
// CHECK: cf.br ^[[HEAD:.+]](%{{.+}} : index)
// CHECK: ^[[HEAD]](%[[I:.+]]: index):
// CHECK-NEXT: %[[MORE:.+]] = arith.cmpi slt, %[[I]], %arg1 : index
// CHECK-NEXT: cf.cond_br %[[MORE]]
// CHECK-LABEL: func.func @empty
// CHECK: arith.cmpi slt, %{{.+}}, %c0 : index
func.func @top_tested(%m: memref<?xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  scf.for %i = %c0 to %n step %c1 {
    memref.store %zero, %m[%i] : memref<?xf32>
  }
  return
}
func.func @empty(%m: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  scf.for %i = %c1 to %c0 step %c1 {
    memref.store %zero, %m[%i] : memref<4xf32>
  }
  return
}

// The loop's LLVM attributes (its metadata) go on the branch back, where
// LLVM reads them.
// CHECK-LABEL: func.func @annotated
// CHECK: cf.cond_br {{.+}} {llvm.loop_annotation = #{{.+}}}
#unroll = #llvm.loop_unroll<disable = true>
#annotation = #llvm.loop_annotation<unroll = #unroll>
func.func @annotated(%m: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %zero = arith.constant 0.0 : f32
  scf.for %i = %c0 to %c8 step %c1 {
    memref.store %zero, %m[%i] : memref<8xf32>
  } {llvm.loop_annotation = #annotation}
  return
}
