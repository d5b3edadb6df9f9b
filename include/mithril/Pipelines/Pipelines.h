//===- Pipelines.h - the named compilation pipelines ------------*- C++ -*-===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
// Pipelines are C++ builders shared by mithril-opt, mithril-run and Python.
//
//===----------------------------------------------------------------------===//

#ifndef MITHRIL_PIPELINES_PIPELINES_H
#define MITHRIL_PIPELINES_PIPELINES_H

#include "mithril/Codegen/CPU/CpuTarget.h"
#include "mithril/Codegen/CPU/Passes.h"
#include "mithril/Codegen/GPU/Passes.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"
#include "mlir/Pass/PassRegistry.h"

namespace mithril {

#define GEN_PASS_DECL
#include "mithril/Pipelines/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "mithril/Pipelines/Passes.h.inc"

/// What to compile: the model, its shapes, what to differentiate and how to
/// update the parameters. Both pipelines take these options, and
/// copyModelOptions passes them on.
template <typename Derived>
struct ModelPipelineOptions : public mlir::PassPipelineOptions<Derived> {
  template <typename T> using Option = mlir::detail::PassOptions::Option<T>;
  template <typename T> using ListOption = mlir::detail::PassOptions::ListOption<T>;

  Option<std::string> entry{*this, "entry",
                            llvm::cl::desc("The root model (default: every un-instantiated model)"),
                            llvm::cl::init("")};
  ListOption<std::string> shapes{*this, "shapes",
                                 llvm::cl::desc("Input shapes as name:DxD")};
  ListOption<std::string> discard{*this, "discard",
                                  llvm::cl::desc("Output terminals to drop")};
  Option<bool> dynamicData{
      *this, "dynamic-data",
      llvm::cl::desc("Sizes of data inputs left dynamic stay dynamic (mithril-infer-shapes)"),
      llvm::cl::init(false)};
  Option<bool> gradients{*this, "gradients",
                         llvm::cl::desc("Differentiate the entry model (mithril-autodiff)"),
                         llvm::cl::init(false)};
  ListOption<std::string> wrt{*this, "wrt",
                              llvm::cl::desc("With gradients: the inputs to differentiate")};
  ListOption<std::string> seeds{*this, "seeds",
                                llvm::cl::desc("With gradients: the outputs to seed")};
  Option<std::string> optimizer{
      *this, "optimizer",
      llvm::cl::desc("With gradients: append this optimizer's update (sgd or adam)"),
      llvm::cl::init("")};
  Option<double> momentum{*this, "momentum", llvm::cl::desc("SGD momentum"), llvm::cl::init(0.0)};
  Option<double> weightDecay{*this, "weight-decay", llvm::cl::desc("L2 weight decay"),
                             llvm::cl::init(0.0)};
  Option<bool> lossScaling{
      *this, "loss-scaling",
      llvm::cl::desc("With optimizer: dynamic loss scaling (mithril-optimizer's loss-scaling)"),
      llvm::cl::init(false)};
  Option<std::string> precision{
      *this, "precision",
      llvm::cl::desc("Compute the model in bf16 or f16 (mithril-mixed-precision): its values "
                     "between ops take that type; the terminals keep float32 unless "
                     "precision-terminals is set"),
      llvm::cl::init("")};
  Option<std::string> quantize{
      *this, "quantize",
      llvm::cl::desc("int8: matrix products of weights in 8-bit integers, for inference "
                     "(mithril-quantize-int8)"),
      llvm::cl::init("")};
  Option<bool> quantizeObserve{
      *this, "quantize-observe",
      llvm::cl::desc("With quantize=int8: quantize nothing, and output each quantized "
                     "product's activation range [min x, max x] as calibration:<i> (a "
                     "calibration run)"),
      llvm::cl::init(false)};
  ListOption<double> activationScales{
      *this, "activation-scales",
      llvm::cl::desc("With quantize=int8: static symmetric activation scales, one per "
                     "quantized product; default: each call's range")};
  ListOption<double> activationRanges{
      *this, "activation-ranges",
      llvm::cl::desc("With quantize=int8: static activation ranges, a lo, hi pair per "
                     "quantized product (from a quantize-observe run); default: each call's")};
  Option<bool> precisionTerminals{
      *this, "precision-terminals",
      llvm::cl::desc("With precision: the terminals take the low-precision type too"),
      llvm::cl::init(false)};
  Option<unsigned> checkpointSegments{
      *this, "checkpoint-segments",
      llvm::cl::desc("With gradients: gradient checkpointing in this many runs of forward ops "
                     "(mithril-autodiff); CSE, which would merge the recomputed ops back, "
                     "does not run after autodiff then"),
      llvm::cl::init(0)};
  Option<unsigned> tensorParallel{
      *this, "tensor-parallel",
      llvm::cl::desc("Split Linear layer pairs over this many ranks, the first by columns and "
                     "the second by rows (mithril-tensor-parallel); 1: none"),
      llvm::cl::init(1)};
  Option<bool> allReduceGradients{
      *this, "all-reduce-gradients",
      llvm::cl::desc("With gradients: sum the parameter gradients over the ranks of a "
                     "data-parallel run before the optimizer uses them "
                     "(mithril-all-reduce-gradients)"),
      llvm::cl::init(false)};
  Option<unsigned> windowRanks{
      *this, "window-ranks",
      llvm::cl::desc("The data group's ranks share one machine's window of "
                     "all-reduce operands, this many segments: the code adds "
                     "them where they lie itself, fused with what uses the sums "
                     "(the optimizer's update); 0 or 1: the runtime sums them"),
      llvm::cl::init(0)};
};

/// Copies the ModelPipelineOptions fields between option structs with those
/// names (either pipeline's, or the runtime's CompileOptions).
template <typename To, typename From> void copyModelOptions(To &to, const From &from) {
  to.entry = from.entry;
  to.shapes = from.shapes;
  to.discard = from.discard;
  to.gradients = from.gradients;
  to.wrt = from.wrt;
  to.seeds = from.seeds;
  to.optimizer = from.optimizer;
  to.momentum = from.momentum;
  to.weightDecay = from.weightDecay;
  to.lossScaling = from.lossScaling;
  to.checkpointSegments = from.checkpointSegments;
  to.allReduceGradients = from.allReduceGradients;
  to.windowRanks = from.windowRanks;
  to.tensorParallel = from.tensorParallel;
  to.precision = from.precision;
  to.precisionTerminals = from.precisionTerminals;
  to.quantize = from.quantize;
  to.quantizeObserve = from.quantizeObserve;
  to.activationScales = from.activationScales;
  to.activationRanges = from.activationRanges;
}

struct CpuPipelineOptions : public ModelPipelineOptions<CpuPipelineOptions> {
  // Graph-level optimizations, each of which can be switched off (the
  // numbers stay the same): the Python package's `optimizations=` and
  // `optimization_level=`, mithril-run's --optimization-level and --disable.
  Option<bool> fold{*this, "fold",
                    llvm::cl::desc("Canonicalize and fold constants after the graph-level "
                                   "stages (shapes, autodiff, linalg, fusion)"),
                    llvm::cl::init(true)};
  Option<bool> cse{*this, "cse",
                   llvm::cl::desc("Common subexpression elimination after the graph-level "
                                  "stages"),
                   llvm::cl::init(true)};
  Option<bool> dce{*this, "dce",
                   llvm::cl::desc("Remove the ops no output needs (mithril-dce; outputs "
                                  "named in `discard` are dropped either way, and fold and "
                                  "cse erase unused pure ops too)"),
                   llvm::cl::init(true)};
  Option<bool> fusion{*this, "fusion",
                      llvm::cl::desc("Fuse element-wise producers into their consumers "
                                     "(mithril-fuse-elementwise)"),
                      llvm::cl::init(true)};
  Option<bool> schedule{*this, "schedule",
                        llvm::cl::desc("Tile and vectorize for the host (mithril-cpu-schedule)"),
                        llvm::cl::init(true)};
  Option<bool> memoryPlanning{
      *this, "memory-planning",
      llvm::cl::desc("Free each temporary right after its last use (mithril-dealloc-at-last-"
                     "use) instead of at the end of the function, so that temporaries whose "
                     "lifetimes do not overlap share memory"),
      llvm::cl::init(true)};
  Option<bool> approximateMath{
      *this, "approximate-math",
      llvm::cl::desc("Compute float32 exp, tanh, erf and log1p as vector polynomials (mithril-"
                     "approximate-math, a few ulps from libm's) instead of one libm call per "
                     "element"),
      llvm::cl::init(true)};
  Option<bool> gpuTilesOnHost{
      *this, "gpu-tiles-on-host",
      llvm::cl::desc("Tile contractions as mithril-gpu-pipeline does (shared-memory tiles in "
                     "block and thread loops) and run those loops in order on the host: the "
                     "GPU schedule's numbers, checked without a GPU (implies schedule=false)"),
      llvm::cl::init(false)};
  Option<unsigned> vectorBits{
      *this, "vector-bits",
      llvm::cl::desc("The vector registers register tiles are sized for (mithril-cpu-schedule): "
                     "512 (AVX-512), 256 (AVX2), 128, or 0: the host's"),
      llvm::cl::init(0)};
  Option<std::string> targetCpu{
      *this, "target-cpu",
      llvm::cl::desc("The x86-64 CPU the schedule picks its kernels for (znver2, znver4, "
                     "sapphirerapids, ...): its vector registers, unless vector-bits is given, "
                     "and its bf16 and int8 dot products; empty: the host's"),
      llvm::cl::init("")};
  Option<unsigned> threads{
      *this, "threads",
      llvm::cl::desc("Threads for large ops: above 1, they are split into chunks that run on "
                     "the MLIR async runtime (libmlir_async_runtime), which the code then needs, "
                     "or with task-pool on the host's pool"),
      llvm::cl::init(1)};
  Option<bool> taskPool{
      *this, "task-pool",
      llvm::cl::desc("With threads: run each split op's chunks through one call of "
                     "mithrilParallelFor, which the host provides (mithril's JIT: its task "
                     "pool), instead of tasks of the MLIR async runtime (mithril-dispatch-chunks)"),
      llvm::cl::init(false)};
  Option<bool> runtimeAllocator{
      *this, "runtime-allocator",
      llvm::cl::desc("Allocate buffers through _mlir_memref_to_llvm_alloc/_free, which the "
                     "host provides (mithril's JIT: a cache that reuses buffers across runs), "
                     "instead of malloc/free"),
      llvm::cl::init(false)};
  Option<bool> indexErrors{
      *this, "index-errors",
      llvm::cl::desc("Report data indices out of range (embedding rows, class indices) "
                     "through mithrilIndexError, which the host provides (mithril's JIT: an "
                     "error of the run); without it they are clamped into range"),
      llvm::cl::init(false)};
  Option<bool> outlineKernels{
      *this, "outline-kernels",
      llvm::cl::desc("Move each large kernel into a function of its own, so that LLVM can "
                     "compile the model's code in pieces on several threads "
                     "(mithril-outline-kernels)"),
      llvm::cl::init(false)};
  Option<bool> outlineSharedOnly{
      *this, "outline-shared-only",
      llvm::cl::desc("With outline-kernels: move only the kernels that are the same as another's "
                     "into a function, which they then share (compiled once)"),
      llvm::cl::init(false)};
  Option<bool> profile{*this, "profile",
                       llvm::cl::desc("Time each kernel through mithrilProfileEnter/Exit, "
                                      "which the host provides (mithril-profile-kernels)"),
                       llvm::cl::init(false)};
  Option<int64_t> profileFirstId{*this, "profile-first-id",
                                 llvm::cl::desc("With profile: the first kernel's id"),
                                 llvm::cl::init(0)};
  Option<std::string> stopAfter{
      *this, "stop-after",
      llvm::cl::desc("Stop after a stage: flatten, shapes, autodiff, linalg, fusion, "
                     "bufferize, loops or llvm (the default: the whole pipeline)"),
      llvm::cl::init("llvm")};
  Option<std::string> startAfter{
      *this, "start-after",
      llvm::cl::desc("Skip the stages up to and including this one (the input has been "
                     "through them already)"),
      llvm::cl::init("")};
};

struct GpuPipelineOptions : public ModelPipelineOptions<GpuPipelineOptions> {
  Option<std::string> chip{*this, "chip", llvm::cl::desc("The GPU architecture (sm_80, sm_90)"),
                           llvm::cl::init("sm_90")};
  Option<std::string> features{*this, "features",
                               llvm::cl::desc("PTX features; the default follows the chip"),
                               llvm::cl::init("")};
  Option<std::string> libdevice{
      *this, "libdevice",
      llvm::cl::desc("libdevice.10.bc, linked into the kernels for math functions (default: "
                     "found under $CUDA_ROOT, $CUDA_HOME, $CUDA_PATH or /usr/local/cuda; "
                     "'none': not named, though gpu-module-to-binary still links the one "
                     "under $CUDA_ROOT/$CUDA_HOME/$CUDA_PATH)"),
      llvm::cl::init("")};
  Option<std::string> format{*this, "format",
                             llvm::cl::desc("Kernel format: isa (PTX text), bin (cubin, needs "
                                            "ptxas) or fatbin"),
                             llvm::cl::init("isa")};
  Option<std::string> stopAfter{
      *this, "stop-after",
      llvm::cl::desc("Stop after a stage: the CPU pipeline's up to bufferize, then kernels "
                     "(outlined gpu.launch_func) or binary (the default)"),
      llvm::cl::init("binary")};
};

/// The CUDA toolkit's libdevice.10.bc, or "" where none is found.
std::string findLibdevice();

/// What is wrong with the options (an unknown stage, format or chip), or "".
std::string checkGpuPipelineOptions(const GpuPipelineOptions &options);

/// Builds the NVIDIA GPU pipeline: the CPU pipeline's front end through
/// bufferization, then contractions tiled through shared memory and other
/// parallel loops tiled onto blocks and threads, kernel outlining, device
/// buffers in host code, NVVM and gpu-module-to-binary. Fails where
/// checkGpuPipelineOptions finds fault with the options.
llvm::LogicalResult buildGpuPipeline(mlir::OpPassManager &pm,
                                     const GpuPipelineOptions &options);

/// The PTX feature level a chip needs (sm_90 needs +ptx80; sm_80 +ptx70;
/// sm_75 +ptx63): the first PTX ISA version LLVM 22 accepts for it.
std::string defaultPtxFeatures(llvm::StringRef chip);

/// The stages of the CPU pipeline, in order.
llvm::ArrayRef<llvm::StringRef> getCpuPipelineStages();

/// What is wrong with the options (an unknown stage, or stages out of
/// order), or "".
std::string checkCpuPipelineOptions(const CpuPipelineOptions &options);

// CpuTarget, cpuTarget() and vectorRegisterBits(): mithril/Codegen/CPU/CpuTarget.h.

/// Builds the CPU pipeline: flatten, infer shapes, simplify, differentiate,
/// decompose, lower to linalg, fuse, bufferize, lower to loops and to the
/// LLVM dialect, from after `start-after` up to `stop-after`. Fails where
/// checkCpuPipelineOptions finds fault with the options.
llvm::LogicalResult buildCpuPipeline(mlir::OpPassManager &pm,
                                     const CpuPipelineOptions &options);

/// Registers the named pipelines (mithril-cpu-pipeline, mithril-gpu-pipeline).
void registerPipelines();

} // namespace mithril

#endif // MITHRIL_PIPELINES_PIPELINES_H
