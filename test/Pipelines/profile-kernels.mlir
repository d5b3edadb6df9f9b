// mithril-profile-kernels: host timer calls around each kernel of the
// bufferized model, named by the logical ops (model paths) it computes.
// RUN: mithril-opt %s --mithril-cpu-pipeline="vector-bits=512 stop-after=bufferize" -mlir-print-debuginfo | mithril-opt --mithril-profile-kernels=first-id=7 | FileCheck %s
// The pipeline adds it at the start of the loops stage with profile=true.
// RUN: mithril-opt %s --mithril-cpu-pipeline="vector-bits=512 stop-after=loops profile=true profile-first-id=3" | FileCheck %s --check-prefix=PIPELINE

mithril.model @Dense(data %x: tensor<8x16xf32>, param %w: tensor<16x32xf32>) -> (y: tensor<8xf32>) {
  %mm = mithril.matmul %x, %w : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32> loc("dense.matmul")
  %y = mithril.relu %mm : (tensor<8x32xf32>) -> tensor<8x32xf32> loc("act")
  %e = mithril.exp %y : (tensor<8x32xf32>) -> tensor<8x32xf32> loc("exp")
  %s = mithril.sum %e {axes = array<i64: 1>, keepdim = false} : (tensor<8x32xf32>) -> tensor<8xf32> loc("total")
  mithril.output %s : tensor<8xf32>
}

// Matmul, relu, exp and sum fuse into one loop nest: one kernel, named by
// the locations its ops kept.
// CHECK: module attributes {mithril.profile_kernels = ["dense.matmul{{[^"]*}}"]}
// CHECK-LABEL: func.func @Dense(
// CHECK: %[[ID:.+]] = arith.constant 7 : i64
// CHECK-NEXT: call @mithrilProfileEnter(%[[ID]]) : (i64) -> ()
// CHECK-NEXT: scf.for
// CHECK: call @mithrilProfileExit(%[[ID]]) : (i64) -> ()
// CHECK-NOT: call @mithrilProfile
// CHECK: return
// CHECK: func.func private @mithrilProfileEnter(i64)
// CHECK: func.func private @mithrilProfileExit(i64)

// PIPELINE: call @mithrilProfileEnter(%c3_i64)
// PIPELINE-NOT: scf.for
// PIPELINE: call @mithrilProfileExit(%c3_i64)
