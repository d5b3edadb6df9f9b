//===- CompiledModel.cpp - a model compiled for the host CPU --------------===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//

#include "mithril/Runtime/CompiledModel.h"
#include "CudaDevice.h"
#include "TaskPool.h"
#include "mithril/Runtime/Distributed.h"

#include "mithril/Dialect/Mithril/IR/MithrilOps.h"
#include "mithril/Dialect/Mithril/Transforms/Passes.h"
#include "mithril/InitAllDialects.h"
#include "mithril/InitAllPasses.h"
#include "mithril/Pipelines/Pipelines.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "mlir/Transforms/Passes.h"

#include "llvm/ExecutionEngine/Orc/ExecutionUtils.h"
#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/ExecutionEngine/Orc/LLJIT.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/X86TargetParser.h"

#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/DynamicLibrary.h"

#include <atomic>
#include <chrono>
#include <csetjmp>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>
#include <unordered_set>

using namespace mlir;
using namespace mithril;
using namespace mithril::runtime;
using llvm::Expected;

static llvm::Error makeError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

static void initializeLLVM() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    llvm::InitializeNativeTargetAsmParser();
  });
}

std::unique_ptr<MLIRContext> mithril::runtime::createContext() {
  DialectRegistry registry;
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  mlir::registerAllToLLVMIRTranslations(registry);
  mithril::registerAllDialects(registry);
  auto ctx = std::make_unique<MLIRContext>(registry, MLIRContext::Threading::DISABLED);
  // Users see diagnostics, not dumps of the op they are about.
  ctx->printOpOnDiagnostic(false);
  ctx->loadDialect<MithrilDialect>();
  return ctx;
}

namespace {
/// Writes a location the way compilers do: `file:line:col`, or the path of
/// the op or terminal it names.
void printLocation(llvm::raw_ostream &os, Location loc) {
  if (auto file = dyn_cast<FileLineColLoc>(loc)) {
    os << file.getFilename().getValue() << ":" << file.getLine() << ":" << file.getColumn();
    return;
  }
  if (auto name = dyn_cast<NameLoc>(loc)) {
    os << name.getName().getValue();
    return;
  }
  if (auto fused = dyn_cast<FusedLoc>(loc)) {
    for (Location inner : fused.getLocations())
      if (isa<NameLoc, FileLineColLoc>(inner))
        return printLocation(os, inner);
  }
  if (auto callSite = dyn_cast<CallSiteLoc>(loc))
    return printLocation(os, callSite.getCallee());
  os << loc;
}

/// Collects diagnostics as text while in scope.
class DiagnosticCollector {
public:
  explicit DiagnosticCollector(MLIRContext &ctx)
      : handler(&ctx, [this](Diagnostic &diag) {
          llvm::raw_string_ostream os(text);
          printLocation(os, diag.getLocation());
          os << ": "
             << (diag.getSeverity() == DiagnosticSeverity::Error     ? "error: "
                 : diag.getSeverity() == DiagnosticSeverity::Warning ? "warning: "
                                                                     : "note: ")
             << diag << "\n";
          for (Diagnostic &note : diag.getNotes()) {
            printLocation(os, note.getLocation());
            os << ": note: " << note << "\n";
          }
          return success();
        }) {}
  std::string text;

private:
  ScopedDiagnosticHandler handler;
};

using Clock = std::chrono::steady_clock;
double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}
} // namespace

Expected<OwningOpRef<ModuleOp>> mithril::runtime::parseSource(MLIRContext &ctx,
                                                              StringRef source,
                                                              StringRef name) {
  DiagnosticCollector diags(ctx);
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(llvm::MemoryBuffer::getMemBufferCopy(source, name), llvm::SMLoc());
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(sourceMgr, &ctx);
  if (!module)
    return makeError(diags.text.empty() ? (name + ": cannot parse").str() : diags.text);
  return std::move(module);
}

/// The option string of mithril-cpu-pipeline for `options`.
std::string mithril::runtime::shapeSpec(StringRef name, ArrayRef<int64_t> shape) {
  std::string dims = shape.empty() ? "scalar" : "";
  for (size_t i = 0; i < shape.size(); ++i)
    dims += (i ? "x" : "") + std::to_string(shape[i]);
  return (name + ":" + dims).str();
}

unsigned mithril::runtime::resolvedThreads(const CompileOptions &options) {
  if (options.threads != 0)
    return options.threads;
  return std::max(1u, std::thread::hardware_concurrency());
}

static constexpr StringRef kOptimizationNames[] = {
    "constant_folding", "common_subexpression", "dead_code_elimination", "fusion",
    "operator_fusion",  "vectorization",        "memory_planning"};

ArrayRef<StringRef> mithril::runtime::optimizationNames() { return kOptimizationNames; }

llvm::Error mithril::runtime::setOptimization(CompileOptions &options, StringRef name,
                                              bool enabled) {
  bool *flag = llvm::StringSwitch<bool *>(name)
                   .Case("constant_folding", &options.fold)
                   .Case("common_subexpression", &options.cse)
                   .Case("dead_code_elimination", &options.dce)
                   .Cases({"fusion", "operator_fusion"}, &options.fusion)
                   .Case("vectorization", &options.schedule)
                   .Case("memory_planning", &options.memoryPlanning)
                   .Default(nullptr);
  if (!flag)
    return makeError("unknown optimization '" + name + "' (known: " +
                     llvm::join(ArrayRef<StringRef>(kOptimizationNames), ", ") + ")");
  *flag = enabled;
  return llvm::Error::success();
}

llvm::Error mithril::runtime::setOptimizationLevel(CompileOptions &options, StringRef level) {
  int rank = llvm::StringSwitch<int>(level)
                 .Case("none", 0)
                 .Case("low", 1)
                 .Case("medium", 2)
                 .Case("high", 3)
                 .Default(-1);
  if (rank < 0)
    return makeError("unknown optimization level '" + level + "' (known: none, low, medium, high)");
  options.fold = options.cse = options.dce = options.memoryPlanning = rank >= 1;
  options.fusion = options.schedule = rank >= 2;
  options.optLevel = static_cast<unsigned>(rank);
  return llvm::Error::success();
}

/// Success for no target CPU or one LLVM knows; an error naming it otherwise.
static llvm::Error checkTargetCpu(StringRef cpu) {
  if (cpu.empty() || vectorRegisterBits(cpu))
    return llvm::Error::success();
  return makeError("unknown target CPU '" + cpu +
                   "' (an x86-64 CPU LLVM knows: znver2, skylake-avx512, sapphirerapids, ...)");
}

static std::string pipelineOptions(const CompileOptions &options, StringRef stopAfter,
                                   StringRef startAfter) {
  std::string s;
  auto add = [&](StringRef key, StringRef value) {
    if (!s.empty())
      s += ' ';
    s += (key + "=" + value).str();
  };
  if (!options.entry.empty())
    add("entry", options.entry);
  if (!options.shapes.empty())
    add("shapes", llvm::join(options.shapes, ","));
  if (!options.discard.empty())
    add("discard", llvm::join(options.discard, ","));
  if (options.dynamicShapes)
    add("dynamic-data", "true");
  if (!options.quantize.empty())
    add("quantize", options.quantize);
  if (options.quantizeObserve)
    add("quantize-observe", "true");
  if (!options.activationScales.empty()) {
    std::string scales;
    llvm::raw_string_ostream os(scales);
    llvm::interleave(
        options.activationScales, os, [&](double v) { os << llvm::formatv("{0:e9}", v); }, ",");
    add("activation-scales", scales);
  }
  if (!options.precision.empty()) {
    add("precision", options.precision);
    if (options.precisionTerminals)
      add("precision-terminals", "true");
  }
  if (options.gradients) {
    add("gradients", "true");
    if (!options.wrt.empty())
      add("wrt", llvm::join(options.wrt, ","));
    if (!options.seeds.empty())
      add("seeds", llvm::join(options.seeds, ","));
    if (options.checkpointSegments)
      add("checkpoint-segments", std::to_string(options.checkpointSegments));
    if (options.allReduceGradients)
      add("all-reduce-gradients", "true");
    if (!options.optimizer.empty()) {
      add("optimizer", options.optimizer);
      add("momentum", std::to_string(options.momentum));
      add("weight-decay", std::to_string(options.weightDecay));
    }
  }
  if (options.tensorParallel > 1)
    add("tensor-parallel", std::to_string(options.tensorParallel));
  // Threads shape the code from the fusion stage (the schedule) on.
  bool scheduled = llvm::is_contained({"fusion", "bufferize", "loops", "llvm"}, stopAfter);
  if (unsigned threads = resolvedThreads(options); threads != 1 && scheduled)
    add("threads", std::to_string(threads));
  if (!options.targetCpu.empty() && scheduled)
    add("target-cpu", options.targetCpu);
  if (options.gpuTilesOnHost)
    add("gpu-tiles-on-host", "true");
  if (options.profile)
    add("profile", "true");
  for (auto [key, on] : {std::pair<StringRef, bool>{"fold", options.fold},
                         {"cse", options.cse},
                         {"dce", options.dce},
                         {"fusion", options.fusion},
                         {"schedule", options.schedule},
                         {"memory-planning", options.memoryPlanning}})
    if (!on)
      add(key, "false");
  if (stopAfter != "llvm")
    add("stop-after", stopAfter);
  if (!startAfter.empty())
    add("start-after", startAfter);
  return s;
}

static int64_t countOps(ModuleOp module) {
  int64_t count = 0;
  module->walk([&](Operation *) { ++count; });
  return count - 1; // the module itself
}

/// Runs mithril-cpu-pipeline's stages after `startAfter` up to `stopAfter`,
/// one pass manager per stage, each recorded in `stages` (when given) with
/// its time and the module's op counts before and after it. On failure the
/// error holds the diagnostics and the mithril-opt command that reproduces
/// them from the source.
static llvm::Error runPipeline(ModuleOp module, const CompileOptions &options, StringRef stopAfter,
                               StringRef startAfter = "", bool forJit = false,
                               std::vector<PhaseTiming> *stages = nullptr) {
  MLIRContext *ctx = module.getContext();
  auto configure = [&](CpuPipelineOptions &pipelineOpts, StringRef stop, StringRef start) {
    copyModelOptions(pipelineOpts, options);
    pipelineOpts.threads = resolvedThreads(options);
    pipelineOpts.stopAfter = stop.str();
    pipelineOpts.startAfter = start.str();
    pipelineOpts.runtimeAllocator = forJit;
    pipelineOpts.indexErrors = forJit;
    pipelineOpts.dynamicData = options.dynamicShapes;
    pipelineOpts.gpuTilesOnHost = options.gpuTilesOnHost;
    pipelineOpts.fold = options.fold;
    pipelineOpts.cse = options.cse;
    pipelineOpts.dce = options.dce;
    pipelineOpts.fusion = options.fusion;
    pipelineOpts.memoryPlanning = options.memoryPlanning;
    pipelineOpts.schedule = options.schedule;
    pipelineOpts.profile = options.profile;
    pipelineOpts.profileFirstId = options.profileFirstId;
    pipelineOpts.targetCpu = options.targetCpu;
  };
  {
    CpuPipelineOptions whole;
    configure(whole, stopAfter, startAfter);
    if (std::string error = checkCpuPipelineOptions(whole); !error.empty())
      return makeError(error);
  }
  ArrayRef<StringRef> all = getCpuPipelineStages();
  const StringRef *first = startAfter.empty() ? all.begin() : llvm::find(all, startAfter) + 1;
  const StringRef *last = llvm::find(all, stopAfter);
  int64_t ops = stages ? countOps(module) : -1;
  for (const StringRef *stage = first; stage <= last; ++stage) {
    DiagnosticCollector diags(*ctx);
    PassManager pm(ctx);
    CpuPipelineOptions pipelineOpts;
    configure(pipelineOpts, *stage, stage == all.begin() ? StringRef() : *(stage - 1));
    if (failed(buildCpuPipeline(pm, pipelineOpts)))
      return makeError("internal error: mithril-cpu-pipeline does not build");
    if (pm.size() == 0)
      continue; // autodiff without gradients
    auto start = Clock::now();
    if (failed(pm.run(module))) {
      // From the source up to the stage that failed.
      std::string reproduce = pipelineOptions(options, *stage, "");
      if (forJit)
        reproduce += " runtime-allocator=true index-errors=true";
      return makeError(diags.text + "reproduce with: mithril-opt --pass-pipeline='builtin.module(" +
                       "mithril-cpu-pipeline{" + reproduce + "})' " + options.sourceName);
    }
    if (stages) {
      int64_t after = countOps(module);
      stages->push_back({stage->str(), secondsSince(start), ops, after});
      ops = after;
    }
  }
  return llvm::Error::success();
}

/// Runs mithril-gpu-pipeline up to `stopAfter` (one of its stages); on
/// failure the error holds the diagnostics and the mithril-opt command that
/// reproduces them.
static llvm::Error runGpuPipeline(ModuleOp module, const CompileOptions &options,
                                  StringRef stopAfter) {
  MLIRContext *ctx = module.getContext();
  DiagnosticCollector diags(*ctx);
  PassManager pm(ctx);
  GpuPipelineOptions gpu;
  copyModelOptions(gpu, options);
  gpu.chip = options.gpuChip;
  gpu.stopAfter = stopAfter.str();
  if (std::string error = checkGpuPipelineOptions(gpu); !error.empty())
    return makeError(error);
  if (failed(buildGpuPipeline(pm, gpu)))
    return makeError("internal error: mithril-gpu-pipeline does not build");
  if (succeeded(pm.run(module)))
    return llvm::Error::success();
  // Every option, as the pipeline prints them: the command reproduces
  // gradients, optimizers, discards and stages alike.
  std::string reproducer;
  llvm::raw_string_ostream os(reproducer);
  gpu.print(os);
  return makeError(diags.text + "reproduce with: mithril-opt --pass-pipeline='builtin.module(" +
                   "mithril-gpu-pipeline" + reproducer + ")' " + options.sourceName);
}

/// The root model to compile: the named one, or the only un-instantiated one.
static Expected<ModelOp> findEntry(ModuleOp module, StringRef entry) {
  SmallVector<ModelOp> roots;
  llvm::StringSet<llvm::MallocAllocator> instantiated;
  module.walk([&](InstanceOp inst) { instantiated.insert(inst.getCallee()); });
  // A model with no output terminal computes nothing a caller could read.
  auto checkOutputs = [](ModelOp model) -> Expected<ModelOp> {
    if (model.getNumOutputs() == 0)
      return makeError("model @" + model.getSymName() +
                       " has no output terminals: there is nothing to compute");
    return model;
  };
  for (ModelOp model : module.getOps<ModelOp>()) {
    if (!entry.empty() && model.getSymName() == entry)
      return checkOutputs(model);
    if (!instantiated.contains(model.getSymName()))
      roots.push_back(model);
  }
  std::string names;
  for (ModelOp m : module.getOps<ModelOp>())
    names += (names.empty() ? "@" : ", @") + m.getSymName().str();
  if (!entry.empty())
    return makeError("no model named '" + entry + "' (models: " + (names.empty() ? "none" : names) + ")");
  if (roots.empty() && !names.empty())
    return makeError("every model (" + names +
                     ") is instantiated by another, so there is no root model: the instances "
                     "form a cycle, or choose the entry with --entry");
  if (roots.size() != 1)
    return makeError(roots.empty() ? "the input holds no model"
                                   : "the input holds several root models (" + names +
                                         "); choose one with --entry");
  return checkOutputs(roots.front());
}

static Expected<TerminalInfo> describeTerminal(StringRef modelName, StringRef name, Type type,
                                               InputKind kind, bool isInput,
                                               bool allowDynamic = false) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  std::string what = ((isInput ? "input '" : "output '") + name + "' of @" + modelName).str();
  if (!tensor)
    return makeError(what + " is not a ranked tensor");
  std::optional<DType> dtype = typeToDType(tensor.getElementType());
  if (!dtype) {
    std::string t;
    llvm::raw_string_ostream os(t);
    os << tensor.getElementType();
    return makeError(what + " has element type " + t + ", which the runtime cannot exchange");
  }
  if (!tensor.hasStaticShape() && !allowDynamic)
    return makeError(what + " has shape " + mithril::formatShape(tensor.getShape()) +
                     " after shape inference; give the shapes of the inputs it depends on");
  if (tensor.hasStaticShape() && !numBytes(*dtype, tensor.getShape()))
    return makeError(what + " has shape " + mithril::formatShape(tensor.getShape()) +
                     ", whose size in bytes overflows 64 bits");
  return TerminalInfo{name.str(), kind, *dtype, llvm::SmallVector<int64_t>(tensor.getShape())};
}

/// The path an op was given (a NameLoc), if any.
static std::string locationName(Location loc) {
  if (auto name = dyn_cast<NameLoc>(loc))
    return name.getName().str();
  if (auto fused = dyn_cast<FusedLoc>(loc))
    for (Location inner : fused.getLocations())
      if (auto name = dyn_cast<NameLoc>(inner))
        return name.getName().str();
  return "";
}

static std::string shapeOf(Type type) {
  auto t = dyn_cast<RankedTensorType>(type);
  if (!t)
    return "?";
  std::string s = "[";
  for (int64_t i = 0; i < t.getRank(); ++i)
    s += (i ? ", " : "") + (t.isDynamicDim(i) ? std::string("?") : std::to_string(t.getDimSize(i)));
  return s + "]";
}

static std::vector<SummaryRow> summarize(ModelOp model) {
  std::vector<SummaryRow> rows;
  for (Operation &op : model.getBodyBlock().without_terminator()) {
    SummaryRow row;
    row.op = op.getName().stripDialect().str();
    row.name = locationName(op.getLoc());
    for (Value v : op.getOperands())
      row.operands += (row.operands.empty() ? "" : ", ") + shapeOf(v.getType());
    row.result = op.getNumResults() ? shapeOf(op.getResult(0).getType()) : "";
    rows.push_back(std::move(row));
  }
  return rows;
}

/// The target machine code is compiled for: the host's, or `cpu`'s.
static Expected<std::unique_ptr<llvm::TargetMachine>> hostTargetMachine(unsigned optLevel,
                                                                        StringRef cpu = "") {
  initializeLLVM();
  auto builder = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!builder)
    return builder.takeError();
  if (llvm::Error err = checkTargetCpu(cpu))
    return std::move(err);
  if (!cpu.empty()) {
    builder->setCPU(cpu.str());
    builder->setFeatures("");
  }
  builder->setCodeGenOptLevel(optLevel >= 3 ? llvm::CodeGenOptLevel::Aggressive
                                            : llvm::CodeGenOptLevel::Default);
  // A product feeding a sum becomes one fused multiply-add, as in BLAS
  // kernels: twice the arithmetic per instruction, and one rounding fewer.
  // The vectorized register tiles are separate mulf/addf, which LLVM fuses
  // only when told it may.
  builder->getOptions().AllowFPOpFusion = llvm::FPOpFusion::Fast;
  return builder->createTargetMachine();
}

namespace {
/// The buffers compiled code allocates, kept for the next run instead of
/// being returned to the system: a model allocates the same sizes on every
/// run, and large blocks from malloc come fresh from mmap each time, so the
/// page faults of touching them cost as much as a small convolution. Blocks
/// are 64-byte aligned and cached by size, up to kMaxCachedBytes (256 MiB) in all.
class BufferCache {
public:
  static BufferCache &get() {
    static BufferCache *cache = new BufferCache(); // outlives every model
    return *cache;
  }

  void *allocate(size_t size) {
    size = std::max<size_t>(llvm::alignTo(size, 64), 64);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = free_.find(size);
      if (it != free_.end() && !it->second.empty()) {
        void *block = it->second.back();
        it->second.pop_back();
        cachedBytes_ -= size;
        sizes_[block] = size;
        noteLive(size);
        return block;
      }
    }
    void *block = std::aligned_alloc(64, size);
    if (block) {
      std::lock_guard<std::mutex> lock(mutex_);
      sizes_[block] = size;
      noteLive(size);
    }
    return block;
  }

  /// The bytes compiled code holds now, and the most it held since
  /// resetPeak().
  std::pair<size_t, size_t> liveAndPeak() {
    std::lock_guard<std::mutex> lock(mutex_);
    return {liveBytes_, peakBytes_};
  }
  void resetPeak() {
    std::lock_guard<std::mutex> lock(mutex_);
    peakBytes_ = liveBytes_;
  }

  /// Releases `block` if it is still handed out (a run cut short gives back
  /// what it had, some of which it may have released already).
  void releaseIfLive(void *block) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!sizes_.count(block))
        return;
    }
    release(block);
  }

  void release(void *block) {
    if (!block)
      return;
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = sizes_.find(block);
    if (it == sizes_.end())
      return std::free(block); // not ours (a runtime helper's malloc)
    size_t size = it->second;
    sizes_.erase(it);
    liveBytes_ -= size;
    if (size > kMaxCachedBytes)
      return std::free(block);
    // Full: make room by freeing blocks of other sizes, largest first. The
    // block just released is of a size in use now; the others may be left
    // by models that no longer run (a 2048 x 2048 matmul's, say), and
    // keeping those instead would send every block of the current model
    // back to mmap and its page faults.
    for (auto other = free_.rbegin(); cachedBytes_ + size > kMaxCachedBytes && other != free_.rend();
         ++other) {
      if (other->first == size)
        continue;
      while (!other->second.empty() && cachedBytes_ + size > kMaxCachedBytes) {
        std::free(other->second.back());
        other->second.pop_back();
        cachedBytes_ -= other->first;
      }
    }
    if (cachedBytes_ + size > kMaxCachedBytes)
      return std::free(block);
    free_[size].push_back(block);
    cachedBytes_ += size;
  }

private:
  void noteLive(size_t size) {
    liveBytes_ += size;
    peakBytes_ = std::max(peakBytes_, liveBytes_);
  }

  static constexpr size_t kMaxCachedBytes = size_t(256) << 20;
  size_t liveBytes_ = 0, peakBytes_ = 0;
  std::mutex mutex_;
  std::unordered_map<void *, size_t> sizes_;
  std::map<size_t, std::vector<void *>> free_;
  size_t cachedBytes_ = 0;
};

/// Where a run resumes when its compiled code cannot get memory: compiled
/// code has no way to fail, and would write through the null pointer. Set
/// around the call of the compiled function on the calling thread; the
/// blocks the run allocated there are given back when it is cut short.
struct AllocationRecovery {
  std::jmp_buf point;
  size_t failedBytes = 0;
  std::unordered_set<void *> live;
};
thread_local AllocationRecovery *recovery = nullptr;

/// A block compiled code asked for could not be had: back to the run's
/// recovery point, or (in a task of the pool, whose frames cannot be left)
/// a one-line message and abort instead of a crash on a null pointer.
[[noreturn]] void allocationFailed(size_t size) {
  if (recovery && !runningPoolTask()) {
    recovery->failedBytes = size;
    std::longjmp(recovery->point, 1);
  }
  std::fprintf(stderr,
               "mithril: out of memory: a temporary buffer of %zu bytes could not be "
               "allocated in a parallel task\n",
               size);
  std::abort();
}

void *trackAllocation(void *block, size_t size) {
  if (!block)
    allocationFailed(size);
  if (recovery && !runningPoolTask())
    recovery->live.insert(block);
  return block;
}

extern "C" void *mithrilCachedAlloc(size_t size) {
  return trackAllocation(BufferCache::get().allocate(size), size);
}
extern "C" void *mithrilCachedAlignedAlloc(size_t alignment, size_t size) {
  // Blocks are 64-byte aligned; larger alignments are not requested.
  return trackAllocation(alignment <= 64 ? BufferCache::get().allocate(size)
                                         : std::aligned_alloc(alignment, size),
                         size);
}
extern "C" void mithrilCachedFree(void *block) {
  if (recovery)
    recovery->live.erase(block);
  BufferCache::get().release(block);
}

/// Calls the compiled function; false, with `failedBytes` set, when it ran
/// out of memory and was cut short. Nothing with a destructor lives in this
/// frame or the compiled ones a longjmp leaves.
bool callRecoverably(void (*function)(void **), void **args, AllocationRecovery &state) {
  AllocationRecovery *outer = recovery;
  if (setjmp(state.point)) {
    recovery = outer;
    for (void *block : state.live)
      BufferCache::get().releaseIfLive(block);
    state.live.clear();
    return false;
  }
  recovery = &state;
  function(args);
  recovery = outer;
  return true;
}

/// The first index out of range the running code reported on this thread
/// (the checks run on the calling thread, outside the split loops).
thread_local std::optional<std::string> pendingIndexError;

/// Called by compiled code (convert-mithril-to-linalg's index-errors) with the
/// offending index, the bound and a message naming the op and the indices.
extern "C" void mithrilIndexError(int64_t value, int64_t bound, int64_t message) {
  if (pendingIndexError)
    return;
  pendingIndexError = std::string(reinterpret_cast<const char *>(message)) + " is " +
                      std::to_string(value) + ", outside [0, " + std::to_string(bound) + ")";
}

} // namespace

CompiledModel::~CompiledModel() {
  // A task signals its completion from compiled code and then still runs a
  // few instructions of it on its way back to the pool: wait until none
  // runs before the code is freed.
  if (usesWorkerThreads_)
    waitForPoolTasks();
}

/// The MLIR async runtime's entry points, from the library loaded once for
/// the process. Handing the library to ExecutionEngine (sharedLibPaths) would
/// let the first engine destroyed reset the runtime's global state under the
/// engines still alive.
static Expected<const llvm::StringMap<void *> *> asyncRuntimeSymbols() {
  static std::once_flag once;
  static llvm::StringMap<void *> symbols;
  static std::string error;
  std::call_once(once, [] {
    std::string message;
    auto library = llvm::sys::DynamicLibrary::getPermanentLibrary(MITHRIL_ASYNC_RUNTIME, &message);
    if (!library.isValid()) {
      error = "running on several threads needs the MLIR async runtime (" + message +
              "); compile with one thread";
      return;
    }
    using InitFn = void (*)(llvm::StringMap<void *> &);
    auto init = reinterpret_cast<InitFn>(
        library.getAddressOfSymbol("__mlir_execution_engine_init"));
    if (!init) {
      error = std::string(MITHRIL_ASYNC_RUNTIME) + " exports no __mlir_execution_engine_init";
      return;
    }
    init(symbols);
    // Tasks start and are awaited through mithril's task pool (TaskPool.cpp).
    installTaskPool(symbols);
  });
  if (!error.empty())
    return makeError(error);
  return &symbols;
}

llvm::Error CompiledModel::describe(Operation *rootOp, bool dynamicShapes) {
  auto root = cast<ModelOp>(rootOp);
  summary_ = summarize(root);
  for (unsigned i = 0, e = root.getNumInputs(); i < e; ++i) {
    auto info = describeTerminal(entry_, root.getInputName(i), root.getFunctionType().getInput(i),
                                 root.getInputKind(i), true, dynamicShapes);
    if (!info)
      return info.takeError();
    if (DictionaryAttr attrs = root.getArgAttrDict(i))
      if (auto axis = dyn_cast_or_null<IntegerAttr>(attrs.get(kTensorSplitAttr))) {
        info->tensorSplit = axis.getInt();
        if (auto blocks = dyn_cast_or_null<IntegerAttr>(attrs.get(kTensorBlocksAttr)))
          info->tensorBlocks = blocks.getInt();
      }
    inputs_.push_back(*info);
  }
  for (unsigned i = 0, e = root.getNumOutputs(); i < e; ++i) {
    auto info = describeTerminal(entry_, root.getOutputName(i), root.getFunctionType().getResult(i),
                                 InputKind::Data, false, dynamicShapes);
    if (!info)
      return info.takeError();
    outputs_.push_back(*info);
  }
  auto isDynamic = [](const TerminalInfo &t) {
    return llvm::any_of(t.shape, ShapedType::isDynamic);
  };
  dynamic_ = llvm::any_of(inputs_, isDynamic) || llvm::any_of(outputs_, isDynamic);
  return llvm::Error::success();
}

namespace {
/// The kernels of profiled models, by id: each compile reserves a block of
/// ids, and its code counts into them.
struct ProfiledKernel {
  std::string model, name;
  std::atomic<int64_t> calls{0}, nanos{0};
};
struct ProfileRegistry {
  static constexpr int64_t kBlock = int64_t(1) << 20; // kernels per compile
  std::mutex mutex;
  std::map<int64_t, ProfiledKernel> kernels;
  std::atomic<int64_t> nextBlock{0};
  static ProfileRegistry &get() {
    static ProfileRegistry *registry = new ProfileRegistry(); // outlives every model
    return *registry;
  }
};
thread_local std::vector<Clock::time_point> profileStarts;
} // namespace

extern "C" void mithrilProfileEnter(int64_t) { profileStarts.push_back(Clock::now()); }
extern "C" void mithrilProfileExit(int64_t id) {
  auto end = Clock::now();
  if (profileStarts.empty())
    return;
  auto start = profileStarts.back();
  profileStarts.pop_back();
  ProfileRegistry &registry = ProfileRegistry::get();
  ProfiledKernel *kernel;
  {
    std::lock_guard<std::mutex> lock(registry.mutex);
    auto it = registry.kernels.find(id);
    if (it == registry.kernels.end())
      return;
    kernel = &it->second; // map nodes stay put
  }
  kernel->calls.fetch_add(1, std::memory_order_relaxed);
  kernel->nanos.fetch_add(std::chrono::duration_cast<std::chrono::nanoseconds>(end - start).count(),
                          std::memory_order_relaxed);
}

std::pair<size_t, size_t> mithril::runtime::bufferBytes() {
  return BufferCache::get().liveAndPeak();
}
void mithril::runtime::resetPeakBufferBytes() { BufferCache::get().resetPeak(); }

std::vector<ProfileRecord> mithril::runtime::profileRecords() {
  ProfileRegistry &registry = ProfileRegistry::get();
  std::lock_guard<std::mutex> lock(registry.mutex);
  std::vector<ProfileRecord> records;
  for (auto &[id, kernel] : registry.kernels)
    records.push_back(
        {kernel.model, kernel.name, kernel.calls.load(), double(kernel.nanos.load()) * 1e-9});
  return records;
}

/// Registers the kernels mithril-profile-kernels named in `module`.
static void registerProfiledKernels(ModuleOp module, StringRef model, int64_t firstId) {
  auto names = module->getAttrOfType<ArrayAttr>("mithril.profile_kernels");
  if (!names)
    return;
  ProfileRegistry &registry = ProfileRegistry::get();
  std::lock_guard<std::mutex> lock(registry.mutex);
  int64_t id = firstId;
  for (Attribute name : names) {
    ProfiledKernel &kernel = registry.kernels[id++];
    kernel.model = model.str();
    kernel.name = cast<StringAttr>(name).getValue().str();
  }
}

/// The symbols compiled code calls into the host for: the buffer cache, index
/// errors, profiling timers and (with several threads) the async runtime.
static llvm::orc::SymbolMap hostSymbols(llvm::orc::MangleAndInterner &interner,
                                        const llvm::StringMap<void *> *asyncSymbols) {
  llvm::orc::SymbolMap map;
  auto add = [&](StringRef name, void *address) {
    map[interner(name)] = {llvm::orc::ExecutorAddr::fromPtr(address),
                           llvm::JITSymbolFlags::Exported};
  };
  add("_mlir_memref_to_llvm_alloc", reinterpret_cast<void *>(&mithrilCachedAlloc));
  add("_mlir_memref_to_llvm_aligned_alloc", reinterpret_cast<void *>(&mithrilCachedAlignedAlloc));
  add("_mlir_memref_to_llvm_free", reinterpret_cast<void *>(&mithrilCachedFree));
  add("mithrilIndexError", reinterpret_cast<void *>(&mithrilIndexError));
  add("mithrilProfileEnter", reinterpret_cast<void *>(&mithrilProfileEnter));
  add("mithrilProfileExit", reinterpret_cast<void *>(&mithrilProfileExit));
  add("mithrilAllReduceF32", reinterpret_cast<void *>(&mithrilAllReduceF32));
  add("mithrilAllReduceF64", reinterpret_cast<void *>(&mithrilAllReduceF64));
  if (asyncSymbols)
    for (const auto &symbol : *asyncSymbols)
      add(symbol.getKey(), symbol.getValue());
  return map;
}

Expected<std::string> CompiledModel::objectCode() const {
  if (!engine_ || cuda_)
    return makeError("only a model compiled for the CPU in this process has object code");
  SmallString<128> path;
  if (std::error_code ec = llvm::sys::fs::createTemporaryFile("mithril-model", "o", path))
    return makeError("cannot create a temporary file: " + ec.message());
  llvm::scope_exit remove([&] { llvm::sys::fs::remove(path); });
  engine_->dumpToObjectFile(path);
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer || (*buffer)->getBufferSize() == 0)
    return makeError("the JIT kept no object code for @" + entry_);
  return (*buffer)->getBuffer().str();
}

std::string CompiledModel::hostCPU() {
  std::string cpu = llvm::sys::getHostCPUName().str();
  SmallVector<std::string> features;
  for (const auto &feature : llvm::sys::getHostCPUFeatures())
    if (feature.getValue())
      features.push_back("+" + feature.getKey().str());
  llvm::sort(features);
  return cpu + ":" + llvm::join(features, ",");
}

Expected<std::unique_ptr<CompiledModel>> CompiledModel::load(StringRef object, StringRef logicalIR,
                                                             StringRef cpu,
                                                             const CompileOptions &options) {
  // Code compiled for features this host lacks would die of SIGILL.
  auto [savedName, savedFeatures] = cpu.split(':');
  auto host = llvm::sys::getHostCPUFeatures();
  SmallVector<StringRef> missing, saved;
  savedFeatures.split(saved, ',', -1, false);
  for (StringRef feature : saved)
    if (feature.consume_front("+") && !host.lookup(feature))
      missing.push_back(feature);
  if (!missing.empty())
    return makeError("the model was compiled for a " + savedName + " CPU, and this host (" +
                     llvm::sys::getHostCPUName() + ") lacks " +
                     llvm::join(ArrayRef<StringRef>(missing).take_front(8), ", ") +
                     (missing.size() > 8 ? ", ..." : "") + ": compile it again here");
  if (options.target != "cpu")
    return makeError("only models compiled for the CPU can be loaded");
  std::unique_ptr<CompiledModel> model(new CompiledModel());
  model->context_ = createContext();
  auto module = parseSource(*model->context_, logicalIR, options.sourceName);
  if (!module)
    return module.takeError();
  auto entry = findEntry(**module, options.entry);
  if (!entry)
    return entry.takeError();
  model->entry_ = entry->getSymName().str();
  model->options_ = options;
  model->options_.entry = model->entry_;
  model->logicalIR_ = logicalIR.str();
  if (llvm::Error err = model->describe(*entry, options.dynamicShapes))
    return std::move(err);

  auto start = Clock::now();
  auto jit = llvm::orc::LLJITBuilder().create();
  if (!jit)
    return makeError("cannot start the JIT: " + llvm::toString(jit.takeError()));
  // memrefCopy and the C library come from the process.
  if (llvm::sys::fs::exists(MITHRIL_C_RUNNER_UTILS))
    llvm::sys::DynamicLibrary::LoadLibraryPermanently(MITHRIL_C_RUNNER_UTILS);
  auto process = llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(
      (*jit)->getDataLayout().getGlobalPrefix());
  if (!process)
    return makeError("cannot search the process's symbols: " + llvm::toString(process.takeError()));
  (*jit)->getMainJITDylib().addGenerator(std::move(*process));
  const llvm::StringMap<void *> *asyncSymbols = nullptr;
  if (resolvedThreads(options) > 1) {
    auto symbols = asyncRuntimeSymbols();
    if (!symbols)
      return symbols.takeError();
    asyncSymbols = *symbols;
  }
  llvm::orc::MangleAndInterner interner((*jit)->getExecutionSession(), (*jit)->getDataLayout());
  if (llvm::Error err = (*jit)->getMainJITDylib().define(
          llvm::orc::absoluteSymbols(hostSymbols(interner, asyncSymbols))))
    return makeError(llvm::toString(std::move(err)));
  if (llvm::Error err = (*jit)->addObjectFile(
          llvm::MemoryBuffer::getMemBufferCopy(object, "<saved @" + model->entry_ + ">")))
    return makeError("the saved object code does not load: " + llvm::toString(std::move(err)));
  auto fn = (*jit)->lookup("_mlir__mlir_ciface_" + model->entry_);
  if (!fn)
    return makeError("the saved object code has no entry point for @" + model->entry_ + ": " +
                     llvm::toString(fn.takeError()));
  model->function_ = fn->toPtr<void (*)(void **)>();
  model->usesWorkerThreads_ = asyncSymbols != nullptr;
  model->loadedJit_ = std::move(*jit);
  model->timings_.push_back({"load object code", secondsSince(start)});
  return std::move(model);
}

Expected<std::unique_ptr<CompiledModel>> CompiledModel::compile(StringRef source,
                                                                const CompileOptions &options) {
  if (options.target != "cpu" && options.target != "cuda")
    return makeError("unknown target '" + options.target + "' (expected cpu or cuda)");
  if (options.gpuTilesOnHost && options.target != "cpu")
    return makeError("gpuTilesOnHost runs the GPU schedule on target 'cpu'");
  if (options.allReduceGradients) {
    if (options.target != "cpu")
      return makeError("summing gradients over ranks (data parallelism) runs on target 'cpu'");
    // The compiled code calls MPI: it must be there, and started.
    if (auto info = initDistributed(); !info)
      return info.takeError();
  }
  if (!options.targetCpu.empty()) {
    // Code for another CPU runs here only if this host has all its features
    // (znver2's code on a Zen 5, say): anything else dies of SIGILL.
    if (llvm::Error err = checkTargetCpu(options.targetCpu))
      return std::move(err);
    SmallVector<StringRef> features, missing;
    llvm::X86::getFeaturesForCPU(options.targetCpu, features);
    llvm::StringMap<bool> host = llvm::sys::getHostCPUFeatures();
    // System instructions compiled code never uses, which hypervisors hide.
    static const StringRef kSystemOnly[] = {
        "x87",     "mwaitx",   "wbnoinvd", "rdpru",  "clzero", "invpcid",   "sgx", "ptwrite",
        "pconfig", "tsxldtrk", "waitpkg",  "enqcmd", "uintr",  "serialize", "pku"};
    for (StringRef feature : features)
      if (!host.lookup(feature) && !llvm::is_contained(kSystemOnly, feature))
        missing.push_back(feature);
    if (!missing.empty())
      return makeError("code compiled for a " + options.targetCpu + " cannot run on this host (" +
                       llvm::sys::getHostCPUName() + "), which lacks " +
                       llvm::join(ArrayRef<StringRef>(missing).take_front(8), ", ") +
                       (missing.size() > 8 ? ", ..." : ""));
  }
  std::unique_ptr<CompiledModel> model(new CompiledModel());
  model->context_ = createContext();
  MLIRContext &ctx = *model->context_;

  auto start = Clock::now();
  auto module = parseSource(ctx, source, options.sourceName);
  if (!module)
    return module.takeError();
  model->timings_.push_back({"parse", secondsSince(start)});

  auto entry = findEntry(**module, options.entry);
  if (!entry)
    return entry.takeError();
  model->entry_ = entry->getSymName().str();
  CompileOptions opts = options;
  opts.entry = model->entry_;
  if (opts.profile)
    opts.profileFirstId = ProfileRegistry::get().nextBlock.fetch_add(1) * ProfileRegistry::kBlock;
  model->options_ = opts;

  // The logical model, flattened, shape-inferred and differentiated, gives
  // the terminals.
  if (llvm::Error err = runPipeline(**module, opts, "autodiff", "", false, &model->timings_))
    return std::move(err);
  auto root = cast<ModelOp>(SymbolTable::lookupSymbolIn(**module, model->entry_));
  {
    llvm::raw_string_ostream os(model->logicalIR_);
    root.print(os);
  }
  if (llvm::Error err = model->describe(root, options.dynamicShapes))
    return std::move(err);

  start = Clock::now();
  const CudaRuntime *cuda = nullptr;
  if (options.target == "cuda") {
    if (model->dynamic_)
      return makeError("--target=cuda compiles for static shapes: give every input's shape");
    // Loaded first: the host code calls it. Without a driver this is where
    // "no CUDA device" comes from.
    auto runtime = loadCudaRuntime();
    if (!runtime)
      return runtime.takeError();
    cuda = *runtime;
    // The GPU pipeline runs from the source: its front end is the CPU
    // pipeline's without the host schedule.
    auto fresh = parseSource(ctx, source, options.sourceName);
    if (!fresh)
      return fresh.takeError();
    module = std::move(fresh);
    if (llvm::Error err = runGpuPipeline(**module, opts, "binary"))
      return std::move(err);
    model->timings_.push_back({"lower to PTX kernels + host code", secondsSince(start)});
  } else {
    if (llvm::Error err =
            runPipeline(**module, opts, "llvm", "autodiff", /*forJit=*/true, &model->timings_))
      return std::move(err);
    if (opts.profile)
      registerProfiledKernels(**module,
                              model->entry_ + (!opts.gradients          ? ""
                                               : opts.optimizer.empty() ? " gradients"
                                                                        : " train step"),
                              opts.profileFirstId);
  }

  // The calling convention run() relies on: every input, then every output
  // as a destination buffer, and nothing returned.
  auto cInterface = (*module)->lookupSymbol<LLVM::LLVMFuncOp>("_mlir_ciface_" + model->entry_);
  if (!cInterface || cInterface.getNumArguments() != model->inputs_.size() + model->outputs_.size() ||
      !isa<LLVM::LLVMVoidType>(cInterface.getFunctionType().getReturnType()))
    return makeError("internal error: the compiled @" + model->entry_ +
                     " does not take its outputs as destination buffers");

  start = Clock::now();
  auto tm = hostTargetMachine(options.optLevel, options.targetCpu);
  if (!tm)
    return tm.takeError();
  ExecutionEngineOptions engineOptions;
  auto transformer = makeOptimizingTransformer(options.optLevel, 0, tm->get());
  engineOptions.transformer = transformer;
  engineOptions.jitCodeGenOptLevel = (*tm)->getOptLevel();
  // Strided copies lower to memrefCopy, which MLIR's C runner utilities
  // provide.
  SmallVector<StringRef, 2> sharedLibs;
  if (llvm::sys::fs::exists(MITHRIL_C_RUNNER_UTILS))
    sharedLibs.push_back(MITHRIL_C_RUNNER_UTILS);
  // Kernel loads and launches, device memory.
  if (cuda)
    sharedLibs.push_back(cuda->path);
  // Split ops hand their chunks to the async runtime's thread pool.
  const llvm::StringMap<void *> *asyncSymbols = nullptr;
  if (!cuda && resolvedThreads(options) > 1) {
    auto symbols = asyncRuntimeSymbols();
    if (!symbols)
      return symbols.takeError();
    asyncSymbols = *symbols;
  }
  engineOptions.sharedLibPaths = sharedLibs;
  engineOptions.enableGDBNotificationListener = false;
  // Kept for objectCode(): a saved model keeps its compiled code.
  engineOptions.enableObjectDump = !cuda;
  // MITHRIL_PERF=1 lets `perf record -k 1` + `perf inject --jit` name the
  // compiled functions.
  engineOptions.enablePerfNotificationListener = getenv("MITHRIL_PERF") != nullptr;
  auto engine = ExecutionEngine::create(**module, engineOptions, std::move(*tm));
  if (!engine)
    return makeError("JIT compilation of @" + model->entry_ +
                     " failed: " + llvm::toString(engine.takeError()));
  model->engine_ = std::move(*engine);
  model->usesWorkerThreads_ = asyncSymbols != nullptr;
  // Buffers come from the cache (the pipeline's runtime-allocator option);
  // split ops call the async runtime.
  model->engine_->registerSymbols(
      [&](llvm::orc::MangleAndInterner interner) { return hostSymbols(interner, asyncSymbols); });
  auto fn = model->engine_->lookupPacked("_mlir_ciface_" + model->entry_);
  if (!fn)
    return makeError("compiled code has no entry point for @" + model->entry_ + ": " +
                     llvm::toString(fn.takeError()));
  model->function_ = *fn;
  if (cuda) {
    if (llvm::Error err = cuda->checkDevice())
      return std::move(err);
    // PTX for a newer architecture than the GPU's does not load.
    unsigned requested = 0;
    StringRef chip = options.gpuChip;
    if (chip.consume_front("sm_"))
      chip.take_while(llvm::isDigit).getAsInteger(10, requested);
    if (int32_t arch = cuda->deviceArch(); arch > 0 && requested > unsigned(arch))
      return makeError("the GPU is sm_" + std::to_string(arch) + ", older than the " +
                       options.gpuChip + " the kernels were compiled for: compile for sm_" +
                       std::to_string(arch) + " (--gpu-chip)");
    // The global constructors load the kernels onto the GPU.
    model->engine_->initialize();
    if (llvm::Error err = cuda->takenError("loading the kernels of @" + model->entry_))
      return std::move(err);
    model->cuda_ = cuda;
  }
  model->timings_.push_back({"LLVM -O" + std::to_string(options.optLevel) + " + JIT",
                             secondsSince(start)});
  return std::move(model);
}

/// A memref descriptor laid out as the LLVM lowering expects it:
/// {allocated, aligned, offset, sizes[rank], strides[rank]}.
/// `data` is the view's own, or its copy on the GPU.
static void buildDescriptor(std::vector<int64_t> &storage, const TensorView &view,
                            const void *data) {
  size_t rank = view.shape.size();
  storage.assign(3 + 2 * rank, 0);
  storage[0] = reinterpret_cast<int64_t>(data);
  storage[1] = reinterpret_cast<int64_t>(data);
  storage[2] = 0;
  int64_t stride = 1;
  for (size_t i = rank; i-- > 0;) {
    storage[3 + i] = view.shape[i];
    storage[3 + rank + i] = stride;
    stride *= view.shape[i];
  }
}

static llvm::Error checkView(const TerminalInfo &terminal, const TensorView &view,
                             StringRef role) {
  auto fits = [&] {
    if (view.shape.size() != terminal.shape.size())
      return false;
    for (auto [given, declared] : llvm::zip(view.shape, terminal.shape))
      if (!ShapedType::isDynamic(declared) && given != declared)
        return false;
    return true;
  };
  if (view.dtype != terminal.dtype || !fits())
    return makeError(role + " '" + terminal.name + "': expected " + dtypeName(terminal.dtype) +
                     " " + runtime::formatShape(terminal.shape) + ", got " + dtypeName(view.dtype) + " " +
                     runtime::formatShape(view.shape));
  if (!view.data && !view.shape.empty() && numElements(view.shape).value_or(1) > 0)
    return makeError(role + " '" + terminal.name + "' has no data");
  return llvm::Error::success();
}

llvm::Error CompiledModel::run(ArrayRef<TensorView> inputs, ArrayRef<TensorView> outputs) const {
  if (inputs.size() != inputs_.size())
    return makeError("@" + entry_ + " takes " + std::to_string(inputs_.size()) + " inputs, got " +
                     std::to_string(inputs.size()));
  if (outputs.size() != outputs_.size())
    return makeError("@" + entry_ + " has " + std::to_string(outputs_.size()) +
                     " outputs, got buffers for " + std::to_string(outputs.size()));
  for (size_t i = 0; i < inputs.size(); ++i)
    if (llvm::Error err = checkView(inputs_[i], inputs[i], "input"))
      return err;
  for (size_t i = 0; i < outputs.size(); ++i)
    if (llvm::Error err = checkView(outputs_[i], outputs[i], "output"))
      return err;
  // With dynamic dimensions the shape rules check that the inputs agree with
  // each other and say how large each output must be: the code writes
  // exactly that much.
  if (dynamic_) {
    SmallVector<ArrayRef<int64_t>> shapes;
    for (const TensorView &view : inputs)
      shapes.push_back(view.shape);
    auto plan = planShapes(shapes);
    if (!plan)
      return plan.takeError();
    for (size_t i = 0; i < outputs.size(); ++i)
      if (ArrayRef<int64_t>(outputs[i].shape) != ArrayRef<int64_t>(plan->outputs[i]))
        return makeError("output '" + outputs_[i].name + "': expected " +
                         dtypeName(outputs_[i].dtype) + " " +
                         runtime::formatShape(plan->outputs[i]) + " for these inputs, got " +
                         runtime::formatShape(outputs[i].shape));
    if (plan->needsStaticCode) {
      auto code = staticCode(shapes);
      if (!code)
        return code.takeError();
      return (*code)->run(inputs, outputs);
    }
  }
  SmallVector<TensorView> views(inputs.begin(), inputs.end());
  views.append(outputs.begin(), outputs.end());
  auto bytes = [](const TensorView &view) {
    return numElements(view.shape).value_or(0) * dtypeSize(view.dtype);
  };
  // On a GPU the code reads and writes device copies of the arguments.
  SmallVector<void *> deviceData;
  llvm::scope_exit freeDevice([&] {
    for (void *data : deviceData)
      cuda_->free(data);
  });
  if (cuda_) {
    for (const TensorView &view : views)
      deviceData.push_back(cuda_->alloc(bytes(view)));
    for (size_t i = 0; i < inputs.size(); ++i)
      cuda_->copyToDevice(deviceData[i], inputs[i].data, bytes(inputs[i]));
    if (llvm::Error err = cuda_->takenError("copying the inputs of @" + entry_ + " to the GPU"))
      return err;
  }
  std::vector<std::vector<int64_t>> descriptors(views.size());
  for (size_t i = 0; i < views.size(); ++i)
    buildDescriptor(descriptors[i], views[i], cuda_ ? deviceData[i] : views[i].data);
  // The C interface takes a pointer to each descriptor; the packed wrapper
  // takes a pointer to each of those arguments.
  std::vector<void *> descriptorPtrs(descriptors.size());
  std::vector<void *> args(descriptors.size());
  for (size_t i = 0; i < descriptors.size(); ++i) {
    descriptorPtrs[i] = descriptors[i].data();
    args[i] = &descriptorPtrs[i];
  }
  pendingIndexError.reset();
  AllocationRecovery state;
  if (!callRecoverably(function_, args.data(), state))
    return makeError("out of memory: a temporary buffer of " + std::to_string(state.failedBytes) +
                     " bytes for @" + entry_ + " could not be allocated");
  if (pendingIndexError) {
    std::string message = std::move(*pendingIndexError);
    pendingIndexError.reset();
    return makeError(message);
  }
  if (!cuda_)
    return llvm::Error::success();
  for (size_t i = 0; i < outputs.size(); ++i)
    cuda_->copyToHost(outputs[i].data, deviceData[inputs.size() + i], bytes(outputs[i]));
  return cuda_->takenError("running @" + entry_ + " on the GPU");
}

/// The cache key of a set of input shapes: each shape preceded by its rank.
static std::vector<int64_t> shapesKey(ArrayRef<ArrayRef<int64_t>> inputShapes) {
  std::vector<int64_t> key;
  for (ArrayRef<int64_t> shape : inputShapes) {
    key.push_back(static_cast<int64_t>(shape.size()));
    key.insert(key.end(), shape.begin(), shape.end());
  }
  return key;
}

/// Does some op of `concrete` (the model with static shapes) broadcast a
/// size-1 dimension of an operand that `compiled` (the same model, as
/// compiled) has as dynamic? Code compiled for a dynamic size indexes it as
/// the full size. Any op whose result is larger along a size-1 operand
/// dimension counts: the check errs towards compiling static code.
static bool broadcastsDynamicSize(ModelOp compiled, ModelOp concrete) {
  SmallVector<Operation *> before, after;
  compiled.getBodyBlock().walk([&](Operation *op) { before.push_back(op); });
  concrete.getBodyBlock().walk([&](Operation *op) { after.push_back(op); });
  if (before.size() != after.size())
    return true;
  for (auto [dynOp, op] : llvm::zip(before, after)) {
    if (op->getNumResults() == 0 || dynOp->getNumOperands() != op->getNumOperands())
      continue;
    auto rt = dyn_cast<RankedTensorType>(op->getResult(0).getType());
    if (!rt)
      continue;
    for (auto [dynOperand, operand] : llvm::zip(dynOp->getOperands(), op->getOperands())) {
      auto dt = dyn_cast<RankedTensorType>(dynOperand.getType());
      auto ct = dyn_cast<RankedTensorType>(operand.getType());
      if (!dt || !ct || ct.getRank() > rt.getRank() || dt.getRank() != ct.getRank())
        continue;
      for (int64_t d = 0; d < ct.getRank(); ++d)
        if (dt.isDynamicDim(d) && ct.getDimSize(d) == 1 &&
            rt.getDimSize(d + rt.getRank() - ct.getRank()) != 1)
          return true;
    }
  }
  return false;
}

Expected<std::vector<SmallVector<int64_t>>>
CompiledModel::outputShapes(ArrayRef<ArrayRef<int64_t>> inputShapes) const {
  auto plan = planShapes(inputShapes);
  if (!plan)
    return plan.takeError();
  return plan->outputs;
}

Expected<const CompiledModel *>
CompiledModel::staticCode(ArrayRef<ArrayRef<int64_t>> inputShapes) const {
  std::vector<int64_t> key = shapesKey(inputShapes);
  std::lock_guard<std::mutex> lock(staticMutex_);
  if (auto it = staticCode_.find(key); it != staticCode_.end())
    return it->second.get();
  CompileOptions options = options_;
  options.dynamicShapes = false;
  options.shapes.clear();
  for (size_t i = 0; i < inputs_.size(); ++i)
    options.shapes.push_back(shapeSpec(inputs_[i].name, inputShapes[i]));
  auto code = compile(logicalIR_, options);
  if (!code)
    return code.takeError();
  const CompiledModel *result = code->get();
  staticCode_.emplace(std::move(key), std::move(*code));
  return result;
}

Expected<CompiledModel::ShapePlan>
CompiledModel::planShapes(ArrayRef<ArrayRef<int64_t>> inputShapes) const {
  if (inputShapes.size() != inputs_.size())
    return makeError("@" + entry_ + " takes " + std::to_string(inputs_.size()) +
                     " inputs, got shapes for " + std::to_string(inputShapes.size()));
  ShapePlan plan;
  std::vector<SmallVector<int64_t>> &shapes = plan.outputs;
  for (const TerminalInfo &t : outputs_)
    shapes.push_back(t.shape);
  if (!dynamic_)
    return plan;

  std::vector<int64_t> key = shapesKey(inputShapes);
  std::lock_guard<std::mutex> lock(shapesMutex_);
  if (auto it = shapesCache_.find(key); it != shapesCache_.end())
    return it->second;

  // The shape rules of the logical model, on these input shapes.
  MLIRContext &ctx = *context_;
  DiagnosticCollector diags(ctx);
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(logicalIR_, &ctx);
  if (!module)
    return makeError(diags.text + "internal error: the logical IR of @" + entry_ +
                     " does not parse");
  PassManager pm(&ctx);
  MithrilInferShapesOptions infer;
  infer.entry = entry_;
  for (size_t i = 0; i < inputs_.size(); ++i)
    infer.shapes.push_back(shapeSpec(inputs_[i].name, inputShapes[i]));
  pm.addPass(createMithrilInferShapes(infer));
  if (failed(pm.run(*module)))
    return makeError(diags.text + "the input shapes do not fit @" + entry_);
  auto root = module->lookupSymbol<ModelOp>(entry_);
  if (!root)
    return makeError("internal error: @" + entry_ + " is missing from its logical IR");
  shapes.clear();
  for (unsigned i = 0, e = root.getNumOutputs(); i < e; ++i) {
    auto type = cast<RankedTensorType>(root.getFunctionType().getResult(i));
    if (!type.hasStaticShape())
      return makeError("output '" + root.getOutputName(i).str() + "' of @" + entry_ +
                       " still has shape " + mithril::formatShape(type.getShape()) +
                       " for these input shapes");
    shapes.emplace_back(type.getShape());
  }
  OwningOpRef<ModuleOp> compiled = parseSourceString<ModuleOp>(logicalIR_, &ctx);
  auto compiledRoot = compiled ? compiled->lookupSymbol<ModelOp>(entry_) : ModelOp();
  plan.needsStaticCode = !compiledRoot || broadcastsDynamicSize(compiledRoot, root);
  shapesCache_.emplace(std::move(key), plan);
  return plan;
}

/// The host code of a module lowered to the LLVM dialect, optimized for
/// the host CPU (or options.targetCpu) and printed as LLVM IR ("llvm"),
/// assembly ("asm") or an object file ("obj").
static Expected<std::string> emitHostCode(ModuleOp module, const CompileOptions &options,
                                          StringRef format) {
  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> llvmModule = translateModuleToLLVMIR(module, llvmContext);
  if (!llvmModule)
    return makeError("translation of the host code to LLVM IR failed");
  auto tm = hostTargetMachine(options.optLevel, options.targetCpu);
  if (!tm)
    return tm.takeError();
  ExecutionEngine::setupTargetTripleAndDataLayout(llvmModule.get(), tm->get());
  if (llvm::Error err = makeOptimizingTransformer(options.optLevel, 0, tm->get())(llvmModule.get()))
    return std::move(err);
  std::string out;
  llvm::raw_string_ostream os(out);
  if (format == "llvm") {
    llvmModule->print(os, nullptr);
    return out;
  }
  llvm::SmallVector<char, 0> buffer;
  llvm::raw_svector_ostream bos(buffer);
  llvm::legacy::PassManager codegen;
  if ((*tm)->addPassesToEmitFile(codegen, bos, nullptr,
                                 format == "asm" ? llvm::CodeGenFileType::AssemblyFile
                                                 : llvm::CodeGenFileType::ObjectFile))
    return makeError("the host target cannot emit " + format);
  codegen.run(*llvmModule);
  return std::string(buffer.begin(), buffer.end());
}

/// Lowers with mithril-gpu-pipeline and prints the kernels (PTX) or the IR.
static Expected<std::string> emitGpu(ModuleOp module, const CompileOptions &options,
                                     StringRef format, StringRef stopAfter) {
  MLIRContext *ctx = module.getContext();
  DiagnosticCollector diags(*ctx);
  if (format != "ptx" && format != "mlir" && format != "llvm" && format != "asm" &&
      format != "obj")
    return makeError("--target=cuda emits ptx, mlir, llvm, asm or obj, not " + format);
  // The whole GPU pipeline ends at "binary", the CPU one at "llvm".
  StringRef gpuStop = (format == "ptx" || stopAfter == "llvm") ? "binary" : stopAfter;
  if (llvm::Error err = runGpuPipeline(module, options, gpuStop))
    return std::move(err);
  std::string out;
  llvm::raw_string_ostream os(out);
  if (format == "mlir") {
    module.print(os);
    return out;
  }
  if (format == "llvm" || format == "asm" || format == "obj") {
    // The host code: kernel launches become calls into the CUDA runtime
    // library (mgpuModuleLoad, mgpuLaunchKernel, ...), the kernels an
    // embedded PTX module that the global constructors load.
    Expected<std::string> host = emitHostCode(module, options, format);
    if (!host)
      return makeError(diags.text + llvm::toString(host.takeError()));
    return host;
  }
  module.walk([&](gpu::BinaryOp binary) {
    for (Attribute attr : binary.getObjects()) {
      auto object = cast<gpu::ObjectAttr>(attr);
      os << "// kernel module @" << binary.getSymName() << " for "
         << options.gpuChip << "\n"
         << object.getObject().getValue() << "\n";
    }
  });
  if (out.empty())
    return makeError("@" + options.entry + " produced no GPU kernels");
  return out;
}

/// A C identifier made from a terminal name (`layer1.weight` -> layer1_weight).
static std::string cIdentifier(StringRef name) {
  std::string id;
  for (char c : name)
    id += llvm::isAlnum(c) ? c : '_';
  if (id.empty() || llvm::isDigit(id[0]))
    id = "t_" + id;
  return id;
}

static StringRef cType(DType dtype) {
  switch (dtype) {
  case DType::F32: return "float";
  case DType::F64: return "double";
  case DType::I32: return "int32_t";
  case DType::I64: return "int64_t";
  case DType::Bool: return "bool";
  // IEEE half and bfloat16 bit patterns.
  case DType::F16:
    return "uint16_t";
  case DType::BF16:
    return "uint16_t";
  }
  return "void";
}

/// A C header declaring the entry point of --emit=obj: one memref descriptor
/// struct per terminal, inputs then outputs, outputs written in place.
static Expected<std::string> emitHeader(ModuleOp module, const CompileOptions &options) {
  if (llvm::Error err = runPipeline(module, options, "autodiff"))
    return std::move(err);
  auto root = cast<ModelOp>(SymbolTable::lookupSymbolIn(module, options.entry));
  std::string entry = cIdentifier(options.entry);
  std::string guard = "MITHRIL_MODEL_" + llvm::StringRef(entry).upper() + "_H";
  std::string out;
  llvm::raw_string_ostream os(out);
  os << "// Generated by mithril-run --emit=h for @" << options.entry << ".\n";
  if (options.target == "cuda")
    os << "// Link with the object from --emit=obj --target=cuda, -lmithril_cuda_runtime\n"
       << "// and -lmlir_c_runner_utils. Every buffer is GPU memory (cuMemAlloc or any\n"
       << "// allocator of the current CUDA context); the call returns once the kernels\n"
       << "// are done.\n";
  else
    os << "// Link with the object from --emit=obj and -lmlir_c_runner_utils; an object\n"
       << "// compiled for more than one thread (--num-threads, default: all of the\n"
       << "// compiling host's) also needs -lmlir_async_runtime.\n";
  os << "#ifndef " << guard << "\n#define " << guard << "\n\n"
     << "#include <stdbool.h>\n#include <stdint.h>\n\n"
     << "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n";
  std::vector<std::pair<std::string, std::string>> params;
  auto describe = [&](StringRef name, Type type, bool isOutput) -> llvm::Error {
    auto info = describeTerminal(options.entry, name, type, InputKind::Data, !isOutput);
    if (!info)
      return info.takeError();
    std::string id = cIdentifier(name);
    std::string structName = entry + "_" + id + "_t";
    size_t rank = info->shape.size();
    os << "/// " << (isOutput ? "output" : "input") << " '" << name << "': "
       << dtypeName(info->dtype) << " " << runtime::formatShape(info->shape) << "\n"
       << "typedef struct {\n  " << cType(info->dtype) << " *allocated;\n  "
       << cType(info->dtype) << " *aligned;\n  int64_t offset;\n";
    if (rank)
      os << "  int64_t sizes[" << rank << "];\n  int64_t strides[" << rank << "];\n";
    os << "} " << structName << ";\n\n";
    params.emplace_back(structName, (isOutput ? "out_" : "in_") + id);
    return llvm::Error::success();
  };
  for (unsigned i = 0, e = root.getNumInputs(); i < e; ++i)
    if (llvm::Error err = describe(root.getInputName(i), root.getFunctionType().getInput(i), false))
      return std::move(err);
  for (unsigned i = 0, e = root.getNumOutputs(); i < e; ++i)
    if (llvm::Error err = describe(root.getOutputName(i), root.getFunctionType().getResult(i), true))
      return std::move(err);
  os << "/// Runs @" << options.entry << ". Sizes and strides are row-major; outputs are\n"
     << "/// written into the caller's buffers.\n"
     << "void _mlir_ciface_" << options.entry << "(";
  for (size_t i = 0; i < params.size(); ++i)
    os << (i ? ", " : "") << params[i].first << " *" << params[i].second;
  os << ");\n\n#ifdef __cplusplus\n}\n#endif\n\n#endif // " << guard << "\n";
  return out;
}

/// Gives `model` (shape-inferred for one batch size) dynamic sizes where
/// `other` (the same source, for another batch size) differs from it: the
/// sizes that follow the batch. The two graphs must match op for op.
static llvm::Error markBatchSizes(ModelOp model, ModelOp other) {
  auto merge = [](Type a, Type b) -> Type {
    auto ta = dyn_cast<RankedTensorType>(a), tb = dyn_cast<RankedTensorType>(b);
    if (!ta || !tb || ta.getRank() != tb.getRank())
      return a;
    SmallVector<int64_t> shape(ta.getShape());
    for (auto [i, size] : llvm::enumerate(tb.getShape()))
      if (shape[i] != size)
        shape[i] = ShapedType::kDynamic;
    return ta.clone(shape);
  };
  if (model.getNumInputs() != other.getNumInputs())
    return makeError("data parallelism: the model's inputs differ between batch sizes");
  for (unsigned i = 0; i < model.getNumInputs(); ++i)
    model.setInputType(i, merge(model.getArgumentTypes()[i], other.getArgumentTypes()[i]));
  Block &a = model.getBodyBlock(), &b = other.getBodyBlock();
  auto opsA = a.without_terminator(), opsB = b.without_terminator();
  if (std::distance(opsA.begin(), opsA.end()) != std::distance(opsB.begin(), opsB.end()))
    return makeError("data parallelism: the model's graph differs between batch sizes, so "
                     "its batch axis cannot be traced");
  for (auto [opA, opB] : llvm::zip(opsA, opsB)) {
    if (opA.getName() != opB.getName() || opA.getNumResults() != opB.getNumResults())
      return makeError("data parallelism: the model's graph differs between batch sizes ('" +
                       opA.getName().getStringRef().str() + "' against '" +
                       opB.getName().getStringRef().str() +
                       "'), so its batch axis cannot be traced");
    for (auto [ra, rb] : llvm::zip(opA.getResults(), opB.getResults()))
      ra.setType(merge(ra.getType(), rb.getType()));
  }
  return llvm::Error::success();
}

Expected<DataParallelPlan>
mithril::runtime::analyzeDataParallel(StringRef source, const CompileOptions &options,
                                      ArrayRef<std::string> batchedInputs, StringRef doubledSource,
                                      ArrayRef<std::string> doubledShapes) {
  auto ctx = createContext();
  auto module = parseSource(*ctx, source, options.sourceName);
  if (!module)
    return module.takeError();
  CompileOptions front = options;
  front.dynamicShapes = doubledSource.empty();
  front.gradients = false;
  if (llvm::Error err = runPipeline(**module, front, "shapes"))
    return std::move(err);
  auto model = findEntry(**module, options.entry);
  if (!model)
    return model.takeError();
  OwningOpRef<ModuleOp> doubled;
  if (!doubledSource.empty()) {
    // Static sizes, twice: the sizes that change with the batch are its.
    auto parsed = parseSource(*ctx, doubledSource, options.sourceName);
    if (!parsed)
      return parsed.takeError();
    doubled = std::move(*parsed);
    CompileOptions frontDoubled = front;
    frontDoubled.shapes.assign(doubledShapes.begin(), doubledShapes.end());
    if (llvm::Error err = runPipeline(*doubled, frontDoubled, "shapes"))
      return std::move(err);
    auto other = findEntry(*doubled, options.entry);
    if (!other)
      return other.takeError();
    if (llvm::Error err = markBatchSizes(*model, *other))
      return std::move(err);
  }
  SmallVector<unsigned> batched;
  for (const std::string &name : batchedInputs) {
    std::optional<unsigned> index = model->lookupInput(name);
    if (!index)
      return makeError("data parallelism: the model has no input '" + name + "'");
    batched.push_back(*index);
  }
  std::vector<std::string> batchedNames(batchedInputs.begin(), batchedInputs.end());
  if (batchedInputs.empty()) {
    // Every data input whose axis 0 is left dynamic.
    for (unsigned i = 0; i < model->getNumInputs(); ++i) {
      auto type = dyn_cast<RankedTensorType>(model->getArgumentTypes()[i]);
      if (model->getInputKind(i) == InputKind::Data && type && type.getRank() > 0 &&
          type.isDynamicDim(0)) {
        batched.push_back(i);
        batchedNames.push_back(model->getInputName(i).str());
      }
    }
    if (batched.empty())
      return makeError("data parallelism: no data input has a dynamic batch axis (axis 0) to "
                       "split across ranks");
  }
  DiagnosticCollector diags(*ctx);
  FailureOr<SmallVector<BatchSharding>> outputs = analyzeBatchSharding(*model, batched);
  if (failed(outputs)) {
    std::string reproduce = pipelineOptions(front, "shapes", "");
    return makeError(diags.text + "reproduce with: mithril-opt --pass-pipeline='builtin.module(" +
                     "mithril-cpu-pipeline{" + reproduce + "},mithril-batch-sharding{inputs=" +
                     llvm::join(batchedNames, ",") + "})' " + options.sourceName);
  }
  DataParallelPlan plan;
  plan.batchedInputs = std::move(batchedNames);
  for (auto [i, sharding] : llvm::enumerate(*outputs))
    plan.outputs.push_back({model->getOutputName(i).str(), sharding});
  return plan;
}

Expected<std::string> mithril::runtime::runPasses(StringRef source, StringRef pipeline,
                                                  StringRef sourceName) {
  // The registry parsePassPipeline reads: upstream's generic transforms
  // (canonicalize, cse, ...) and every mithril pass and pipeline.
  static std::once_flag registered;
  std::call_once(registered, [] {
    mlir::registerTransformsPasses();
    mithril::registerAllPasses();
  });
  auto ctx = createContext();
  auto module = parseSource(*ctx, source, sourceName);
  if (!module)
    return module.takeError();
  DiagnosticCollector diags(*ctx);
  PassManager pm(ctx.get());
  std::string parseErrors;
  llvm::raw_string_ostream errors(parseErrors);
  // The manager is anchored on the module already: an explicit
  // `builtin.module(...)` around the pipeline (mithril-opt's --pass-pipeline
  // form) would nest it under modules inside this one, and it would run on
  // nothing.
  StringRef passes = pipeline.trim();
  if (passes.consume_front("builtin.module(") && passes.consume_back(")"))
    pipeline = passes;
  if (failed(parsePassPipeline(pipeline, pm, errors)))
    return makeError("pass pipeline '" + pipeline + "': " + parseErrors);
  if (failed(pm.run(**module)))
    return makeError(diags.text + "reproduce with: mithril-opt --pass-pipeline='builtin.module(" +
                     pipeline + ")' " + sourceName);
  std::string out;
  llvm::raw_string_ostream os(out);
  (*module)->print(os);
  return out;
}

Expected<std::string> mithril::runtime::emit(StringRef source, const CompileOptions &options,
                                             StringRef format, StringRef stopAfter) {
  if (options.target != "cpu" && options.target != "cuda")
    return makeError("unknown target '" + options.target + "' (expected cpu or cuda)");
  if (format != "mlir" && format != "llvm" && format != "asm" && format != "obj" &&
      format != "h" && !(format == "ptx" && options.target == "cuda"))
    return makeError("unknown --emit format '" + format +
                     "' (expected mlir, llvm, asm, obj, h, or ptx with --target=cuda)");
  auto ctx = createContext();
  auto module = parseSource(*ctx, source, options.sourceName);
  if (!module)
    return module.takeError();
  auto entry = findEntry(**module, options.entry);
  if (!entry)
    return entry.takeError();
  CompileOptions opts = options;
  opts.entry = entry->getSymName().str();
  if (llvm::Error err = checkTargetCpu(opts.targetCpu))
    return std::move(err);
  if (format == "h")
    return emitHeader(**module, opts);
  if (options.target == "cuda")
    return emitGpu(**module, opts, format, stopAfter);
  if (format != "mlir" && stopAfter != "llvm")
    return makeError("--mlir-stage applies to --emit=mlir only");
  if (llvm::Error err = runPipeline(**module, opts, stopAfter))
    return std::move(err);
  std::string out;
  llvm::raw_string_ostream os(out);
  if (format == "mlir") {
    (*module)->print(os);
    return out;
  }
  return emitHostCode(**module, options, format);
}
