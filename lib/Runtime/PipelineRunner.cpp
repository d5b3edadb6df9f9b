//===- PipelineRunner.cpp - the pipelines run for a model, with reproducers ===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//

#include "Driver.h"
#include "mithril/Pipelines/Pipelines.h"

#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace mithril;
using namespace mithril::runtime;
using namespace mithril::runtime::detail;
using llvm::Expected;

/// Success for no target CPU or one LLVM knows; an error naming it otherwise.
llvm::Error mithril::runtime::detail::checkTargetCpu(StringRef cpu) {
  if (cpu.empty() || vectorRegisterBits(cpu))
    return llvm::Error::success();
  return makeError("unknown target CPU '" + cpu +
                   "' (an x86-64 CPU LLVM knows: znver2, skylake-avx512, sapphirerapids, ...)");
}

std::string mithril::runtime::detail::pipelineOptions(const CompileOptions &options,
                                                      StringRef stopAfter, StringRef startAfter) {
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
  for (auto [name, values] : {std::pair<StringRef, const std::vector<double> *>{
                                  "activation-scales", &options.activationScales},
                              {"activation-ranges", &options.activationRanges}}) {
    if (values->empty())
      continue;
    std::string list;
    llvm::raw_string_ostream os(list);
    llvm::interleave(
        *values, os, [&](double v) { os << llvm::formatv("{0:e9}", v); }, ",");
    add(name, list);
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
    if (options.allReduceGradients && options.windowRanks > 1)
      add("window-ranks", std::to_string(options.windowRanks));
    if (!options.optimizer.empty()) {
      add("optimizer", options.optimizer);
      add("momentum", std::to_string(options.momentum));
      add("weight-decay", std::to_string(options.weightDecay));
      if (options.lossScaling)
        add("loss-scaling", "true");
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
                         {"memory-planning", options.memoryPlanning},
                         {"approximate-math", options.approximateMath}})
    if (!on)
      add(key, "false");
  if (stopAfter != "llvm")
    add("stop-after", stopAfter);
  if (!startAfter.empty())
    add("start-after", startAfter);
  return s;
}

/// Whether the pass managers verify the IR after every pass rather than once
/// a stage. Each pass's verification took a third of the MLIR time of a CNN
/// training step (every subview's layout recomputed after every pass); once a
/// stage finds the same broken IR, and mithril-opt, which verifies after
/// every pass, names the pass that broke it.
static bool verifiesEachPass(const CompileOptions &options) {
  const char *env = std::getenv("MITHRIL_VERIFY_EACH");
  return options.verifyEachPass || (env && *env && StringRef(env) != "0");
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
llvm::Error mithril::runtime::detail::runPipeline(ModuleOp module, const CompileOptions &options,
                                                  StringRef stopAfter, StringRef startAfter,
                                                  bool forJit, std::vector<PhaseTiming> *stages) {
  MLIRContext *ctx = module.getContext();
  auto configure = [&](CpuPipelineOptions &pipelineOpts, StringRef stop, StringRef start) {
    copyModelOptions(pipelineOpts, options);
    pipelineOpts.threads = resolvedThreads(options);
    pipelineOpts.stopAfter = stop.str();
    pipelineOpts.startAfter = start.str();
    pipelineOpts.runtimeAllocator = forJit;
    pipelineOpts.taskPool = forJit;
    // The JIT compiles the LLVM code in pieces, one per compile thread; on
    // one, where pieces gain nothing, only kernels alike share a function,
    // compiled once (a 4-layer GPT's training step on one Zen 4 CPU: 6.5 ->
    // 3.3 s), and a model without them compiles as it did inline.
    pipelineOpts.outlineKernels = forJit;
    pipelineOpts.outlineSharedOnly = compileThreadsFor(options) <= 1;
    pipelineOpts.indexErrors = forJit;
    pipelineOpts.dynamicData = options.dynamicShapes;
    pipelineOpts.gpuTilesOnHost = options.gpuTilesOnHost;
    pipelineOpts.fold = options.fold;
    pipelineOpts.cse = options.cse;
    pipelineOpts.dce = options.dce;
    pipelineOpts.fusion = options.fusion;
    pipelineOpts.memoryPlanning = options.memoryPlanning;
    pipelineOpts.approximateMath = options.approximateMath;
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
  bool verifyEach = verifiesEachPass(options);
  // Threads for the passes that run function by function (the kernels of a
  // model, once outlined): a pool the context owns for this run only, so
  // that a compiled model's context keeps no idle threads (nor threads that
  // a fork of the process would lose).
  bool startThreads = compileThreadsFor(options) > 1 && !ctx->isMultithreadingEnabled();
  if (startThreads)
    ctx->enableMultithreading();
  llvm::scope_exit stopThreads([&] {
    if (startThreads)
      ctx->disableMultithreading();
  });
  for (const StringRef *stage = first; stage <= last; ++stage) {
    DiagnosticCollector diags(*ctx);
    PassManager pm(ctx);
    CpuPipelineOptions pipelineOpts;
    configure(pipelineOpts, *stage, stage == all.begin() ? StringRef() : *(stage - 1));
    if (failed(buildCpuPipeline(pm, pipelineOpts)))
      return makeError("internal error: mithril-cpu-pipeline does not build");
    if (pm.size() == 0)
      continue; // autodiff without gradients
    pm.enableVerifier(verifyEach);
    auto start = Clock::now();
    if (failed(pm.run(module)) || (!verifyEach && failed(verify(module)))) {
      // From the source up to the stage that failed.
      std::string reproduce = pipelineOptions(options, *stage, "");
      if (forJit)
        reproduce +=
            " runtime-allocator=true index-errors=true task-pool=true outline-kernels=true";
      if (forJit && compileThreadsFor(options) <= 1)
        reproduce += " outline-shared-only=true";
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
llvm::Error mithril::runtime::detail::runGpuPipeline(ModuleOp module, const CompileOptions &options,
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
  bool verifyEach = verifiesEachPass(options);
  pm.enableVerifier(verifyEach);
  if (succeeded(pm.run(module)) && (verifyEach || succeeded(verify(module))))
    return llvm::Error::success();
  // Every option, as the pipeline prints them: the command reproduces
  // gradients, optimizers, discards and stages alike.
  std::string reproducer;
  llvm::raw_string_ostream os(reproducer);
  gpu.print(os);
  return makeError(diags.text + "reproduce with: mithril-opt --pass-pipeline='builtin.module(" +
                   "mithril-gpu-pipeline" + reproducer + ")' " + options.sourceName);
}
