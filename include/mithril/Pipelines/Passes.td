//===- Passes.td - code generation passes of the pipelines --*- tablegen -*-===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//

#ifndef MITHRIL_PIPELINES_PASSES_TD
#define MITHRIL_PIPELINES_PASSES_TD

include "mlir/Pass/PassBase.td"

def MithrilCpuSchedule : Pass<"mithril-cpu-schedule", "mlir::ModuleOp"> {
  let summary = "Tile and vectorize linalg on tensors for the host CPU";
  let description = [{
    Tiles every linalg op for the host's vector registers (`vector-bits`):
    matmuls to a register block of two registers per row, 8 rows by 32
    columns by 1 with AVX-512 (sixteen 512-bit accumulators in f32; 8 x 16 in
    f64), 6 x 16 with AVX2 (twelve of its sixteen 256-bit registers),
    other ops to 8 x 32 tiles of their last two loops; then applies a
    transform-dialect script that vectorizes the tiles and hoists the matmul
    accumulators out of the reduction loop while still on tensors. Run it
    after fusion and before bufferization.

    Shapes get their own schedules: a matmul of at most 16 rows on a
    transposed weight becomes a matrix-vector product on the weight's layout
    whose tiles sum 16 lanes of partial sums in registers; convolutions and
    the weight gradients the linalg lowering marks get two-level tiles whose
    reduction loops carry only the accumulator; pooling windows and
    transposes get row and 16 x 16 register tiles; a matmul whose columns are
    no multiple of 32 is split into whole tiles and the rest.

    Matmuls larger than a cache block (`cache-tile`, rows x columns x
    reduction, 128 x 256 x 256 by default) are first tiled into such blocks,
    columns outermost and rows innermost, and each block of the right operand
    is packed into 32-column panels that the register tiles read
    contiguously (straight from a transposed weight's own layout).

    With `threads` above 1, an op with enough work to pay for a thread
    handoff (`min-parallel-work` loop iterations; an eighth of that for a
    matrix-vector product and a sixteenth for an elementwise op, which both
    stream memory) is first split into `threads` chunks along one parallel
    loop by an `scf.forall`, with the elementwise ops that consume it and the
    fill that initializes it (the pipeline runs the chunks as tasks of the
    MLIR async runtime, which mithril's runtime starts on its own task pool).
  }];
  let options = [
    Option<"threads", "threads", "unsigned", /*default=*/"1",
           "Split large ops into this many parallel chunks">,
    Option<"minParallelWork", "min-parallel-work", "int64_t", /*default=*/"1 << 19",
           "The loop iterations an op needs before it is split across threads">,
    ListOption<"cacheTile", "cache-tile", "int64_t",
               "Cache block of large matmuls: rows, columns, reduction (default 128,256,256)">,
    Option<"vectorBits", "vector-bits", "unsigned", /*default=*/"0",
           "The vector registers to size register tiles for: 512 (AVX-512: 32 registers, "
           "8 x 32 f32 matmul tiles), 256 (AVX2: 16 registers, 6 x 16), 128, or 0: the "
           "host's">,
    Option<"targetCpu", "target-cpu", "std::string", /*default=*/"",
           "The x86-64 CPU to pick kernels for (its vector registers unless vector-bits is "
           "given, and its dot products: vdpbf16ps for bf16 matmuls with AVX512-BF16, "
           "vpdpbusd for int8 ones with AVX512-VNNI); "
           "empty: the host">
  ];
  let dependentDialects = [
    "mlir::transform::TransformDialect",
    "mlir::vector::VectorDialect",
    "mlir::scf::SCFDialect",
    "mlir::tensor::TensorDialect",
    "mlir::arith::ArithDialect",
    "mlir::x86vector::X86VectorDialect"
  ];
}

def MithrilStridedCopies : Pass<"mithril-strided-copies", "mlir::ModuleOp"> {
  let summary = "Copy strided static buffers in loops instead of the runtime's memrefCopy";
  let description = [{
    Bufferization copies a padded input into its padded buffer, or a strided
    view into an output buffer, with `memref.copy`. Between buffers that are
    not both contiguous that becomes a call of the C runner utilities'
    `memrefCopy`, which walks the elements one index computation at a time
    (half the time of a small convolution). This pass turns every such copy
    with static shapes into a `linalg.copy`, which lowers to loops with a
    unit-stride innermost loop that LLVM vectorizes. Contiguous copies stay
    `memref.copy` (a `memcpy`). Run it after bufferization.
  }];
  let dependentDialects = ["mlir::linalg::LinalgDialect"];
}

def MithrilFuseElementwise : Pass<"mithril-fuse-elementwise", "mlir::ModuleOp"> {
  let summary = "Fuse elementwise linalg ops and fold reshapes into them, keeping reshapes well-formed";
  let description = [{
    Upstream's `linalg-fuse-elementwise-ops` with one restriction: a reshape
    is folded into a linalg op by expanding the op's loops only where every
    group of the expanded shape has at most one dynamic size. Expanding a
    `tensor<3x?xf32>` operand into `tensor<3x?x?xf32>` (a `Reshape(-1)` of a
    dynamic input feeding a Linear) needs sizes no static analysis can split,
    and the memref lowering of such an `expand_shape` crashed. Those reshapes
    stay as they are: a collapse of a contiguous tensor is free.
  }];
  let dependentDialects = ["mlir::linalg::LinalgDialect", "mlir::tensor::TensorDialect",
                           "mlir::affine::AffineDialect"];
}

def MithrilExpandBF16 : Pass<"mithril-expand-bf16", "mlir::ModuleOp"> {
  let summary = "Lower bfloat16 conversions to integer arithmetic";
  let description = [{
    `arith.extf` from and `arith.truncf` to bfloat16 become integer shifts and
    round-to-nearest-even arithmetic on the bits (upstream's bf16 expansion
    patterns). Without it LLVM calls `__truncsfbf2` on CPUs without
    AVX512-BF16, which the JIT cannot resolve on hosts whose libgcc predates
    it, and which serializes the conversion one element at a time. Run it
    before the lowering to LLVM.
  }];
  let dependentDialects = ["mlir::arith::ArithDialect", "mlir::vector::VectorDialect"];
}

def MithrilX86DotProducts : Pass<"mithril-x86-dot-products", "mlir::ModuleOp"> {
  let summary = "The i8 contractions of the CPU schedule's register tiles as vpdpbusd";
  let description = [{
    `mithril-cpu-schedule` writes each 16 columns of an int8 register tile
    (AVX512-VNNI targets) as a `vector.contract` of one row's quad of
    unsigned bytes (`arith.extui` of a `vector<4xi8>`) with 16 columns' quads
    of signed bytes (`arith.extsi` of a `vector<16x4xi8>`) into a
    `vector<16xi32>`: what one `vpdpbusd` computes. This pass, run after
    bufferization (which an intrinsic call would stop), rewrites exactly
    those contractions into `llvm.x86.avx512.vpdpbusd.512`; any other
    contraction is left to the vector lowering.
  }];
  let dependentDialects = ["mlir::LLVM::LLVMDialect", "mlir::vector::VectorDialect"];
}

def MithrilLowerScalarTransfers : Pass<"mithril-lower-scalar-transfers", "mlir::ModuleOp"> {
  let summary = "Lower vector transfers of one element to memref loads and stores";
  let description = [{
    A transfer of a 0-d (or one-element) vector from a buffer whose innermost
    stride is not 1 (a strided view, as the phases of a strided convolution
    on a small input are) is left alone by `convert-vector-to-scf`, which
    unrolls ranks above 0, and by the LLVM lowering, which wants a unit
    innermost stride: it reached LLVM unconverted. This pass rewrites every
    such transfer into a `memref.load` and a broadcast (or an extract and a
    `memref.store`) with upstream's scalar transfer patterns. Run it after
    bufferization, before the lowering to LLVM.
  }];
  let dependentDialects = ["mlir::memref::MemRefDialect", "mlir::vector::VectorDialect"];
}

def MithrilDeallocAtLastUse : Pass<"mithril-dealloc-at-last-use", "mlir::ModuleOp"> {
  let summary = "Free each buffer right after its last use";
  let description = [{
    Upstream's buffer deallocation places every `memref.dealloc` at the end
    of the block that allocated the buffer: in a model's function, at its
    end, so that every temporary lives for the whole run and the peak memory
    is the sum of all of them. This pass moves each unconditional dealloc of
    a buffer allocated in the same block to just after the last op of that
    block that uses the buffer or any value derived from it (views, casts,
    reshapes; an op with regions counts as a whole). Buffers whose lifetimes
    do not overlap then take turns in the same memory: the runtime's buffer
    cache hands a freed block to the next allocation of its size. Run it
    after the deallocation pipeline, while the code is still structured
    (parallel loops wait for their tasks where they stand).
  }];
  let dependentDialects = ["mlir::memref::MemRefDialect"];
}

def MithrilProfileKernels : Pass<"mithril-profile-kernels", "mlir::ModuleOp"> {
  let summary = "Time each kernel of the bufferized model through host timers";
  let description = [{
    Wraps every kernel at the top level of each function (a loop nest, a
    linalg op, a copy) in calls to `mithrilProfileEnter(id)` and
    `mithrilProfileExit(id)`, which the host provides (mithril's JIT
    accumulates calls and time per kernel; `ml.profile()` and
    `mithril-run --profile` report them). Ids count from `first-id`; the
    module's `mithril.profile_kernels` attribute names kernel `first-id + i`
    by what it computes and the logical terminals in its location. Run it
    after bufferization, before loops are lowered; only when profiling.
  }];
  let options = [
    Option<"firstId", "first-id", "int64_t", /*default=*/"0", "The first kernel's id">
  ];
  let dependentDialects = ["mlir::func::FuncDialect", "mlir::arith::ArithDialect"];
}

#endif // MITHRIL_PIPELINES_PASSES_TD
