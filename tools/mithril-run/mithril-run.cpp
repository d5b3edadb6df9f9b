//===- mithril-run.cpp - compile and run a mithril model ------------------===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
// Compiles a model with mithril-cpu-pipeline, JITs it for the host CPU and
// runs it on .npy/.npz data. The work is in the MithrilRuntime library.
//
//===----------------------------------------------------------------------===//

#include "mithril/Pipelines/Pipelines.h"
#include "mithril/Runtime/CompiledModel.h"
#include "mithril/Runtime/NumpyIO.h"
#include "mithril/Runtime/Training.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <map>
#include <random>

using namespace llvm;
using namespace mithril;
using namespace mithril::runtime;

static cl::OptionCategory category("mithril-run options");
static cl::opt<std::string> inputFile(cl::Positional, cl::desc("<model.mlir>"), cl::Required,
                                      cl::cat(category));
static cl::opt<std::string> entry("entry", cl::desc("The model to run (default: the root model)"),
                                  cl::value_desc("NAME"), cl::cat(category));
static cl::list<std::string> inputs("input", cl::desc("Feed an input terminal from a .npy file"),
                                    cl::value_desc("TERMINAL=FILE.npy"), cl::cat(category));
static cl::opt<std::string> params("params",
                                   cl::desc("Parameters (and other inputs) from a .npz file"),
                                   cl::value_desc("FILE.npz"), cl::cat(category));
static cl::list<std::string>
    shapes("shape", cl::desc("Give an input terminal's shape (name:DxD) without data"),
           cl::value_desc("NAME:DxD"), cl::cat(category));
static cl::opt<unsigned> seed("seed", cl::desc("Seed of the random parameters and inputs"),
                              cl::init(0), cl::cat(category));
static cl::opt<std::string> outputFile("o",
                                       cl::desc("Write the outputs (.npz) or the --emit result"),
                                       cl::value_desc("FILE"), cl::cat(category));
static cl::opt<bool> printOutputs("print", cl::desc("Print the outputs"), cl::cat(category));
static cl::opt<bool> randomInputs("random-inputs",
                                  cl::desc("Fill data inputs that were not given with random data"),
                                  cl::cat(category));
static cl::opt<std::string> emitFormat("emit",
                                       cl::desc("Stop and write: mlir, llvm, asm, obj, h (a C "
                                                "header for obj), or ptx (with --target=cuda)"),
                                       cl::value_desc("FORMAT"), cl::cat(category));
static cl::opt<std::string>
    stopAfter("mlir-stage",
              cl::desc("With --emit=mlir: the pipeline stage to print after (flatten, shapes, "
                       "linalg, fusion, bufferize, loops, llvm)"),
              cl::init("llvm"), cl::cat(category));
static cl::opt<std::string> target("target",
                                   cl::desc("Where to run: cpu, or cuda (NVIDIA GPUs; "
                                            "--emit=ptx writes the kernels without a GPU)"),
                                   cl::init("cpu"), cl::cat(category));
static cl::opt<std::string> gpuChip("gpu-chip", cl::desc("With --target=cuda: sm_80, sm_90, ..."),
                                    cl::init("sm_90"), cl::cat(category));
static cl::opt<bool> gpuTilesOnHost(
    "gpu-tiles-on-host",
    cl::desc("With --target=cpu: tile matmuls and convolutions as the GPU pipeline does "
             "(shared-memory tiles in block and thread loops) and run those loops in order on "
             "the host, which checks the GPU schedule's numbers without a GPU"),
    cl::cat(category));
static cl::opt<unsigned> bench("bench", cl::desc("Time N runs after warm-up"), cl::init(0),
                               cl::cat(category));
static cl::opt<bool> profileKernels(
    "profile",
    cl::desc("Time each compiled kernel (mithril-profile-kernels) and print calls, time and "
             "share per kernel after the runs"),
    cl::init(false), cl::cat(category));
static cl::opt<bool> timing("timing", cl::desc("Print the time of each compile phase"),
                            cl::cat(category));
static cl::opt<bool> verifyEach(
    "verify-each",
    cl::desc("Verify the IR after every compiler pass, not once a pipeline stage (slower; "
             "names the pass that breaks the IR; also MITHRIL_VERIFY_EACH=1)"),
    cl::init(false), cl::cat(category));
static cl::OptionCategory trainCategory("mithril-run training options");
static cl::opt<bool> train("train",
                           cl::desc("Train the model's parameters to minimize --loss on --data"),
                           cl::cat(trainCategory));
static cl::opt<std::string> trainData("data",
                                      cl::desc("Training data: one array per data terminal, "
                                               "samples along the first axis"),
                                      cl::value_desc("FILE.npz"), cl::cat(trainCategory));
static cl::opt<std::string> lossName("loss", cl::desc("The scalar output to minimize"),
                                     cl::init("final_cost"), cl::cat(trainCategory));
static cl::opt<unsigned> epochs("epochs", cl::desc("Passes over the data"), cl::init(10),
                                cl::cat(trainCategory));
static cl::opt<unsigned> batchSize("batch-size", cl::desc("Samples per step"), cl::init(32),
                                   cl::cat(trainCategory));
static cl::opt<double> learningRate("lr", cl::desc("Learning rate"), cl::init(0.01),
                                    cl::cat(trainCategory));
static cl::opt<std::string> optimizerName("optimizer", cl::desc("sgd or adam"), cl::init("adam"),
                                          cl::cat(trainCategory));
static cl::opt<double> momentum("momentum", cl::desc("SGD momentum"), cl::init(0.0),
                                cl::cat(trainCategory));
static cl::opt<double> weightDecay("weight-decay", cl::desc("L2 weight decay"), cl::init(0.0),
                                   cl::cat(trainCategory));
static cl::opt<bool> gradients(
    "gradients",
    cl::desc("Also compute the gradients of the parameters: extra inputs grad:<output> (the "
             "seeds) and outputs grad:<parameter>; with --optimizer, the optimizer's update too "
             "(its state and hyper-parameters as optimizer.* terminals)"),
    cl::cat(trainCategory));
static cl::opt<unsigned> checkpointSegments(
    "checkpoint-segments",
    cl::desc("Gradient checkpointing: keep only the forward values that cross N even runs "
             "of the forward ops and recompute the others in the backward pass (less memory, "
             "more time; default 0: keep every forward value)"),
    cl::init(0), cl::cat(trainCategory));
static cl::opt<std::string> precision(
    "precision",
    cl::desc("Compute a float32 model in bf16 or f16 (mithril-mixed-precision): the values "
             "between ops take that type, each op computes in float32 and rounds once; the "
             "terminals stay float32 (mixed precision) unless --precision-terminals"),
    cl::init(""), cl::cat(category));
static cl::opt<bool> precisionTerminals(
    "precision-terminals",
    cl::desc("With --precision: the terminals (inputs, parameters, outputs) take that type too"),
    cl::init(false), cl::cat(category));
static cl::opt<std::string> quantize(
    "quantize",
    cl::desc("int8: matrix products and convolutions of weights in 8-bit integers, weights "
             "per output column or channel and activations per tensor (unsigned, with a zero "
             "point), exact 32-bit accumulation (inference only)"),
    cl::init(""), cl::cat(category));
static cl::list<double> activationScales(
    "activation-scales",
    cl::desc("With --quantize=int8: static symmetric activation scales, one per quantized "
             "op in order (max|x| / 127), instead of each call's range"),
    cl::CommaSeparated, cl::cat(category));
static cl::list<double> activationRanges(
    "activation-ranges",
    cl::desc("With --quantize=int8: static activation ranges, a lo,hi pair per quantized "
             "op in order (from a --quantize-observe run), instead of each call's"),
    cl::CommaSeparated, cl::cat(category));
static cl::opt<bool> quantizeObserve(
    "quantize-observe",
    cl::desc("With --quantize=int8: a calibration run: quantize nothing and output each "
             "quantized op's activation range [min x, max x] as calibration:<i>"),
    cl::init(false), cl::cat(category));
static cl::opt<std::string> targetCpu(
    "target-cpu",
    cl::desc("Compile for this x86-64 CPU (znver2, skylake-avx512, sapphirerapids, ...) "
             "instead of the host, register tiles sized for its vector registers: emitted "
             "(--emit) on any host, or run here where the host has all its features (haswell's "
             "AVX2 code on an AVX-512 host, say)"),
    cl::init(""), cl::cat(category));
static cl::opt<bool> dynamicShapes(
    "dynamic",
    cl::desc("Compile once with the dimensions --shape does not fix left dynamic, rather than "
             "for the shapes of the inputs given; the inputs' sizes are checked at run time"),
    cl::init(false), cl::cat(category));
static cl::opt<unsigned>
    threads("num-threads", cl::desc("Threads for large ops (default 0: one per hardware thread)"),
            cl::init(0), cl::cat(category));
static cl::opt<unsigned> compileThreads(
    "compile-threads",
    cl::desc("Threads that compile the model's LLVM code, each a piece of it (default 0: one "
             "per CPU this process may run on, at most 8); above 1, the compiler passes that "
             "work function by function also run on the CPUs of the process"),
    cl::init(0), cl::cat(category));
static cl::opt<unsigned> optLevel("O",
                                  cl::desc("LLVM optimization level (default: the "
                                           "--optimization-level's)"),
                                  cl::init(2), cl::Prefix, cl::cat(category));
static cl::opt<std::string> optimizationLevel(
    "optimization-level",
    cl::desc("none (no graph optimization, no schedule, -O0: for debugging), low (folding, CSE, "
             "DCE; -O1), medium (everything; -O2) or high (everything; -O3)"),
    cl::init("medium"), cl::cat(category));
static cl::list<std::string> sharedLibraries(
    "shared-lib",
    cl::desc("A shared library whose C functions the model's custom calls "
             "(mithril.custom_call) name; searched before the process (repeatable)"),
    cl::cat(category));
static cl::list<std::string> disabledOptimizations(
    "disable",
    cl::desc("Optimizations to switch off: constant_folding, common_subexpression, "
             "dead_code_elimination, fusion, vectorization, memory_planning, approximate_math "
             "(comma-separated)"),
    cl::CommaSeparated, cl::cat(category));

/// The --optimization-level, --disable, -O and --precision flags applied to
/// `options`.
static Error applyOptimizationFlags(CompileOptions &options) {
  if (Error err = setOptimizationLevel(options, optimizationLevel))
    return err;
  if (!precision.empty() && precision != "bf16" && precision != "f16")
    return createStringError("--precision must be bf16 or f16, got '" + precision + "'");
  if (precisionTerminals && precision.empty())
    return createStringError("--precision-terminals needs --precision");
  options.precision = precision;
  options.precisionTerminals = precisionTerminals;
  options.targetCpu = targetCpu;
  options.compileThreads = compileThreads;
  if (!quantize.empty() && quantize != "int8")
    return createStringError("--quantize must be int8, got '" + quantize + "'");
  options.quantize = quantize;
  if ((quantizeObserve || !activationScales.empty() || !activationRanges.empty()) &&
      quantize.empty())
    return createStringError("--quantize-observe, --activation-scales and --activation-ranges "
                             "need --quantize=int8");
  options.quantizeObserve = quantizeObserve;
  options.activationScales.assign(activationScales.begin(), activationScales.end());
  options.activationRanges.assign(activationRanges.begin(), activationRanges.end());
  options.sharedLibraries.assign(sharedLibraries.begin(), sharedLibraries.end());
  for (const std::string &name : disabledOptimizations)
    if (Error err = setOptimization(options, name, false))
      return err;
  if (optLevel.getNumOccurrences())
    options.optLevel = optLevel;
  return Error::success();
}

static int fail(const Twine &message) {
  std::string text = message.str();
  // Compiler diagnostics carry their own "file:line:col: error:" prefix.
  if (StringRef(text).contains(": error: "))
    errs() << text << "\n";
  else
    WithColor::error(errs(), "mithril-run") << text << "\n";
  return 1;
}

static int fail(Error err) { return fail(toString(std::move(err))); }

/// Prints an array the way numpy does, eliding the middle of long axes.
static void printArray(raw_ostream &os, const Array &a) {
  ArrayRef<int64_t> shape = a.shape();
  std::function<void(size_t, int64_t, int)> rec = [&](size_t dim, int64_t offset, int indent) {
    if (dim == shape.size()) {
      double v = a.getAsDouble(offset);
      if (isFloatDType(a.dtype()))
        os << format("%.6g", v);
      else
        os << (int64_t)v;
      return;
    }
    int64_t stride = 1;
    for (size_t d = dim + 1; d < shape.size(); ++d)
      stride *= shape[d];
    os << "[";
    int64_t n = shape[dim];
    for (int64_t i = 0; i < n; ++i) {
      if (n > 8 && i == 3) {
        os << (dim + 1 == shape.size() ? ", ..." : "\n" + std::string(indent + 1, ' ') + "...");
        i = n - 3;
      }
      if (i)
        os << (dim + 1 == shape.size() ? ", " : ",\n" + std::string(indent + 1, ' '));
      rec(dim + 1, offset + i * stride, indent + 1);
    }
    os << "]";
  };
  rec(0, 0, 0);
  os << "\n";
}

/// --train: minibatch training with a compiled step (forward, backward and
/// the optimizer's update in one function).
static int runTraining(StringRef source, std::map<std::string, Array> &given) {
  if (trainData.empty())
    return fail("--train needs --data=FILE.npz");
  auto data = readNpz(trainData);
  if (!data)
    return fail(data.takeError());

  CompileOptions options;
  options.entry = entry;
  options.sourceName = inputFile;
  if (Error err = applyOptimizationFlags(options))
    return fail(std::move(err));
  options.threads = threads;
  options.optimizer = optimizerName;
  options.momentum = momentum;
  options.weightDecay = weightDecay;
  options.checkpointSegments = checkpointSegments;
  options.gpuTilesOnHost = gpuTilesOnHost;
  for (const std::string &s : shapes)
    options.shapes.push_back(s);
  TrainOptions train;
  train.loss = lossName;
  train.epochs = epochs;
  train.batchSize = batchSize;
  train.learningRate = learningRate;
  train.seed = seed;
  train.dataName = trainData;

  auto trained = trainModel(
      source, options, *data, given, train,
      [&](const TrainingSummary &run) {
        outs() << "training @" << run.entry << " on " << run.samples << " samples, "
               << run.stepsPerEpoch << " steps of " << batchSize << " per epoch, " << optimizerName
               << " lr " << format("%g", learningRate.getValue()) << "\n";
      },
      [&](const EpochReport &report) {
        std::string bar(30 * report.epoch / report.epochs, '#');
        bar.resize(30, ' ');
        outs() << format("epoch %3u/%u [%s] loss %.5f", report.epoch, report.epochs, bar.c_str(),
                         report.meanLoss);
        if (report.accuracy)
          outs() << format("  accuracy %.2f%%", 100.0 * *report.accuracy);
        outs() << format("  (%.0f ms)\n", report.seconds * 1e3);
      });
  if (!trained)
    return fail(trained.takeError());
  if (!outputFile.empty()) {
    if (Error err = writeNpz(outputFile, *trained))
      return fail(std::move(err));
    outs() << "wrote the trained parameters to " << outputFile << "\n";
  }
  return 0;
}

int main(int argc, char **argv) {
  InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions({&category, &trainCategory});
  cl::ParseCommandLineOptions(argc, argv,
                              "mithril-run: compile a mithril model for the host and run it\n");

  if (target != "cpu" && target != "cuda")
    return fail("--target=" + target + " is not available (targets: cpu, cuda)");

  auto source = MemoryBuffer::getFile(inputFile, /*IsText=*/true);
  if (!source)
    return fail(inputFile + ": cannot read: " + source.getError().message());

  // Gather the given arrays: they fix the shapes the model is compiled for.
  std::map<std::string, Array> given;
  std::vector<std::string> order;
  auto add = [&](const std::string &name, Array array, StringRef from) -> bool {
    if (given.count(name)) {
      fail("terminal '" + name + "' is given twice (again in " + from + ")");
      return false;
    }
    order.push_back(name);
    given.emplace(name, std::move(array));
    return true;
  };
  if (!params.empty()) {
    auto arrays = readNpz(params);
    if (!arrays)
      return fail(arrays.takeError());
    for (auto &[name, array] : *arrays)
      if (!add(name, std::move(array), params))
        return 1;
  }
  for (const std::string &spec : inputs) {
    auto [name, path] = StringRef(spec).split('=');
    if (name.empty() || path.empty())
      return fail("--input expects TERMINAL=FILE.npy, got '" + spec + "'");
    auto array = readNpy(path);
    if (!array)
      return fail(array.takeError());
    if (!add(name.str(), std::move(*array), path))
      return 1;
  }

  CompileOptions options;
  options.entry = entry;
  options.sourceName = inputFile;
  if (Error err = applyOptimizationFlags(options))
    return fail(std::move(err));
  options.threads = threads;
  options.dynamicShapes = dynamicShapes;
  // Without --dynamic the code is compiled for the shapes of the data given.
  // The terminals --gradients adds (seeds, optimizer state) take the shapes
  // of what they belong to.
  for (const std::string &name : dynamicShapes ? std::vector<std::string>() : order)
    if (!(gradients && isAddedByGradients(name)))
      options.shapes.push_back(shapeSpec(name, given.at(name).shape()));
  for (const std::string &s : shapes)
    options.shapes.push_back(s);
  options.target = target;
  options.gpuChip = gpuChip;
  options.gpuTilesOnHost = gpuTilesOnHost;
  options.profile = profileKernels;
  options.verifyEachPass = verifyEach;
  // --timing shows the compile's phases: compiled, not taken from the
  // persistent compile cache.
  options.useCache = !timing;
  if (gradients) {
    options.gradients = true;
    if (optimizerName.getNumOccurrences())
      options.optimizer = optimizerName;
    options.momentum = momentum;
    options.weightDecay = weightDecay;
    options.checkpointSegments = checkpointSegments;
  }

  if (profileKernels && target != "cpu")
    return fail("--profile times kernels on --target=cpu");
  if (gpuTilesOnHost && target != "cpu")
    return fail("--gpu-tiles-on-host runs the GPU schedule on --target=cpu");
  if (train && target != "cpu")
    return fail("--train runs on --target=cpu");
  if (!targetCpu.empty() && target != "cpu" && emitFormat.empty())
    return fail("--target-cpu names the x86-64 CPU of --target=cpu code; with --target=" + target +
                " it applies only to --emit");
  if (gradients && train)
    return fail("--gradients and --train: --train already computes the gradients it needs");
  if (train && !quantize.empty())
    return fail("--quantize=int8 is for inference: --train needs float arithmetic");
  if (train)
    return runTraining((*source)->getBuffer(), given);

  if (!emitFormat.empty()) {
    auto text = emit((*source)->getBuffer(), options, emitFormat, stopAfter);
    if (!text)
      return fail(text.takeError());
    if (outputFile.empty() || outputFile == "-") {
      if (emitFormat == "obj" && outputFile.empty())
        return fail("--emit=obj writes binary data: give -o FILE");
      outs() << *text;
      return 0;
    }
    ArrayRef<uint8_t> bytes(reinterpret_cast<const uint8_t *>(text->data()), text->size());
    if (Error err = writeFileAtomically(outputFile, bytes))
      return fail(std::move(err));
    return 0;
  }

  auto model = CompiledModel::compile((*source)->getBuffer(), options);
  if (!model)
    return fail(model.takeError());
  if (timing) {
    double total = 0;
    for (const PhaseTiming &t : (*model)->timings()) {
      outs() << format("compile %-26s %9.2f ms", (t.phase + ":").c_str(), t.seconds * 1e3);
      if (t.opsBefore >= 0)
        outs() << format("   %6lld -> %6lld ops", (long long)t.opsBefore, (long long)t.opsAfter);
      outs() << "\n";
      total += t.seconds;
    }
    outs() << format("compile %-26s %9.2f ms\n", "total:", total * 1e3);
  }

  // Bind every input terminal.
  std::mt19937_64 rng(seed);
  std::vector<Array> inputArrays;
  std::vector<std::string> missing;
  for (const TerminalInfo &t : (*model)->inputs()) {
    auto it = given.find(t.name);
    if (it != given.end()) {
      if (it->second.dtype() != t.dtype)
        return fail("input '" + t.name + "' of @" + (*model)->entry() + " expects " +
                    dtypeName(t.dtype) + " but was given " + dtypeName(it->second.dtype()));
      inputArrays.push_back(std::move(it->second));
      given.erase(it);
      continue;
    }
    if (llvm::any_of(t.shape, mlir::ShapedType::isDynamic))
      return fail("input '" + t.name + "' of @" + (*model)->entry() + " has shape " +
                  formatShape(t.shape) + ": give its data (--input) or its shape (--shape)");
    Expected<Array> allocated = Array::allocate(t.dtype, t.shape);
    if (!allocated)
      return fail("input '" + t.name + "': " + toString(allocated.takeError()));
    Array array = std::move(*allocated);
    if (t.kind == InputKind::Param || randomInputs)
      randomFill(array, rng, t.kind == InputKind::Param);
    else
      missing.push_back("  " + t.name + ": " + dtypeName(t.dtype).str() + " " +
                        formatShape(t.shape));
    inputArrays.push_back(std::move(array));
  }
  if (!given.empty()) {
    std::string names;
    for (auto &[name, _] : given)
      names += (names.empty() ? "'" : ", '") + name + "'";
    return fail("@" + (*model)->entry() + " has no input terminal " + names);
  }
  if (!missing.empty())
    return fail("@" + (*model)->entry() + " needs data for these input terminals (use " +
                "--input=TERMINAL=FILE.npy, or --random-inputs):\n" + join(missing, "\n"));

  std::vector<ArrayRef<int64_t>> inputShapes;
  for (const Array &a : inputArrays)
    inputShapes.push_back(a.shape());
  auto outputShapes = (*model)->outputShapes(inputShapes);
  if (!outputShapes)
    return fail(outputShapes.takeError());
  std::vector<Array> outputArrays;
  for (auto [t, shape] : llvm::zip((*model)->outputs(), *outputShapes)) {
    Expected<Array> allocated = Array::allocate(t.dtype, shape);
    if (!allocated)
      return fail("output '" + t.name + "': " + toString(allocated.takeError()));
    outputArrays.push_back(std::move(*allocated));
  }
  std::vector<TensorView> inViews, outViews;
  for (Array &a : inputArrays)
    inViews.push_back(a.view());
  for (Array &a : outputArrays)
    outViews.push_back(a.view());

  if (Error err = (*model)->run(inViews, outViews))
    return fail(std::move(err));

  if (bench > 0) {
    for (int i = 0; i < 3; ++i)
      cantFail((*model)->run(inViews, outViews));
    std::vector<double> times;
    for (unsigned i = 0; i < bench; ++i) {
      auto start = std::chrono::steady_clock::now();
      cantFail((*model)->run(inViews, outViews));
      times.push_back(
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
    std::sort(times.begin(), times.end());
    outs() << format("latency over %u runs: median %.3f ms, min %.3f ms\n", (unsigned)bench,
                     times[times.size() / 2] * 1e3, times.front() * 1e3);
  }

  if (profileKernels) {
    std::vector<ProfileRecord> records = profileRecords();
    llvm::sort(records, [](const ProfileRecord &a, const ProfileRecord &b) {
      return a.seconds > b.seconds;
    });
    double total = 0;
    for (const ProfileRecord &r : records)
      total += r.seconds;
    outs() << format("%10s %12s %7s  %s\n", "calls", "total ms", "share", "kernel");
    for (const ProfileRecord &r : records)
      outs() << format("%10lld %12.3f %6.1f%%  ", (long long)r.calls, r.seconds * 1e3,
                       total > 0 ? 100 * r.seconds / total : 0.0)
             << r.kernel << "\n";
    outs() << format("%zu kernels, %.3f ms in all\n", records.size(), total * 1e3);
  }

  // An output whose size depends on the data (mithril.unique's values)
  // comes with its size as "<name>:size": its first elements are shown and
  // saved, and not the size.
  std::vector<TerminalInfo> shown((*model)->outputs().begin(), (*model)->outputs().end());
  for (size_t i = 0; i < shown.size(); ++i) {
    StringRef name = shown[i].name;
    if (!name.consume_back(":size"))
      continue;
    for (size_t j = 0; j < shown.size(); ++j) {
      if (shown[j].name != name || outputArrays[j].shape().size() != 1)
        continue;
      int64_t size = *static_cast<const int64_t *>(outputArrays[i].data());
      Array trimmed(shown[j].dtype, {size});
      std::memcpy(trimmed.data(), outputArrays[j].data(), size * dtypeSize(shown[j].dtype));
      outputArrays[j] = std::move(trimmed);
    }
    shown.erase(shown.begin() + i);
    outputArrays.erase(outputArrays.begin() + i);
    --i;
  }
  if (printOutputs || outputFile.empty()) {
    for (size_t i = 0; i < outputArrays.size(); ++i) {
      const TerminalInfo &t = shown[i];
      outs() << t.name << ": " << dtypeName(t.dtype) << " " << formatShape(outputArrays[i].shape())
             << "\n";
      printArray(outs(), outputArrays[i]);
    }
  }
  if (!outputFile.empty()) {
    NamedArrays named;
    for (size_t i = 0; i < outputArrays.size(); ++i)
      named.emplace_back(shown[i].name, std::move(outputArrays[i]));
    if (Error err = writeNpz(outputFile, named))
      return fail(std::move(err));
  }
  return 0;
}
