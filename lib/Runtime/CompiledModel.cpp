//===- CompiledModel.cpp - a model compiled for the host CPU --------------===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//

#include "mithril/Runtime/CompiledModel.h"
#include "CompileCache.h"
#include "CudaDevice.h"
#include "Driver.h"
#include "TaskPool.h"
#include "mithril/Runtime/Distributed.h"

#include "mithril/Codegen/CPU/CpuTarget.h"
#include "mithril/Dialect/Mithril/IR/MithrilOps.h"
#include "mithril/Dialect/Mithril/Transforms/BufferizableOpInterfaceImpl.h"
#include "mithril/Dialect/Mithril/Transforms/Passes.h"
#include "mithril/Dialect/Mithril/Transforms/SliceSubsetModels.h"
#include "mithril/InitAllDialects.h"
#include "mithril/InitAllPasses.h"
#include "mithril/Pipelines/Pipelines.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "mlir/Transforms/Passes.h"

#include "llvm/Analysis/ScalarEvolution.h"
#include "llvm/ExecutionEngine/Orc/ExecutionUtils.h"
#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/ExecutionEngine/Orc/LLJIT.h"
#include "llvm/IR/IntrinsicInst.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/PassTimingInfo.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/X86TargetParser.h"
#include "llvm/Transforms/Scalar/LoopPassManager.h"
#include "llvm/Transforms/Scalar/LoopUnrollPass.h"
#include "llvm/Transforms/Utils/LoopUtils.h"

#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/DynamicLibrary.h"

#include <atomic>
#include <chrono>
#include <csetjmp>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

using namespace mlir;
using namespace mithril;
using namespace mithril::runtime;
using namespace mithril::runtime::detail;
using llvm::Expected;

llvm::Error mithril::runtime::detail::makeError(const llvm::Twine &message) {
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

/// Writes a location the way compilers do: `file:line:col`, or the path of
/// the op or terminal it names.
void mithril::runtime::detail::printLocation(llvm::raw_ostream &os, Location loc) {
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

std::unique_ptr<MLIRContext> mithril::runtime::createContext() {
  DialectRegistry registry;
  // Before upstream's models of the same interfaces: the first one wins.
  mithril::registerSliceSubsetModels(registry);
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  mlir::registerAllToLLVMIRTranslations(registry);
  mithril::registerAllDialects(registry);
  mithril::registerBufferizableOpInterfaceExternalModels(registry);
  auto ctx = std::make_unique<MLIRContext>(registry, MLIRContext::Threading::DISABLED);
  // Users see diagnostics, not dumps of the op they are about.
  ctx->printOpOnDiagnostic(false);
  ctx->loadDialect<MithrilDialect>();
  return ctx;
}

Expected<OwningOpRef<ModuleOp>> mithril::runtime::parseSource(MLIRContext &ctx, StringRef source,
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
bool mithril::runtime::isAddedByGradients(StringRef name) {
  return name.starts_with("grad:") || name.starts_with("state:") || name.starts_with("optimizer.");
}

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
    "operator_fusion",  "vectorization",        "memory_planning",       "approximate_math"};

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
                   .Case("approximate_math", &options.approximateMath)
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
  options.fusion = options.schedule = options.approximateMath = rank >= 2;
  options.optLevel = static_cast<unsigned>(rank);
  return llvm::Error::success();
}

/// The root model to compile: the named one, or the only un-instantiated one.
Expected<ModelOp> mithril::runtime::detail::findEntry(ModuleOp module, StringRef entry) {
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
    return makeError("no model named '" + entry + "' (models: " + (names.empty() ? "none" : names) +
                     ")");
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

Expected<TerminalInfo> mithril::runtime::detail::describeTerminal(StringRef modelName,
                                                                  StringRef name, Type type,
                                                                  InputKind kind, bool isInput,
                                                                  bool allowDynamic) {
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

/// The C functions the custom calls of `root` name, by name. Each is its
/// address in options.externalSymbols, or a symbol of options'
/// sharedLibraries (loaded into the process now) or of the process; one
/// that is none is an error naming the op.
static Expected<llvm::StringMap<void *>> resolveCustomCalls(ModelOp root,
                                                            const CompileOptions &options) {
  llvm::StringMap<void *> resolved;
  SmallVector<CustomCallOp> calls;
  root.walk([&](CustomCallOp call) { calls.push_back(call); });
  if (calls.empty())
    return resolved;
  if (options.target != "cpu")
    return makeError("'mithril.custom_call' @" + calls.front().getCallee().str() +
                     " calls a C function of the host: it runs on target 'cpu' only");
  SmallVector<llvm::sys::DynamicLibrary> libraries;
  for (const std::string &path : options.sharedLibraries) {
    std::string error;
    auto library = llvm::sys::DynamicLibrary::getPermanentLibrary(path.c_str(), &error);
    if (!library.isValid())
      return makeError("cannot load the shared library '" + path + "': " + error);
    libraries.push_back(library);
  }
  for (CustomCallOp call : calls) {
    StringRef name = call.getCallee();
    if (resolved.count(name))
      continue;
    void *address = nullptr;
    if (auto it = options.externalSymbols.find(name.str()); it != options.externalSymbols.end())
      address = reinterpret_cast<void *>(static_cast<uintptr_t>(it->second));
    for (llvm::sys::DynamicLibrary &library : libraries)
      if (!address)
        address = library.getAddressOfSymbol(name.data());
    if (!address)
      address = llvm::sys::DynamicLibrary::SearchForAddressOfSymbol(name.str());
    std::string path = locationName(call.getLoc());
    if (!address)
      return makeError((path.empty() ? "" : path + ": ") + "'mithril.custom_call' @" + name.str() +
                       ": no C function '" + name.str() + "' in " +
                       (options.sharedLibraries.empty()
                            ? std::string("the process")
                            : "the shared libraries given (" +
                                  llvm::join(options.sharedLibraries, ", ") + ") or the process") +
                       " (give its library with --shared-lib, or register it with "
                       "MlirBackend.register_primitive)");
    resolved[name] = address;
  }
  return resolved;
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

/// Loop strength reduction in the code generator for AVX2 code only. With
/// 32 vector registers the schedule's loops step through their views with
/// one index each, and LSR (with the IV users analysis it runs on) took a
/// fifth of the machine code's time, 35 of 175 ms of a CNN training step's
/// on one core, for the same run times (sgemm 1024, the MLP, the CNN and
/// their training steps, int8, bf16; AMD EPYC Zen 4); AVX2 code, 16
/// registers, ran the CNN 8-10% slower without it. LLVM has no switch for
/// it but its process-wide command-line option, set here for the code about
/// to be compiled (a race between two threads compiling for different
/// vector widths at once costs speed, not correctness); MITHRIL_LLVM_LSR=1
/// keeps LSR on everywhere.
static void chooseLoopStrengthReduction(const llvm::TargetMachine &tm) {
  static llvm::cl::Option *disableLsr = llvm::cl::getRegisteredOptions().lookup("disable-lsr");
  const char *keep = getenv("MITHRIL_LLVM_LSR");
  if (!disableLsr || (keep && StringRef(keep) == "1"))
    return;
  bool wide = tm.getMCSubtargetInfo()->checkFeatures("+avx512f");
  disableLsr->addOccurrence(0, "disable-lsr", wide ? "true" : "false");
}

/// The target machine code is compiled for: the host's, or `cpu`'s.
Expected<std::unique_ptr<llvm::TargetMachine>>
mithril::runtime::detail::hostTargetMachine(unsigned optLevel, StringRef cpu) {
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
  // float16 arithmetic rounds after every op on every CPU, as numpy's does:
  // with AVX512-FP16's native half arithmetic LLVM fused a float16 product
  // into the sum after it (one rounding, not two), so Sapphire Rapids gave
  // other numbers than Zen 4 for the same model. Conversions keep F16C.
  builder->getFeatures().AddFeature("avx512fp16", false);
  builder->setCodeGenOptLevel(optLevel >= 3 ? llvm::CodeGenOptLevel::Aggressive
                                            : llvm::CodeGenOptLevel::Default);
  // A product feeding a sum becomes one fused multiply-add, as in BLAS
  // kernels: twice the arithmetic per instruction, and one rounding fewer.
  // The vectorized register tiles are separate mulf/addf, which LLVM fuses
  // only when told it may.
  builder->getOptions().AllowFPOpFusion = llvm::FPOpFusion::Fast;
  auto tm = builder->createTargetMachine();
  if (tm)
    chooseLoopStrengthReduction(**tm);
  return tm;
}

namespace {
/// What LLVM's late full unrolling may still unroll in scheduled code: the
/// schedule has unrolled its register tiles itself, and what it leaves to
/// LLVM are the short loops that build a value in registers (a strided
/// transfer's scalar loads into a vector, a tile's rows into an array of
/// vectors), which must unroll to stay there (sgemm ran 2x slower without),
/// and arithmetic loops of few iterations, whose iterations interleave (the
/// bench CNN's AVX2 code ran 2% slower with them rolled). Loops that only
/// move data (packing copies, fills, padding) and longer arithmetic loops
/// run as fast rolled; LLVM unrolled those of up to ~150 instructions, 7%
/// of a CNN training step's code. Those are marked not to unroll here
/// unless they are tiny (trips x body <= kBudget).
struct LimitFullUnroll : llvm::PassInfoMixin<LimitFullUnroll> {
  static constexpr uint64_t kBudget = 16;
  static constexpr unsigned kMinArithmeticTrips = 8;
  llvm::PreservedAnalyses run(llvm::Loop &loop, llvm::LoopAnalysisManager &,
                              llvm::LoopStandardAnalysisResults &results, llvm::LPMUpdater &) {
    if (llvm::hasUnrollTransformation(&loop) != llvm::TM_Unspecified)
      return llvm::PreservedAnalyses::all();
    for (llvm::PHINode &phi : loop.getHeader()->phis())
      if (phi.getType()->isVectorTy() || phi.getType()->isAggregateType())
        return llvm::PreservedAnalyses::all();
    unsigned trips = results.SE.getSmallConstantTripCount(&loop);
    if (trips <= 1)
      return llvm::PreservedAnalyses::all();
    uint64_t body = 0;
    bool arithmetic = false;
    for (llvm::BasicBlock *block : loop.blocks())
      for (llvm::Instruction &instruction : *block) {
        body += !llvm::isa<llvm::PHINode>(instruction) && !instruction.isTerminator();
        // Floating-point results of operations, not of loads (a masked
        // load is an intrinsic too).
        arithmetic |=
            instruction.getType()->isFPOrFPVectorTy() && !instruction.mayReadOrWriteMemory() &&
            llvm::isa<llvm::BinaryOperator, llvm::UnaryOperator, llvm::IntrinsicInst>(instruction);
      }
    if (arithmetic && trips < kMinArithmeticTrips)
      return llvm::PreservedAnalyses::all();
    // Metadata only: the loop and every analysis stay as they were.
    if (body * trips > kBudget)
      llvm::addStringMetadataToLoop(&loop, "llvm.loop.unroll.disable", 1);
    return llvm::PreservedAnalyses::all();
  }
};
} // namespace

/// LLVM's passes over code the schedule has tiled, vectorized and unrolled
/// (-O2), in place of LLVM's -O2 pipeline, which is built for code as C
/// compilers write it: inlining, interprocedural propagation and eight
/// rounds of InstCombine, each against what the others undo. Kept: the
/// cleanup of the LLVM dialect's output (SROA, EarlyCSE, one InstCombine),
/// loop-invariant code motion, the late full unrolling the schedule relies
/// on (LimitFullUnroll's), GVN's redundant loads across unrolled copies,
/// dead stores (but the entry's, see above), LLVM's loop vectorizer where
/// the schedule leaves a loop scalar, and SLP (the AVX2 tile's broadcasts).
/// The CNN training step's IR passes 79 -> 55 ms on two compile threads, the
/// same run times and the same outputs bit for bit (sgemm, MLP and CNN,
/// their training steps, bf16, int8; AMD EPYC Zen 4). -O3 keeps LLVM's, and
/// so does code with coroutines.
constexpr llvm::StringLiteral kScheduledCodePipeline =
    "function<eager-inv>("
    "sroa<modify-cfg>,early-cse<memssa>,instcombine<max-iterations=1;no-verify-fixpoint>,"
    "loop-mssa(licm<no-allowspeculation>,loop-rotate<header-duplication;no-prepare-for-lto>,"
    "licm<allowspeculation>),"
    "simplifycfg,loop(mithril-limit-full-unroll,loop-unroll-full),sroa<modify-cfg>,gvn<>,"
    "instcombine<max-iterations=1;no-verify-fixpoint>,dse,"
    "loop-vectorize<no-interleave-forced-only;no-vectorize-forced-only;>,infer-alignment,"
    "slp-vectorizer,vector-combine,instcombine<max-iterations=1;no-verify-fixpoint>,"
    "loop-mssa(licm<allowspeculation>),simplifycfg),"
    "globaldce";

std::function<llvm::Error(llvm::Module *)>
mithril::runtime::detail::llvmOptimizer(unsigned optLevel, bool scheduled,
                                        llvm::TargetMachine *tm) {
  return [optLevel, scheduled, tm](llvm::Module *module) -> llvm::Error {
    // A split op's body, outlined by async-parallel-for, is called by the
    // caller for its own share and by the task of each other share: inlined,
    // it was compiled two or three times (an MLP training step on two
    // threads: 1.4x the code of one thread's, 10% of its compile).
    for (llvm::Function &function : *module)
      if (!function.isDeclaration() && function.getName().starts_with("parallel_compute_fn"))
        function.addFnAttr(llvm::Attribute::NoInline);
    // The schedule unrolls its register tiles and vectorizes the loops it
    // wants vectorized. LLVM still fully unrolls short loops (a transfer's
    // 8 strided loads: sgemm is 2x slower without), but its partial and
    // runtime unrolling of the others only grew the code: 1.4x the LLVM IR
    // of an MLP training step, a quarter of its time in LLVM.
    // (Measured on a Zen 4: the same speed for sgemm, the MLP, the CNN and
    // their training steps, int8; the MLP step's LLVM time 0.65 -> 0.55 s.)
    llvm::PipelineTuningOptions tuning;
    tuning.LoopUnrolling = false;
    tuning.LoopInterleaving = false;
    // Off by default: a transfer's strided loads are scalar until it packs
    // them back into vectors (the AVX2 matmul tile's broadcasts).
    tuning.SLPVectorization = true;
    tuning.LoopVectorization = true;
    llvm::LoopAnalysisManager loops;
    llvm::FunctionAnalysisManager functions;
    llvm::CGSCCAnalysisManager sccs;
    llvm::ModuleAnalysisManager modules;
    // (IndVarSimplify and loop load elimination are only in LLVM's
    // pipelines, which -O3 and code with coroutines take; DSE is in the
    // lean one below too.)
    // IndVarSimplify rewrites the induction variables of loops the schedule
    // has already vectorized and unrolled: 15% of the IR passes' time of an
    // MLP training step (20-25 ms) for the same run times without it (sgemm,
    // MLP, CNN and their training steps, bf16, int8; AMD EPYC Zen 4). LLVM's
    // loop vectorizer needs it where the schedule is off (an unscheduled CNN
    // ran 1.1-1.4x slower without it).
    //
    // Nor loop load elimination, which forwards a value stored in one
    // iteration to a load of the next: the schedule's loops carry their
    // values in registers already. 10% of the IR passes of the CNN training
    // step (18 of 175 ms on one core), the same code generation time and run
    // times (CNN, MLP and their training steps, sgemm; AVX-512 and AVX2
    // code; Intel Xeon with AMX).
    //
    // Nor dead store elimination in a model's entry function (the one its C
    // interface `_mlir_ciface_<entry>` calls): allocations, padding and a
    // packed argument list a kernel call on the task pool, thousands of
    // stores none of which is dead, over which DSE took 40% of the IR
    // passes of a CNN training step's entry (48 ms, its piece's critical
    // path); the kernels keep it.
    llvm::PassInstrumentationCallbacks callbacks;
    if (scheduled) {
      llvm::StringSet<> entries;
      for (llvm::Function &function : *module)
        if (StringRef name = function.getName(); name.consume_front("_mlir_ciface_"))
          entries.insert(name);
      callbacks.registerShouldRunOptionalPassCallback(
          [entries = std::move(entries)](llvm::StringRef pass, llvm::Any ir) {
            if (pass == "IndVarSimplifyPass" || pass == "LoopLoadEliminationPass")
              return false;
            if (pass == "DSEPass")
              if (const auto *function = llvm::any_cast<const llvm::Function *>(&ir))
                return !entries.contains((*function)->getName());
            return true;
          });
    }
    // LLVM's -time-passes (mithril-run --time-passes) times these passes
    // too, a report a piece.
    std::optional<llvm::TimePassesHandler> timer;
    if (llvm::TimePassesIsEnabled) {
      timer.emplace(/*Enabled=*/true);
      timer->registerCallbacks(callbacks);
    }
    llvm::PassBuilder builder(tm, tuning, std::nullopt, &callbacks);
    builder.registerLateLoopOptimizationsEPCallback(
        [scheduled](llvm::LoopPassManager &passes, llvm::OptimizationLevel level) {
          if (scheduled)
            passes.addPass(LimitFullUnroll());
          passes.addPass(llvm::LoopFullUnrollPass(level.getSpeedupLevel(),
                                                  /*OnlyWhenForced=*/false,
                                                  /*ForgetSCEV=*/false));
        });
    builder.registerModuleAnalyses(modules);
    builder.registerCGSCCAnalyses(sccs);
    builder.registerFunctionAnalyses(functions);
    builder.registerLoopAnalyses(loops);
    builder.crossRegisterProxies(loops, functions, sccs, modules);
    if (optLevel == 0) {
      builder.buildO0DefaultPipeline(llvm::OptimizationLevel::O0).run(*module, modules);
      return llvm::Error::success();
    }
    llvm::OptimizationLevel level = optLevel == 1   ? llvm::OptimizationLevel::O1
                                    : optLevel == 2 ? llvm::OptimizationLevel::O2
                                                    : llvm::OptimizationLevel::O3;
    // Coroutines (the async runtime of emitted object code) need LLVM's
    // coroutine passes, which its own pipelines place.
    bool coroutines = llvm::any_of(*module, [](llvm::Function &function) {
      return function.isIntrinsic() && function.getName().starts_with("llvm.coro.");
    });
    if (scheduled && optLevel == 2 && !coroutines) {
      builder.registerPipelineParsingCallback(
          [](llvm::StringRef name, llvm::LoopPassManager &passes,
             llvm::ArrayRef<llvm::PassBuilder::PipelineElement>) {
            if (name != "mithril-limit-full-unroll")
              return false;
            passes.addPass(LimitFullUnroll());
            return true;
          });
      llvm::ModulePassManager passes;
      if (llvm::Error err = builder.parsePassPipeline(passes, kScheduledCodePipeline))
        return err;
      passes.run(*module, modules);
      return llvm::Error::success();
    }
    builder.buildPerModuleDefaultPipeline(level).run(*module, modules);
    return llvm::Error::success();
  };
}

CompiledModel::~CompiledModel() {
  // A task signals its completion from compiled code and then still runs a
  // few instructions of it on its way back to the pool: wait until none
  // runs before the code is freed.
  if (usesWorkerThreads_)
    waitForPoolTasks();
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
  if (auto names = root->getAttrOfType<ArrayAttr>(kDiscardedAttr))
    for (auto name : names.getAsValueRange<StringAttr>())
      discarded_.push_back(name.str());
  auto isDynamic = [](const TerminalInfo &t) {
    return llvm::any_of(t.shape, ShapedType::isDynamic);
  };
  dynamic_ = llvm::any_of(inputs_, isDynamic) || llvm::any_of(outputs_, isDynamic);
  return llvm::Error::success();
}

llvm::Error CompiledModel::linkCode(std::string code, StringRef what,
                                    const llvm::StringMap<void *> *asyncSymbols,
                                    const llvm::StringMap<void *> &customCalls) {
  auto jit = linkObjects(code, what, asyncSymbols, customCalls);
  if (!jit)
    return jit.takeError();
  auto fn = (*jit)->lookup("_mlir__mlir_ciface_" + entry_);
  if (!fn)
    return makeError("the object code of " + what + " has no entry point for @" + entry_ + ": " +
                     llvm::toString(fn.takeError()));
  function_ = fn->toPtr<void (*)(void **)>();
  jit_ = std::move(*jit);
  objectCode_ = std::move(code);
  return llvm::Error::success();
}

Expected<std::string> CompiledModel::objectCode() const {
  if (objectCode_.empty())
    return makeError("only a model compiled for the CPU has object code");
  return objectCode_;
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
  // The JIT needs the host target, which a process that loads before it
  // compiles has not set up yet.
  initializeLLVM();
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
  auto customCalls = resolveCustomCalls(*entry, options);
  if (!customCalls)
    return customCalls.takeError();

  auto start = Clock::now();
  // Code compiled for AMX needs the process's tile state before it runs.
  (void)mithril::hostAllowsAmxTiles();
  // Code saved by builds before the task pool's mithrilParallelFor calls the
  // async runtime for its split ops.
  const llvm::StringMap<void *> *asyncSymbols = nullptr;
  if (resolvedThreads(options) > 1) {
    auto symbols = asyncRuntimeSymbols();
    if (!symbols)
      return symbols.takeError();
    asyncSymbols = *symbols;
  }
  if (llvm::Error err =
          model->linkCode(object.str(), "the saved @" + model->entry_, asyncSymbols, *customCalls))
    return std::move(err);
  model->usesWorkerThreads_ = asyncSymbols != nullptr;
  model->timings_.push_back({"load object code", secondsSince(start)});
  return std::move(model);
}

Expected<std::unique_ptr<CompiledModel>> CompiledModel::compile(StringRef source,
                                                                const CompileOptions &options) {
  std::optional<CompileCache> cache = CompileCache::forOptions(options);
  if (!cache || options.interfaceOnly)
    return compileFresh(source, options);
  std::string key = cache->key(source, options);
  if (std::optional<CompileCache::Entry> entry = cache->lookup(key)) {
    auto start = Clock::now();
    auto loaded = load(entry->object, entry->logicalIR, hostCPU(), options);
    if (loaded) {
      (*loaded)->timings_.insert((*loaded)->timings_.begin(),
                                 {"compile cache hit", secondsSince(start)});
      return loaded;
    }
    // An entry that does not load is compiled again (and replaced).
    llvm::consumeError(loaded.takeError());
  }
  auto start = Clock::now();
  auto model = compileFresh(source, options);
  if (!model)
    return model;
  if (auto object = (*model)->objectCode())
    cache->store(key, {*object, (*model)->logicalIR_}, secondsSince(start));
  else
    llvm::consumeError(object.takeError());
  return model;
}

Expected<std::unique_ptr<CompiledModel>>
CompiledModel::compileFresh(StringRef source, const CompileOptions &options) {
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
    if (options.windowRanks == 0) {
      // Code that adds the ranks' operands in their shared window itself,
      // where they share one (1: the runtime sums).
      auto ranks = sharedWindowRanks(Group::Data);
      if (!ranks)
        return ranks.takeError();
      CompileOptions shared = options;
      shared.windowRanks = std::max(1, *ranks);
      return compileFresh(source, shared);
    }
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
    opts.profileFirstId = reserveProfileIds();
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
  auto customCalls = resolveCustomCalls(root, opts);
  if (!customCalls)
    return customCalls.takeError();
  if (options.interfaceOnly) {
    // The lowering to linalg too (a few ms): an op this backend cannot
    // lower (a size it needs static) is an error of the model, reported
    // when the model is compiled rather than at its first run.
    if (options.target == "cpu")
      if (llvm::Error err =
              runPipeline(**module, opts, "linalg", "autodiff", /*forJit=*/true, &model->timings_))
        return std::move(err);
    return std::move(model);
  }

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
  if (!cInterface ||
      cInterface.getNumArguments() != model->inputs_.size() + model->outputs_.size() ||
      !isa<LLVM::LLVMVoidType>(cInterface.getFunctionType().getReturnType()))
    return makeError("internal error: the compiled @" + model->entry_ +
                     " does not take its outputs as destination buffers");

  // The outputs the pipeline proved may overwrite their inputs.
  if (auto entry = (*module)->lookupSymbol<LLVM::LLVMFuncOp>(model->entry_))
    if (auto names = entry->getAttrOfType<ArrayAttr>("mithril.in_place_outputs"))
      for (auto name : names.getAsValueRange<StringAttr>())
        for (TerminalInfo &output : model->outputs_)
          if (output.name == name && name.starts_with("new:"))
            output.inPlaceOf = name.drop_front(4).str();

  std::string level = std::to_string(options.optLevel);
  if (!cuda) {
    // Translated once, then optimized and compiled in pieces on threads
    // (the pipeline gave each large kernel a function of its own), and the
    // pieces linked by the JIT.
    start = Clock::now();
    llvm::LLVMContext llvmContext;
    std::unique_ptr<llvm::Module> llvmModule = translateModuleToLLVMIR(**module, llvmContext);
    if (!llvmModule)
      return makeError("internal error: the code of @" + model->entry_ +
                       " does not translate to LLVM IR");
    double optimizeSeconds = 0;
    auto objects = compileObjects(*llvmModule, options, "_mlir_ciface_" + model->entry_,
                                  compileThreadsFor(options), optimizeSeconds);
    if (!objects)
      return makeError("JIT compilation of @" + model->entry_ +
                       " failed: " + llvm::toString(objects.takeError()));
    llvmModule.reset();
    auto code = packObjects(*objects);
    if (!code)
      return code.takeError();
    // AMX tiles (mithril-x86-tile-matmuls) need the process's tile state.
    (void)mithril::hostAllowsAmxTiles();
    // Buffers come from the cache (the pipeline's runtime-allocator option);
    // split ops hand their chunks to the task pool through mithrilParallelFor
    // (its task-pool option): the async runtime is not needed.
    if (llvm::Error err = model->linkCode(std::move(*code), "@" + model->entry_,
                                          /*asyncSymbols=*/nullptr, *customCalls))
      return std::move(err);
    model->usesWorkerThreads_ = resolvedThreads(options) > 1;
    // The last phase keeps its name: translation to LLVM IR, code
    // generation and linking; LLVM's IR optimization is listed before it.
    model->timings_.push_back({"LLVM IR passes -O" + level, optimizeSeconds});
    model->timings_.push_back(
        {"LLVM -O" + level + " + JIT", secondsSince(start) - optimizeSeconds});
    return std::move(model);
  }

  start = Clock::now();
  auto tm = hostTargetMachine(options.optLevel, options.targetCpu);
  if (!tm)
    return tm.takeError();
  ExecutionEngineOptions engineOptions;
  // Timed apart from the translation and the code generation around it;
  // the JIT runs it when the entry point is first looked up, below.
  // (The engine keeps a function_ref: the function lives here.)
  double optimizeSeconds = 0;
  std::function<llvm::Error(llvm::Module *)> transformer =
      [optimize = llvmOptimizer(options.optLevel, options.schedule, tm->get()),
       &optimizeSeconds](llvm::Module *module) {
        auto optimizeStart = Clock::now();
        llvm::Error err = optimize(module);
        optimizeSeconds = secondsSince(optimizeStart);
        return err;
      };
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
  engineOptions.sharedLibPaths = sharedLibs;
  engineOptions.enableGDBNotificationListener = false;
  // MITHRIL_PERF=1 lets `perf record -k 1` + `perf inject --jit` name the
  // compiled functions.
  engineOptions.enablePerfNotificationListener = getenv("MITHRIL_PERF") != nullptr;
  // AMX tiles (mithril-x86-tile-matmuls) need the process's tile state.
  (void)mithril::hostAllowsAmxTiles();
  auto engine = ExecutionEngine::create(**module, engineOptions, std::move(*tm));
  if (!engine)
    return makeError("JIT compilation of @" + model->entry_ +
                     " failed: " + llvm::toString(engine.takeError()));
  model->engine_ = std::move(*engine);
  model->usesWorkerThreads_ = !cuda && resolvedThreads(options) > 1;
  // Buffers come from the cache (the pipeline's runtime-allocator option);
  // split ops hand their chunks to the task pool through mithrilParallelFor
  // (its task-pool option): the async runtime is not needed.
  model->engine_->registerSymbols([&](llvm::orc::MangleAndInterner interner) {
    return hostSymbols(interner, /*asyncSymbols=*/nullptr, *customCalls);
  });
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
  model->timings_.push_back({"LLVM IR passes -O" + level, optimizeSeconds});
  model->timings_.push_back({"LLVM -O" + level + " + JIT", secondsSince(start) - optimizeSeconds});
  return std::move(model);
}

/// Appends to `storage` the memref descriptor of `view` laid out as the LLVM
/// lowering expects it: {allocated, aligned, offset, sizes[rank],
/// strides[rank]}. `data` is the view's own, or its copy on the GPU.
static void appendDescriptor(SmallVectorImpl<int64_t> &storage, const TensorView &view,
                             const void *data) {
  size_t rank = view.shape.size(), start = storage.size();
  storage.resize(start + 3 + 2 * rank);
  int64_t *d = storage.data() + start;
  d[0] = reinterpret_cast<int64_t>(data);
  d[1] = reinterpret_cast<int64_t>(data);
  d[2] = 0;
  int64_t stride = 1;
  for (size_t i = rank; i-- > 0;) {
    d[3 + i] = view.shape[i];
    d[3 + rank + i] = stride;
    stride *= view.shape[i];
  }
}

static llvm::Error checkView(const TerminalInfo &terminal, const TensorView &view, StringRef role) {
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
                     " " + runtime::formatShape(terminal.shape) + ", got " + dtypeName(view.dtype) +
                     " " + runtime::formatShape(view.shape));
  if (!view.data && !view.shape.empty() && numElements(view.shape).value_or(1) > 0)
    return makeError(role + " '" + terminal.name + "' has no data");
  return llvm::Error::success();
}

/// The outputs among `outputs` whose memory overlaps an input's or another
/// output's, other than an output given exactly the buffer of the input its
/// terminal may overwrite (TerminalInfo::inPlaceOf).
SmallVector<size_t> CompiledModel::sharedOutputs(ArrayRef<TensorView> inputs,
                                                 ArrayRef<TensorView> outputs) const {
  struct Span {
    uintptr_t start, end;
    size_t index; // outputs after inputs
  };
  SmallVector<Span, 32> spans;
  auto add = [&](const TensorView &view, size_t index) {
    auto start = reinterpret_cast<uintptr_t>(view.data);
    uintptr_t end = start + numElements(view.shape).value_or(0) * dtypeSize(view.dtype);
    if (end > start)
      spans.push_back({start, end, index});
  };
  for (size_t i = 0; i < inputs.size(); ++i)
    add(inputs[i], i);
  for (size_t i = 0; i < outputs.size(); ++i)
    add(outputs[i], inputs.size() + i);
  auto isOutput = [&](const Span &span) { return span.index >= inputs.size(); };
  // `out` is given exactly the buffer of the input `in` its terminal may
  // overwrite.
  auto inPlacePair = [&](const Span &in, const Span &out) {
    return !isOutput(in) && isOutput(out) && in.start == out.start && in.end == out.end &&
           outputs_[out.index - inputs.size()].inPlaceOf == inputs_[in.index].name;
  };
  llvm::sort(spans, [](const Span &a, const Span &b) {
    return std::tie(a.start, a.end, a.index) < std::tie(b.start, b.end, b.index);
  });
  // Views of exactly the same memory are side by side: a group of them may
  // hold an output only as an input and the output that overwrites it.
  SmallVector<size_t> shared;
  bool partial = false;
  uintptr_t reached = 0;
  for (size_t first = 0; first < spans.size();) {
    size_t last = first + 1;
    while (last < spans.size() && spans[last].start == spans[first].start &&
           spans[last].end == spans[first].end)
      ++last;
    partial |= spans[first].start < reached;
    reached = std::max(reached, spans[first].end);
    ArrayRef<Span> group = ArrayRef<Span>(spans).slice(first, last - first);
    if (group.size() > 1 && !(group.size() == 2 && inPlacePair(group[0], group[1])))
      for (const Span &span : group)
        if (isOutput(span))
          shared.push_back(span.index - inputs.size());
    first = last;
  }
  if (!partial)
    return shared;
  // Views that overlap in part (rare): each output against every view.
  shared.clear();
  for (const Span &out : spans) {
    if (!isOutput(out))
      continue;
    for (const Span &other : spans)
      if (other.index != out.index && other.start < out.end && out.start < other.end &&
          !inPlacePair(other, out)) {
        shared.push_back(out.index - inputs.size());
        break;
      }
  }
  return shared;
}

llvm::Error CompiledModel::run(ArrayRef<TensorView> inputs, ArrayRef<TensorView> outputs) const {
  if (options_.interfaceOnly)
    return makeError("@" + entry_ +
                     " was compiled for its terminals only (interfaceOnly): it "
                     "has no code to run");
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
  // An output that shares memory with an input or another output is
  // written to a buffer of its own and copied: the code reads each input
  // and writes each output as if they were apart, except an output given
  // exactly the buffer of the input it was proved to overwrite (inPlaceOf).
  if (!cuda_) {
    SmallVector<size_t> apart = sharedOutputs(inputs, outputs);
    if (!apart.empty()) {
      SmallVector<TensorView> own(outputs.begin(), outputs.end());
      SmallVector<Array> buffers;
      for (size_t i : apart) {
        auto buffer = Array::allocate(outputs[i].dtype, outputs[i].shape);
        if (!buffer)
          return buffer.takeError();
        own[i].data = buffer->data();
        buffers.push_back(std::move(*buffer));
      }
      if (llvm::Error err = run(inputs, own))
        return err;
      for (auto [i, buffer] : llvm::zip_equal(apart, buffers))
        std::memcpy(outputs[i].data, buffer.data(), buffer.byteSize());
      return llvm::Error::success();
    }
  }
  size_t numViews = inputs.size() + outputs.size();
  auto view = [&](size_t i) -> const TensorView & {
    return i < inputs.size() ? inputs[i] : outputs[i - inputs.size()];
  };
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
    for (size_t i = 0; i < numViews; ++i)
      deviceData.push_back(cuda_->alloc(bytes(view(i))));
    for (size_t i = 0; i < inputs.size(); ++i)
      cuda_->copyToDevice(deviceData[i], inputs[i].data, bytes(inputs[i]));
    if (llvm::Error err = cuda_->takenError("copying the inputs of @" + entry_ + " to the GPU"))
      return err;
  }
  // The descriptors side by side in one buffer (a call allocates nothing
  // for them up to a few dozen arguments: what runs between two calls of a
  // model that streams more than the caches hold runs cold).
  SmallVector<int64_t, 256> descriptors;
  SmallVector<size_t, 32> starts;
  for (size_t i = 0; i < numViews; ++i) {
    starts.push_back(descriptors.size());
    appendDescriptor(descriptors, view(i), cuda_ ? deviceData[i] : view(i).data);
  }
  // The C interface takes a pointer to each descriptor; the packed wrapper
  // takes a pointer to each of those arguments.
  SmallVector<void *, 32> descriptorPtrs(numViews), args(numViews);
  for (size_t i = 0; i < numViews; ++i) {
    descriptorPtrs[i] = descriptors.data() + starts[i];
    args[i] = &descriptorPtrs[i];
  }
  takeIndexError();
  AllocationRecovery state;
  if (!callRecoverably(function_, args.data(), state))
    return makeError("out of memory: a temporary buffer of " + std::to_string(state.failedBytes) +
                     " bytes for @" + entry_ + " could not be allocated");
  if (std::optional<std::string> message = takeIndexError())
    return makeError(*message);
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
