// The graph-level switches of mithril-cpu-pipeline (the Python package's
// optimization_level= and optimizations=, mithril-run's --optimization-level
// and --disable), each shown on the same layer at stop-after=fusion.
// RUN: mithril-opt %s --mithril-cpu-pipeline="vector-bits=512 stop-after=fusion schedule=false" | FileCheck %s --check-prefix=FUSED
// RUN: mithril-opt %s --mithril-cpu-pipeline="vector-bits=512 stop-after=fusion schedule=false fusion=false" | FileCheck %s --check-prefix=UNFUSED
// RUN: mithril-opt %s --mithril-cpu-pipeline="vector-bits=512 stop-after=shapes" | FileCheck %s --check-prefix=DCE
// RUN: mithril-opt %s --mithril-cpu-pipeline="vector-bits=512 stop-after=shapes dce=false fold=false cse=false" | FileCheck %s --check-prefix=NODCE
// RUN: mithril-opt %s --mithril-cpu-pipeline="vector-bits=512 stop-after=shapes fold=false" | FileCheck %s --check-prefix=NOFOLD
// RUN: mithril-opt %s --mithril-cpu-pipeline="vector-bits=512 stop-after=shapes cse=false fold=false dce=false" | FileCheck %s --check-prefix=NOCSE
// RUN: mithril-opt %s --mithril-cpu-pipeline="vector-bits=512 stop-after=bufferize schedule=false fusion=false" | FileCheck %s --check-prefix=PLAN
// RUN: mithril-opt %s --mithril-cpu-pipeline="vector-bits=512 stop-after=bufferize schedule=false fusion=false memory-planning=false" | FileCheck %s --check-prefix=NOPLAN

mithril.model @Layer(data %x: tensor<4x8xf32>, param %b: tensor<8xf32>) -> (y: tensor<4x8xf32>) {
  %a = mithril.add %x, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %a2 = mithril.add %x, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %r = mithril.relu %a : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %s = mithril.multiply %r, %a2 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %unused = mithril.exp %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
  mithril.output %s : tensor<4x8xf32>
}

// Fusion on: one element-wise loop nest computes the add, relu and mul.
// FUSED-LABEL: func.func @Layer(
// FUSED-COUNT-1: linalg.generic
// FUSED-NOT: linalg.generic
// FUSED: return

// Fusion off: one linalg.generic per op.
// UNFUSED-LABEL: func.func @Layer(
// UNFUSED-COUNT-3: linalg.generic
// UNFUSED-NOT: linalg.generic
// UNFUSED: return

// By default, CSE merges the two adds and DCE drops the exp no output needs.
// DCE-LABEL: mithril.model @Layer
// DCE-COUNT-1: = add %x
// DCE-NOT: = add %x
// DCE-NOT: = exp

// The canonicalizer and CSE also erase unused pure ops: the exp stays only
// with all three off.
// NODCE-LABEL: mithril.model @Layer
// NODCE: = exp %x

// NOFOLD-LABEL: mithril.model @Layer
// NOFOLD-NOT: = exp

// NOCSE-LABEL: mithril.model @Layer
// NOCSE-COUNT-2: = add %x

mithril.model @Chain(data %x: tensor<4x8xf32>) -> (y: tensor<4x8xf32>) {
  %e = mithril.sigmoid %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %r = mithril.relu %e : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %t = mithril.tanh %r : (tensor<4x8xf32>) -> tensor<4x8xf32>
  mithril.output %t : tensor<4x8xf32>
}

// Memory planning on: each temporary is freed once the next op has read it.
// PLAN-LABEL: func.func @Chain(
// PLAN:      %[[E:.+]] = memref.alloc
// PLAN:      %[[R:.+]] = memref.alloc
// PLAN:      linalg.generic {{.*}} ins(%[[E]] {{.*}} outs(%[[R]]
// PLAN:      memref.dealloc %[[E]]
// PLAN-NEXT: linalg.generic {{.*}} ins(%[[R]]
// PLAN:      memref.dealloc %[[R]]
// PLAN-NEXT: return

// Memory planning off: every temporary lives until the end of the function.
// NOPLAN-LABEL: func.func @Chain(
// NOPLAN:      linalg.generic
// NOPLAN:      linalg.generic
// NOPLAN:      linalg.generic
// NOPLAN:      memref.dealloc
// NOPLAN-NEXT: memref.dealloc
// NOPLAN-NEXT: return
