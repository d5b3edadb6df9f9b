// Large ops are split across threads with their elementwise epilogue and
// their fill: one scf.forall per chain, which becomes tasks of the MLIR async
// runtime, or with task-pool one call of the host's pool (mithril's JIT).
// Small ops stay on one thread.
// RUN: mithril-opt %s --mithril-cpu-pipeline="target-cpu=sapphirerapids vector-bits=512 stop-after=fusion threads=2" | FileCheck %s --check-prefix=FUSION
// RUN: mithril-opt %s --mithril-cpu-pipeline="target-cpu=sapphirerapids vector-bits=512 stop-after=loops threads=2" | FileCheck %s --check-prefix=LOOPS
// RUN: mithril-opt %s --mithril-cpu-pipeline="target-cpu=sapphirerapids vector-bits=512 stop-after=fusion threads=1" | FileCheck %s --check-prefix=SERIAL
// RUN: mithril-opt %s --mithril-cpu-pipeline="target-cpu=sapphirerapids vector-bits=512 threads=2" | FileCheck %s --check-prefix=LLVM
// RUN: mithril-opt %s --mithril-cpu-pipeline="target-cpu=sapphirerapids vector-bits=512 threads=2 task-pool=true" | FileCheck %s --check-prefix=POOL
// RUN: mithril-opt %s --mithril-cpu-pipeline="target-cpu=znver2 stop-after=fusion threads=1" | FileCheck %s --check-prefix=AVX2

mithril.model @Big(data %x: tensor<256x512xf32>, param %w: tensor<512x512xf32>, param %b: tensor<512xf32>) -> (y: tensor<256x512xf32>) {
  %mm = mithril.matmul %x, %w : (tensor<256x512xf32>, tensor<512x512xf32>) -> tensor<256x512xf32>
  %a = mithril.add %mm, %b : (tensor<256x512xf32>, tensor<512xf32>) -> tensor<256x512xf32>
  %y = mithril.relu %a : (tensor<256x512xf32>) -> tensor<256x512xf32>
  mithril.output %y : tensor<256x512xf32>
}

// In bf16 the product sums in float32 and its epilogue rounds to bf16: a
// result of another element type, still one chain.
mithril.model @BigBF16(data %x: tensor<256x512xbf16>, param %w: tensor<512x512xbf16>, param %b: tensor<512xbf16>) -> (y: tensor<256x512xbf16>) {
  %mm = mithril.matmul %x, %w : (tensor<256x512xbf16>, tensor<512x512xbf16>) -> tensor<256x512xbf16>
  %a = mithril.add %mm, %b : (tensor<256x512xbf16>, tensor<512xbf16>) -> tensor<256x512xbf16>
  %y = mithril.relu %a : (tensor<256x512xbf16>) -> tensor<256x512xbf16>
  mithril.output %y : tensor<256x512xbf16>
}

mithril.model @Small(data %x: tensor<8x16xf32>, param %w: tensor<16x32xf32>) -> (y: tensor<8x32xf32>) {
  %mm = mithril.matmul %x, %w : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
  mithril.output %mm : tensor<8x32xf32>
}

// A matrix-vector product streams its weight, so it is split at less work,
// by weight rows: each thread reads half of the weight.
mithril.model @Gemv(data %x: tensor<16x784xf32>, param %w: tensor<512x784xf32>, param %b: tensor<512xf32>) -> (y: tensor<16x512xf32>) {
  %wt = mithril.transpose %w : (tensor<512x784xf32>) -> tensor<784x512xf32>
  %mm = mithril.matmul %x, %wt : (tensor<16x784xf32>, tensor<784x512xf32>) -> tensor<16x512xf32>
  %a = mithril.add %mm, %b : (tensor<16x512xf32>, tensor<512xf32>) -> tensor<16x512xf32>
  %y = mithril.relu %a : (tensor<16x512xf32>) -> tensor<16x512xf32>
  mithril.output %y : tensor<16x512xf32>
}

// The matmul's columns are split in two halves of 256; the fill, the matmul
// and the bias + relu all run inside the one forall, each chunk writing its
// half of the result. Within a chunk, the product (its reduction whole in
// one cache block) and its bias + relu go block by block of 128 rows: the
// register tiles start from zero, the fill gone, and write a block that
// the epilogue reads back from L2.
// FUSION-LABEL: func.func @Big(
// FUSION: %[[ZERO:.+]] = arith.constant dense<0.000000e+00> : vector<8x32xf32>
// FUSION: scf.forall (%[[J:.+]]) = (0) to (512) step (256) shared_outs(%[[OUT:.+]] = %{{.+}}) -> (tensor<256x512xf32>)
// FUSION-NOT: vector.transfer_write %[[ZERO]]
// FUSION: scf.for %{{.+}} = %c0 to %c256 step %c128 iter_args(%{{.+}}) -> (tensor<256x256xf32>)
// FUSION: scf.for %{{.+}} = %c0 to %c512 step %c1 iter_args(%{{.+}} = %[[ZERO]]) -> (vector<8x32xf32>)
// FUSION: arith.mulf {{.*}} : vector<8x32xf32>
// FUSION: arith.maximumf {{.*}} : vector<8x32xf32>
// FUSION: tensor.insert_slice %{{.+}} [128, 256] [1, 1] : tensor<128x256xf32> into tensor<256x256xf32>
// FUSION: scf.forall.in_parallel
// FUSION-NEXT: tensor.parallel_insert_slice %{{.+}} into %[[OUT]][0, %[[J]]] [256, 256] [1, 1]
// FUSION-NOT: scf.forall
// FUSION-LABEL: func.func @BigBF16(
// FUSION: scf.forall (%[[J:.+]]) = (0) to (512) step (256) shared_outs(%[[OUT:.+]] = %{{.+}}) -> (tensor<256x512xbf16>)
// FUSION: arith.maximumf {{.*}} : vector<8x32xf32>
// FUSION: arith.truncf {{.*}} : vector<8x32xf32> to vector<8x32xbf16>
// FUSION: scf.forall.in_parallel
// FUSION-NEXT: tensor.parallel_insert_slice %{{.+}} into %[[OUT]][0, %[[J]]] [256, 256] [1, 1] : tensor<256x256xbf16>
// FUSION-NOT: scf.forall
// FUSION-LABEL: func.func @Small(
// FUSION-NOT: scf.forall

// Each chunk also sums its own lanes, from zeros in registers, and
// applies the bias and relu: one forall, no fill or epilogue outside it
// (the zeros outside were a kernel of their own, copied for each chunk).
// The reduction's two parts (400 + 384, for the 48 KiB L1) run in the same
// chunks, the second adding its lane sums to the first's: one forall for
// the whole layer, not one a part. The bias and relu are in the second
// part's tiles, on their sums in registers: no pass of their own.
// FUSION-LABEL: func.func @Gemv(
// FUSION-NOT: linalg.fill
// FUSION: tensor.extract_slice %arg1[0, 0] [512, 400] [1, 1]
// FUSION: tensor.extract_slice %arg1[0, 400] [512, 384] [1, 1]
// FUSION-NOT: scf.forall
// FUSION: scf.forall (%{{.+}}) = (0) to (512) step (256) {{.*}} -> (tensor<16x512xf32>)
// FUSION: vector.extract %{{.+}}[3, 3] : vector<16xf32> from vector<4x4x16xf32>
// FUSION: arith.addf {{.*}} : vector<16xf32>
// FUSION: vector.extract %{{.+}}[3, 3] : vector<16xf32> from vector<4x4x16xf32>
// FUSION: arith.addf {{.*}} : vector<16xf32>
// FUSION: arith.maximumf {{.*}} : vector<4x4xf32>
// FUSION-NEXT: vector.transfer_write
// FUSION-NOT: vector<8x32xf32>
// FUSION: scf.forall.in_parallel
// FUSION-NOT: arith.maximumf
// FUSION-NOT: scf.forall
// FUSION: return

// SERIAL-NOT: scf.forall

// A matrix-vector tile holds 4 x 4 accumulators of 16 lanes with AVX-512's
// 32 registers (above), 2 x 4 of 8 lanes with AVX2's 16: one ymm register
// each, 8 of the 16 (4 x 2 of 16 lanes took all 16, and LLVM spilled
// accumulators in the inner loop).
// AVX2-LABEL: func.func @Gemv(
// AVX2: vector.extract %{{.+}}[1, 3] : vector<8xf32> from vector<2x4x8xf32>
// AVX2-NOT: xf32> from vector<{{.*}}x16xf32>
// AVX2-NOT: vector.multi_reduction

// The chunks become async tasks: a group, one task added per chunk, and an
// await of the group before the function returns.
// LOOPS-LABEL: func.func @Big(
// LOOPS: async.runtime.create_group
// LOOPS: async.runtime.add_to_group
// LOOPS: async.runtime.await
// LOOPS-LABEL: func.func @Small(
// LOOPS-NOT: async.runtime
// LOOPS: return

// With task-pool: no async runtime, one call of the pool per split op, with
// the chunk function's address.
// POOL-NOT: mlirAsyncRuntime
// POOL-LABEL: llvm.func @Big(
// POOL: %[[CHUNK:.+]] = llvm.mlir.addressof @Big_chunk : !llvm.ptr
// POOL: llvm.call @mithrilParallelFor(%[[CHUNK]], %{{.+}}, %{{.+}}) : (!llvm.ptr, !llvm.ptr, i64) -> ()
// POOL-LABEL: llvm.func @Big_chunk(
// POOL-LABEL: llvm.func @Small(
// POOL-NOT: mithrilParallelFor
// POOL: llvm.return

// LLVM: llvm.call @mlirAsyncRuntimeCreateGroup
// LLVM: llvm.call @mlirAsyncRuntimeAwaitAllInGroup
