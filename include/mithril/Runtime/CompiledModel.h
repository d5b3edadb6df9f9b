//===- CompiledModel.h - a model compiled for the host CPU ------*- C++ -*-===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
// The library behind mithril-run and the Python package: compile mithril IR
// through mithril-cpu-pipeline, JIT it with the ExecutionEngine, and call it
// on caller-owned buffers.
//
//===----------------------------------------------------------------------===//

#ifndef MITHRIL_RUNTIME_COMPILEDMODEL_H
#define MITHRIL_RUNTIME_COMPILEDMODEL_H

#include "mithril/Dialect/Mithril/IR/MithrilDialect.h"
#include "mithril/Runtime/Array.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Error.h"

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace mlir {
class ExecutionEngine;
class MLIRContext;
} // namespace mlir

namespace llvm::orc {
class LLJIT;
} // namespace llvm::orc

namespace mithril::runtime {

struct CudaRuntime;

/// An input or output terminal of a compiled model.
struct TerminalInfo {
  std::string name;
  InputKind kind = InputKind::Data; // inputs only
  DType dtype = DType::F32;
  llvm::SmallVector<int64_t> shape;
  /// A parameter mithril-tensor-parallel splits: the axis of the global
  /// parameter whose slice `shape` is (-1: not split).
  int64_t tensorSplit = -1;
  /// With tensorSplit: the axis is this many equal blocks, each split (the
  /// rank's slice is its part of every block).
  int64_t tensorBlocks = 1;
  /// Outputs only: the input whose buffer this output may be given (the
  /// caller then passes one buffer for both, and the output overwrites the
  /// input, as an optimizer updates a parameter in place); empty if it needs
  /// its own (mithril-mark-in-place-updates proves which may).
  std::string inPlaceOf;
};

struct CompileOptions {
  /// The model to compile (default: the only model no instance refers to).
  std::string entry;
  /// Input shapes as `name:DxD`.
  std::vector<std::string> shapes;
  /// Output terminals to drop.
  std::vector<std::string> discard;
  /// Also compute gradients (mithril-autodiff): of the inputs in `wrt`
  /// (default: the parameters), seeded at the outputs in `seeds` (default:
  /// every float output), as extra terminals `grad:<name>`.
  bool gradients = false;
  std::vector<std::string> wrt, seeds;
  /// With gradients: append an optimizer step ("sgd" or "adam"); see
  /// mithril-optimizer for the extra terminals.
  std::string optimizer;
  double momentum = 0.0, weightDecay = 0.0;
  /// With optimizer: dynamic loss scaling (float16 training; see the
  /// mithril-optimizer pass).
  bool lossScaling = false;
  /// With gradients: gradient checkpointing in this many runs of forward
  /// ops (mithril-autodiff's checkpoint-segments; 0: off).
  unsigned checkpointSegments = 0;
  /// Tensor parallelism over this many ranks (mithril-tensor-parallel: Linear
  /// layer pairs split column- then row-wise); 1: none.
  unsigned tensorParallel = 1;
  /// With gradients: sum the parameter gradients over the ranks of a
  /// data-parallel run (mithril-all-reduce-gradients); the code then calls
  /// MPI through the runtime, which initDistributed() must have started.
  bool allReduceGradients = false;
  /// With allReduceGradients: the data group's ranks that share one
  /// machine's window of the sums' operands, whose code adds the operands
  /// there itself (the pipeline's `window-ranks`; 1: the runtime sums them).
  /// compileFresh asks the MPI runtime where it is 0.
  unsigned windowRanks = 0;
  /// Compute in "bf16" or "f16" (mithril-mixed-precision); empty: the model's
  /// own types. `precisionTerminals`: the terminals take that type too.
  std::string precision;
  bool precisionTerminals = false;
  /// "int8": matrix products of weights in 8-bit integers (inference only).
  std::string quantize;
  /// With quantize: a calibration run (each product's activation range
  /// [min x, max x] as an output calibration:<i>), or static activation
  /// ranges (lo, hi pairs) from one, or static symmetric scales.
  bool quantizeObserve = false;
  std::vector<double> activationScales;
  std::vector<double> activationRanges;
  /// An x86 CPU to compile for ("znver2", "skylake-avx512",
  /// "sapphirerapids"), whose vector registers the schedule then sizes its
  /// tiles for; empty: the host. Emitted code may target any CPU; JIT code
  /// only one whose features the host has (AVX2 code on an AVX-512 host).
  std::string targetCpu;
  /// Where the code runs: "cpu", or "cuda" (NVIDIA GPUs, through
  /// mithril-gpu-pipeline) with the architecture `gpuChip`. "cuda" loads
  /// libmithril_cuda_runtime, and fails with "no CUDA device" where it or a
  /// GPU is missing; run() then copies the arguments to and from the GPU.
  std::string target = "cpu";
  std::string gpuChip = "sm_90";
  /// With target "cpu": tile contractions as the GPU pipeline does (shared
  /// memory tiles in block and thread loops) and run those loops in order on
  /// the host, to check the GPU schedule's numbers without a GPU.
  bool gpuTilesOnHost = false;
  /// Keep the input dimensions that `shapes` does not fix dynamic: the code
  /// then runs with any sizes of them (inference only: autodiff needs static
  /// shapes), and outputShapes() gives each run's output shapes.
  bool dynamicShapes = false;
  /// Threads for large ops on the CPU (0: one per hardware thread). Above 1
  /// the code runs them on the MLIR async runtime's thread pool.
  unsigned threads = 0;
  /// Threads that compile the model's LLVM code on the CPU, each a piece of
  /// it (its kernels in functions of their own: mithril-outline-kernels);
  /// 0: one per CPU this process may run on, at most 8. Above 1, the
  /// pipeline's passes that work function by function also run on threads,
  /// one per CPU of the process, for the time of the compile. Any number
  /// gives the same results.
  unsigned compileThreads = 0;
  /// LLVM optimization level of the JIT. 2 rather than 3: the code is
  /// already tiled and vectorized, and -O3 ran no faster (MLP, CNN, matmuls
  /// and convolutions measured) while taking up to 1.5x as long to compile.
  unsigned optLevel = 2;
  /// Graph-level optimizations (mithril-cpu-pipeline's fold, cse, dce and
  /// fusion) and the host schedule (tiling and vectorization): switching any
  /// off gives the same numbers, slower. setOptimizationLevel and
  /// setOptimization set them by name.
  bool fold = true, cse = true, dce = true, fusion = true, schedule = true;
  /// Temporaries freed at their last use (mithril-dealloc-at-last-use).
  bool memoryPlanning = true;
  /// float32 exp, tanh, erf, log1p as vector polynomials (mithril-approximate-
  /// math, a few ulps) rather than libm's, called once per element.
  bool approximateMath = true;
  /// Time each kernel (mithril-profile-kernels): profileRecords() reports
  /// their calls and time.
  bool profile = false;
  /// With profile: the first kernel id, which compile() reserves.
  int64_t profileFirstId = 0;
  /// Verify the IR after every pass of the pipelines, not once a stage
  /// (also on with the environment's MITHRIL_VERIFY_EACH=1): slower, for
  /// finding the pass that breaks the IR.
  bool verifyEachPass = false;
  /// Whether compile() may take and keep code in the persistent compile
  /// cache (CompileCache.h); a compile whose stages are to be shown does not.
  bool useCache = true;
  /// Stop once the terminals are known (after flatten, shapes and autodiff)
  /// and the model is lowered to linalg (whose errors are the model's): it
  /// describes its inputs and outputs but has no code, and run() is an
  /// error. A physical model that may never run its forward code (a
  /// training model stepped with train_step) compiles it on first use.
  bool interfaceOnly = false;
  /// The file the source came from, for diagnostics and reproducers.
  std::string sourceName = "<model>";
  /// The C functions of the model's custom calls (mithril.custom_call): by
  /// name, their addresses in this process (functions a caller loaded
  /// itself, as Python's register_primitive does), and shared libraries to
  /// load and search for the others, before the process's own symbols.
  std::map<std::string, uint64_t> externalSymbols;
  std::vector<std::string> sharedLibraries;
};

/// Sets the optimizations and the LLVM level of a named level: "none" (no
/// graph optimization, no schedule, LLVM -O0: for debugging), "low" (folding,
/// CSE and DCE; -O1), "medium" (everything; -O2, the default) or "high"
/// (everything; -O3). An unknown level is an error listing the known ones.
llvm::Error setOptimizationLevel(CompileOptions &options, llvm::StringRef level);

/// Switches one optimization by name: constant_folding, common_subexpression,
/// dead_code_elimination, fusion (or operator_fusion) and vectorization (the
/// host schedule). An unknown name is an error listing the known ones.
llvm::Error setOptimization(CompileOptions &options, llvm::StringRef name, bool enabled);

/// A profiled kernel's calls and time so far (in this process).
struct ProfileRecord {
  std::string model;  // the entry model's name
  std::string kernel; // what it computes and the terminals it came from
  int64_t calls;
  double seconds;
};

/// The bytes of the buffers compiled code holds now (its temporaries;
/// inputs and outputs are the caller's), and the most it held since
/// resetPeakBufferBytes(), process-wide.
std::pair<size_t, size_t> bufferBytes();
void resetPeakBufferBytes();

/// Every kernel of the models compiled with `profile`, in compile order.
std::vector<ProfileRecord> profileRecords();

/// The names setOptimization knows.
llvm::ArrayRef<llvm::StringRef> optimizationNames();

/// A shape in the `name:DxD` form of CompileOptions::shapes (`name:scalar`
/// for rank 0).
std::string shapeSpec(llvm::StringRef name, llvm::ArrayRef<int64_t> shape);

/// Whether `name` is a terminal that gradients add to a model rather than
/// one of its own: a seed `grad:<output>`, optimizer state `state:...` or a
/// hyper-parameter `optimizer.*`.
bool isAddedByGradients(llvm::StringRef name);

/// The thread count `options` asks for, with 0 resolved to the host's
/// hardware threads.
unsigned resolvedThreads(const CompileOptions &options);

/// One row of a model summary: a primitive of the flattened model.
struct SummaryRow {
  std::string op;       // mithril op name, without the dialect prefix
  std::string name;     // its path in the hierarchy (from its location), if any
  std::string operands; // operand shapes
  std::string result;   // result shape
};

struct PhaseTiming {
  std::string phase;
  double seconds;
  /// For a pipeline stage: the operations in the module before and after it
  /// (-1 for the phases that are not stages: parsing, LLVM and the JIT).
  int64_t opsBefore = -1, opsAfter = -1;
};

/// A fresh context with every dialect, extension and translation the
/// pipelines need.
std::unique_ptr<mlir::MLIRContext> createContext();

/// Parses mithril IR; errors carry the diagnostics with their locations.
llvm::Expected<mlir::OwningOpRef<mlir::ModuleOp>>
parseSource(mlir::MLIRContext &ctx, llvm::StringRef source, llvm::StringRef name);

/// Lowers `source` and returns it as text (`mlir`: the IR after `stopAfter`,
/// one of getCpuPipelineStages(); `llvm`: LLVM IR; `asm`: host assembly;
/// `ptx`: the GPU kernels, for target cuda) or bytes (`obj`: a host object
/// file).
llvm::Expected<std::string> emit(llvm::StringRef source, const CompileOptions &options,
                                 llvm::StringRef format, llvm::StringRef stopAfter = "llvm");

/// Runs the textual pass pipeline `pipeline` (as mithril-opt's
/// --pass-pipeline takes inside builtin.module(...): "canonicalize,cse",
/// "mithril-dce", "mithril-flatten") on mithril IR and returns the result as
/// text; errors name the pipeline and carry the diagnostics.
llvm::Expected<std::string> runPasses(llvm::StringRef source, llvm::StringRef pipeline,
                                      llvm::StringRef sourceName);

/// The input terminals of `source`'s entry model after flattening and shape
/// inference (the pipeline up to autodiff, no code generation): what is known
/// of each input's shape, dynamic sizes included, without compiling it.
llvm::Expected<std::vector<TerminalInfo>> logicalInputs(llvm::StringRef source,
                                                        const CompileOptions &options);

class CompiledModel {
public:
  ~CompiledModel();

  /// `source` compiled with `options`, or its code from the persistent
  /// compile cache of an earlier compile on this host (CompileCache.h:
  /// MITHRIL_CACHE_DIR, MITHRIL_CACHE=0, MITHRIL_CACHE_MIN_SECONDS).
  static llvm::Expected<std::unique_ptr<CompiledModel>> compile(llvm::StringRef source,
                                                                const CompileOptions &options);

  const std::string &entry() const { return entry_; }
  const std::vector<TerminalInfo> &inputs() const { return inputs_; }
  const std::vector<TerminalInfo> &outputs() const { return outputs_; }
  /// The terminals the discarded outputs took with them: those outputs and
  /// the inputs nothing else reads.
  const std::vector<std::string> &discarded() const { return discarded_; }
  const std::vector<PhaseTiming> &timings() const { return timings_; }
  /// The flattened, shape-inferred mithril IR of the entry model.
  const std::string &logicalIR() const { return logicalIR_; }
  /// The primitives of the flattened model, in order.
  const std::vector<SummaryRow> &summary() const { return summary_; }

  /// The JIT's object code of the model (target cpu), which load() takes
  /// back: saved physical models keep their compiled code.
  llvm::Expected<std::string> objectCode() const;

  /// The host's CPU name and features, as object code is compiled for them.
  static std::string hostCPU();

  /// A model from the objectCode() and logicalIR() of one compiled with
  /// `options` on a host whose CPU hostCPU() named `cpu`: nothing is
  /// compiled. An error if this host lacks a feature that code may use.
  static llvm::Expected<std::unique_ptr<CompiledModel>> load(llvm::StringRef object,
                                                             llvm::StringRef logicalIR,
                                                             llvm::StringRef cpu,
                                                             const CompileOptions &options);

  /// Runs the model. `inputs` and `outputs` follow inputs() and outputs();
  /// every view must have the terminal's dtype and shape (any size where
  /// the terminal's is dynamic, and the same size for every use of one
  /// dimension: see outputShapes), and outputs are written in place. An
  /// output may be given exactly the buffer of the input it names in
  /// TerminalInfo::inPlaceOf, which it then overwrites; one that shares
  /// memory with an input or output otherwise is computed in a buffer of
  /// its own and copied.
  llvm::Error run(llvm::ArrayRef<TensorView> inputs, llvm::ArrayRef<TensorView> outputs) const;

  /// The output shapes for inputs of these shapes: the model's shape rules
  /// applied to them (cached per distinct set of input shapes). Errors name
  /// the terminals whose shapes conflict.
  llvm::Expected<std::vector<llvm::SmallVector<int64_t>>>
  outputShapes(llvm::ArrayRef<llvm::ArrayRef<int64_t>> inputShapes) const;

private:
  CompiledModel() = default;

  /// compile() without the persistent compile cache (CompileCache.h).
  static llvm::Expected<std::unique_ptr<CompiledModel>> compileFresh(llvm::StringRef source,
                                                                     const CompileOptions &options);

  /// Links `code` (one object file, or an archive of them) into a JIT of
  /// its own and finds the entry point: function_, jit_ and objectCode_.
  /// `what` names the code in errors.
  llvm::Error linkCode(std::string code, llvm::StringRef what,
                       const llvm::StringMap<void *> *asyncSymbols,
                       const llvm::StringMap<void *> &customCalls);

  /// Fills the terminals and the summary from the flattened root model.
  llvm::Error describe(mlir::Operation *root, bool dynamicShapes);

  /// The indices of the outputs run() must write apart and copy.
  llvm::SmallVector<size_t> sharedOutputs(llvm::ArrayRef<TensorView> inputs,
                                          llvm::ArrayRef<TensorView> outputs) const;

  /// The shape rules' answer for one set of input shapes.
  struct ShapePlan {
    std::vector<llvm::SmallVector<int64_t>> outputs;
    /// Some op broadcasts a size 1 along a dimension the compiled code only
    /// knows as dynamic: that code would read past the operand, so such
    /// inputs run on code compiled for their static shapes.
    bool needsStaticCode = false;
  };
  llvm::Expected<ShapePlan> planShapes(llvm::ArrayRef<llvm::ArrayRef<int64_t>> inputShapes) const;
  /// The model compiled for these static input shapes (cached).
  llvm::Expected<const CompiledModel *>
  staticCode(llvm::ArrayRef<llvm::ArrayRef<int64_t>> inputShapes) const;

  std::string entry_;
  std::vector<TerminalInfo> inputs_, outputs_;
  std::vector<std::string> discarded_;
  std::vector<PhaseTiming> timings_;
  std::string logicalIR_;
  std::vector<SummaryRow> summary_;
  std::unique_ptr<mlir::MLIRContext> context_;
  /// outputShapes() parses logicalIR_ into context_: one caller at a time.
  /// Whether a terminal has a dynamic dimension (dynamicShapes).
  bool dynamic_ = false;
  mutable std::mutex shapesMutex_;
  mutable std::map<std::vector<int64_t>, ShapePlan> shapesCache_;
  /// The options it was compiled with, for static specializations.
  CompileOptions options_;
  mutable std::mutex staticMutex_;
  mutable std::map<std::vector<int64_t>, std::unique_ptr<CompiledModel>> staticCode_;
  /// Target "cuda": MLIR's JIT, which runs the global constructors that
  /// load the kernels.
  std::unique_ptr<mlir::ExecutionEngine> engine_;
  /// Target "cpu": the JIT holding the object code, and that code (one
  /// object file, or an archive of the pieces compiled in parallel).
  std::unique_ptr<llvm::orc::LLJIT> jit_;
  std::string objectCode_;
  /// Whether the code hands work to the async runtime's worker threads.
  bool usesWorkerThreads_ = false;
  void (*function_)(void **) = nullptr;
  /// Target "cuda": the runtime library that moves the arguments to and from
  /// the GPU.
  const CudaRuntime *cuda_ = nullptr;
};

} // namespace mithril::runtime

#endif // MITHRIL_RUNTIME_COMPILEDMODEL_H
