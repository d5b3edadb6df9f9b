//===- Passes.td - GPU code generation passes ---------------*- tablegen -*-===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//

#ifndef MITHRIL_CODEGEN_GPU_PASSES_TD
#define MITHRIL_CODEGEN_GPU_PASSES_TD

include "mlir/Pass/PassBase.td"

def MithrilGpuHostMemory : Pass<"mithril-gpu-host-memory", "mlir::func::FuncOp"> {
  let summary = "Allocate and copy buffers on the GPU in host code that launches kernels";
  let description = [{
    After kernel outlining, a host function only launches kernels; its
    buffers live on the device. This turns its `memref.alloc`,
    `memref.dealloc` and `memref.copy` into `gpu.alloc`, `gpu.dealloc` and
    `gpu.memcpy` (plain device memory, not managed memory). A constant global
    (`memref.get_global`: a folded range, an attention mask) is copied into
    a device buffer where it is taken, freed at each return. The caller
    passes device pointers for the function's arguments.
  }];
  let dependentDialects = ["mlir::gpu::GPUDialect"];
}

def MithrilGpuSerialKernels : Pass<"mithril-gpu-serial-kernels", "mlir::func::FuncOp"> {
  let summary = "Run host loops that read or write buffers as one-thread GPU kernels";
  let description = [{
    After the parallel loops become `gpu.launch`, the loops with no parallel
    dimension (a reduction to a single value) and the ops of 0-d values (a
    scalar's arithmetic, Adam's bias correction) are still host code, where
    they would dereference device pointers. This wraps each run of such ops
    (with the later ops that use their values) in a `gpu.launch` of one
    block of one thread. Host loops around kernels are searched too. A run
    next to an op that must stay on the host (an allocation, a copy, a call)
    is an error naming the op.
  }];
  let dependentDialects = ["mlir::gpu::GPUDialect", "mlir::arith::ArithDialect"];
}

def MithrilGpuMergeModules : Pass<"mithril-gpu-merge-modules", "mlir::ModuleOp"> {
  let summary = "Put every outlined kernel into one gpu.module";
  let description = [{
    Kernel outlining makes one `gpu.module` per kernel, and each becomes a PTX
    module of its own with its own `.version` header: their concatenation,
    which `mithril-run --emit=ptx` writes, is not one file `ptxas` accepts,
    and the host loads one CUDA module per kernel. This pass moves the symbols
    of every `gpu.module` into the first one (renaming any that clash) and
    points each `gpu.launch_func` at its kernel's new home.
  }];
  let dependentDialects = ["mlir::gpu::GPUDialect"];
}

def MithrilGpuTileContractions
    : Pass<"mithril-gpu-tile-contractions", "mlir::func::FuncOp"> {
  let summary = "Tile contractions on buffers for GPU blocks through shared memory";
  let description = [{
    Rewrites each contraction with a multiply-add body and static shapes
    (`linalg.matmul`, the products of Linear layers, flat-row convolutions,
    ...) as a batch of GEMMs, `C[m, n] += A[m, k] * B[k, n]`: `n` linearizes
    the output dimensions only `B` reads (`B` being the input that reads the
    innermost such dimension, so that neighbouring threads store neighbouring
    elements), `m` those only `A` reads, the dimensions both read index the
    batch, and the reduction dimensions are linearized into `k`. A block of
    tile-size x tile-size threads owns a tile of `C`, each thread up to
    thread-tile x thread-tile of its elements (fewer where `C` is smaller or
    the grid would have fewer than min-blocks blocks);
    per step of `k` the threads copy a tile of `A` and one of `B` into
    shared memory through the operands' own indexing maps (a convolution
    becomes an implicit GEMM with no im2col buffer), then accumulate their
    elements of `C` from the two tiles. Each thread's sums live in a buffer
    indexed by the thread first, which `mithril-gpu-map-forall` turns into
    private memory (registers).

    The output is `scf.forall` loops mapped to `#gpu.block` and `#gpu.thread`
    (see `mithril-gpu-map-forall`). A thread loop reads only what earlier
    thread loops wrote, so the loops run one after the other
    (`scf-forall-to-for`) compute what the kernel computes: with
    `workgroup-memory=false` the tiles are plain buffers and the schedule
    runs on the host (`mithril-cpu-pipeline{gpu-tiles-on-host}`).

    With `tensor-cores`, a contraction of f16 or bf16 operands into float32
    sums runs on tensor cores instead: a block of 2x2 warps (128 threads)
    owns 64x64 of C, each warp 32x32 as 2x4 `nvgpu.mma.sync` products of
    shape 16x8x16; per 32-deep step of `k` the threads stage A as [m][k] and
    B as [n][k] in shared memory (rows padded by 8 elements against bank
    conflicts) and each lane loads its fragments where upstream's nvgpu
    fragment layout puts them. On the host (`workgroup-memory=false`) the
    lanes store their fragments and loops emulate each warp's `mma.sync`,
    finding the fragments by the PTX ISA's figures for m16n8k16, so the host
    run checks the lanes' loads and stores as well as the tiles.
  }];
  let options = [
    Option<"tileSize", "tile-size", "int64_t", "16",
           "Rows, columns and depth of a tile (threads per block: its square)">,
    Option<"threadTile", "thread-tile", "int64_t", "4",
           "Most rows (and columns) of the result one thread computes, tile-size "
           "apart: a block covers up to (tile-size * thread-tile)^2 elements">,
    Option<"minBlocks", "min-blocks", "int64_t", "128",
           "Threads compute fewer elements each while the grid has fewer blocks "
           "than this (an H100 has 132 multiprocessors)">,
    Option<"workgroupMemory", "workgroup-memory", "bool", "true",
           "Put the tiles in GPU shared (workgroup) memory; without it the "
           "schedule is for the host, which emulates each warp's mma.sync">,
    Option<"tensorCores", "tensor-cores", "bool", "true",
           "Products of f16 or bf16 operands into float32 sums on tensor cores "
           "(mma.sync m16n8k16: sm_80 and later)">,
  ];
  let dependentDialects = [
    "mlir::affine::AffineDialect", "mlir::arith::ArithDialect", "mlir::gpu::GPUDialect",
    "mlir::memref::MemRefDialect", "mlir::nvgpu::NVGPUDialect", "mlir::scf::SCFDialect",
    "mlir::vector::VectorDialect"
  ];
}

def MithrilGpuMapForall : Pass<"mithril-gpu-map-forall", "mlir::func::FuncOp"> {
  let summary = "Turn scf.forall loops mapped to GPU blocks and threads into gpu.launch";
  let description = [{
    Each outermost `scf.forall` mapped to `#gpu.block<x|y|z>` becomes a
    `gpu.launch` whose grid is the loop's trip counts and whose block is the
    largest trip counts of the `#gpu.thread` loops inside it. Thread loops
    become their bodies on the thread ids, guarded where the loop is smaller
    than the block, and each is followed by `gpu.barrier`, since the next
    loop reads what it wrote. `memref.alloc` in workgroup memory inside the
    block loop becomes a workgroup attribution of the launch (its
    `memref.dealloc` goes). Loops need static bounds from 0 with step 1.
  }];
  let dependentDialects = [
    "mlir::arith::ArithDialect", "mlir::gpu::GPUDialect", "mlir::scf::SCFDialect"
  ];
}

def MithrilGpuBf16MmaToNvvm : Pass<"mithril-gpu-bf16-mma-to-nvvm"> {
  let summary = "Lower nvgpu.mma.sync of bf16 operands to nvvm.mma.sync";
  let description = [{
    Upstream's `convert-nvgpu-to-nvvm` lowers `nvgpu.mma.sync` of f16, tf32,
    f64 and integer operands, not bf16 ones. This lowers the m16n8k16 form
    with float32 sums (what `mithril-gpu-tile-contractions` emits for bf16
    products): each pair of bf16 values becomes the 32-bit register PTX
    takes (the first value in the low half), the sums four float32
    registers, and the op `nvvm.mma.sync` with bf16 multiplicand types
    (`mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32`). Run it before
    `convert-nvgpu-to-nvvm`; any other bf16 form is an error naming the op.
  }];
  let dependentDialects = [
    "mlir::LLVM::LLVMDialect", "mlir::NVVM::NVVMDialect", "mlir::vector::VectorDialect"
  ];
}

def MithrilGpuReductionsInner : Pass<"mithril-gpu-reductions-inner", "mlir::func::FuncOp"> {
  let summary = "Put the parallel loops of linalg.generic ops outermost, for the GPU mapping";
  let description = [{
    A linalg.generic whose reduction loops come before parallel ones (the sum
    over rows of a bias gradient) lowers to a host loop around a parallel loop,
    and so to one kernel launch per reduction step. This interchanges the
    loops so that every parallel loop comes first (each group keeping its
    order): the op becomes one kernel whose threads loop over the reduction.
    Run it on buffers, before the linalg ops become loops.
  }];
  let dependentDialects = ["mlir::linalg::LinalgDialect"];
}

#endif // MITHRIL_CODEGEN_GPU_PASSES_TD
