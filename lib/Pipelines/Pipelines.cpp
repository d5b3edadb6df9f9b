//===- Pipelines.cpp - the named compilation pipelines --------------------===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//

#include "mithril/Pipelines/Pipelines.h"
#include "mithril/Codegen/CPU/CpuTarget.h"
#include "mithril/Conversion/Passes.h"
#include "mithril/Dialect/Mithril/Transforms/Passes.h"
#include "mithril/Support/GreedyRewrite.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Async/Passes.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/LLVMIR/Transforms/OptimizeForNVVM.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/SCF/Transforms/Passes.h"
#include "mlir/Dialect/Vector/Transforms/Passes.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"

#include <cstdlib>

using namespace mlir;
using namespace mithril;

static constexpr llvm::StringRef kStages[] = {"flatten", "shapes",    "autodiff", "linalg",
                                              "fusion",  "bufferize", "loops",    "llvm"};

ArrayRef<StringRef> mithril::getCpuPipelineStages() { return kStages; }

static std::string stageList() { return llvm::join(ArrayRef<StringRef>(kStages), ", "); }

std::string mithril::checkCpuPipelineOptions(const CpuPipelineOptions &options) {
  StringRef stop = options.stopAfter, start = options.startAfter;
  const StringRef *stopIt = llvm::find(kStages, stop);
  const StringRef *startIt = start.empty() ? std::begin(kStages) - 1 : llvm::find(kStages, start);
  if (stopIt == std::end(kStages))
    return "unknown pipeline stage '" + stop.str() + "' (stages: " + stageList() + ")";
  if (startIt == std::end(kStages))
    return "unknown pipeline stage '" + start.str() + "' (stages: " + stageList() + ")";
  if (startIt > stopIt)
    return "start-after=" + start.str() + " comes after stop-after=" + stop.str();
  // The async runtime's coroutines and tokens live in the function the
  // kernels would leave.
  if (options.outlineKernels && options.threads > 1 && !options.taskPool)
    return "outline-kernels with threads above 1 needs task-pool";
  return "";
}

/// The canonicalizer (folding, and erasing unused pure ops) and CSE after a
/// graph-level stage, as far as the options allow.
static void addGraphCleanups(OpPassManager &pm, const CpuPipelineOptions &options,
                             bool afterAutodiff = true) {
  if (options.fold)
    pm.addPass(createCanonicalizerPass(withoutRegionSimplification()));
  // Checkpointed gradients recompute forward ops that CSE would merge back.
  bool checkpointed = options.gradients && options.checkpointSegments > 0;
  if (options.cse && !(afterAutodiff && checkpointed))
    pm.addPass(createCSEPass());
}

LogicalResult mithril::buildCpuPipeline(OpPassManager &pm, const CpuPipelineOptions &options) {
  if (!checkCpuPipelineOptions(options).empty())
    return failure();
  StringRef stop = options.stopAfter, start = options.startAfter;
  const StringRef *stopIt = llvm::find(kStages, stop);
  const StringRef *startIt = start.empty() ? std::begin(kStages) - 1 : llvm::find(kStages, start);
  // Each stage adds its passes when it lies in (start-after, stop-after].
  auto wanted = [&](StringRef stage) {
    const StringRef *it = llvm::find(kStages, stage);
    return it > startIt && it <= stopIt;
  };

  if (wanted("flatten")) {
    MithrilFlattenOptions flatten;
    flatten.entry = options.entry;
    pm.addPass(createMithrilFlatten(flatten));
    pm.addPass(createMithrilExposeSizes());
  }

  if (wanted("shapes")) {
    MithrilInferShapesOptions shapes;
    shapes.entry = options.entry;
    shapes.shapes.assign(options.shapes.begin(), options.shapes.end());
    shapes.dynamicData = options.dynamicData;
    pm.addPass(createMithrilInferShapes(shapes));
    if (!options.precision.empty()) {
      MithrilMixedPrecisionOptions precision;
      precision.entry = options.entry;
      precision.type = options.precision;
      precision.terminals = options.precisionTerminals;
      pm.addPass(createMithrilMixedPrecision(precision));
    }
    if (options.dce || !options.discard.empty()) {
      MithrilDCEOptions dce;
      dce.discard.assign(options.discard.begin(), options.discard.end());
      pm.addPass(createMithrilDCE(dce));
    }
    addGraphCleanups(pm, options, /*afterAutodiff=*/false);
    // A calibration run adds its outputs here, before the terminals are read
    // (the products are the same ones the linalg stage quantizes: nothing in
    // between adds, drops or reorders matrix products).
    if (options.quantize == "int8" && options.quantizeObserve) {
      MithrilQuantizeInt8Options observe;
      observe.observe = true;
      pm.addPass(createMithrilQuantizeInt8(observe));
    }
  }

  // Tensor parallelism splits parameters before any gradient is built, so
  // that the forward and backward code are one rank's share.
  if (wanted("shapes") && options.tensorParallel > 1) {
    MithrilTensorParallelOptions split;
    split.entry = options.entry;
    split.size = options.tensorParallel;
    pm.addPass(createMithrilTensorParallel(split));
  }

  if (wanted("autodiff") && options.gradients) {
    MithrilAutodiffOptions autodiff;
    autodiff.entry = options.entry;
    autodiff.wrt.assign(options.wrt.begin(), options.wrt.end());
    autodiff.seeds.assign(options.seeds.begin(), options.seeds.end());
    autodiff.checkpointSegments = options.checkpointSegments;
    pm.addPass(createMithrilAutodiff(autodiff));
    if (options.allReduceGradients) {
      MithrilAllReduceGradientsOptions allReduce;
      allReduce.entry = options.entry;
      pm.addPass(createMithrilAllReduceGradients(allReduce));
    }
    if (!options.optimizer.empty()) {
      MithrilOptimizerOptions optimizer;
      optimizer.entry = options.entry;
      optimizer.algorithm = options.optimizer;
      optimizer.momentum = options.momentum;
      optimizer.weightDecay = options.weightDecay;
      optimizer.lossScaling = options.lossScaling;
      pm.addPass(createMithrilOptimizer(optimizer));
    }
    addGraphCleanups(pm, options);
  }

  if (wanted("linalg")) {
    pm.addPass(createMithrilDecompose());
    if (options.quantize == "int8" && !options.quantizeObserve) {
      MithrilQuantizeInt8Options quantize;
      quantize.observe = options.quantizeObserve;
      quantize.activationScales.assign(options.activationScales.begin(),
                                       options.activationScales.end());
      quantize.activationRanges.assign(options.activationRanges.begin(),
                                       options.activationRanges.end());
      pm.addPass(createMithrilQuantizeInt8(quantize));
    }
    pm.addPass(createMithrilWidenLowPrecision());
    if (options.fold)
      pm.addPass(createCanonicalizerPass(withoutRegionSimplification()));
    ConvertMithrilToLinalgOptions lowering;
    lowering.indexErrors = options.indexErrors;
    lowering.windowRanks = options.windowRanks;
    // The host schedule's threads (the GPU pipeline maps whole ops).
    if (options.schedule && !options.gpuTilesOnHost)
      lowering.threads = std::max(1u, static_cast<unsigned>(options.threads));
    // A model computed in bf16, scheduled for a CPU whose bf16 products
    // multiply pairs (512-bit registers, CpuTarget::bf16PairProducts):
    // Winograd's products multiply bf16 pairs too.
    if (options.precision == "bf16" && options.schedule && !options.gpuTilesOnHost &&
        (options.vectorBits == 0 || options.vectorBits >= 512))
      if (std::optional<CpuTarget> target = cpuTarget(options.targetCpu)) {
        lowering.bf16Products = target->bf16PairProducts();
        lowering.bf16Tiles = target->bf16Tiles;
      }
    pm.addPass(createConvertMithrilToLinalg(lowering));
    if (options.fold)
      pm.addPass(createCanonicalizerPass(withoutRegionSimplification()));
  }

  if (wanted("fusion")) {
    if (options.fusion) {
      pm.addPass(createMithrilFuseElementwise());
      addGraphCleanups(pm, options);
    }
    if (options.schedule && !options.gpuTilesOnHost) {
      // Each op's lowering config, then the schedule that carries it out.
      MithrilCpuStrategyOptions strategy;
      strategy.threads = options.threads;
      strategy.vectorBits = options.vectorBits;
      strategy.targetCpu = options.targetCpu;
      pm.addPass(createMithrilCpuStrategy(strategy));
      MithrilCpuScheduleOptions schedule;
      schedule.threads = options.threads;
      schedule.vectorBits = options.vectorBits;
      schedule.targetCpu = options.targetCpu;
      // Operator fusion off: each row reduction a pass of its own too.
      schedule.fuseRows = options.fusion;
      pm.addPass(createMithrilCpuSchedule(schedule));
      addGraphCleanups(pm, options);
    }
  }

  if (wanted("bufferize")) {
    pm.addNestedPass<func::FuncOp>(createMithrilUniqueResults());
    // Padded values are computed inside their padding.
    MithrilPadInPlaceOptions padInPlace;
    padInPlace.vectorRuns = options.schedule;
    pm.addPass(createMithrilPadInPlace(padInPlace));
    // All-reduce operands computed where the other ranks read them.
    pm.addPass(createMithrilCollectivesInWindow());
    bufferization::OneShotBufferizePassOptions bufferize;
    bufferize.bufferizeFunctionBoundaries = true;
    bufferize.functionBoundaryTypeConversion = bufferization::LayoutMapOption::IdentityLayoutMap;
    pm.addPass(bufferization::createOneShotBufferizePass(bufferize));
    // Results that reach the return through loop-carried buffers fold to
    // their allocation first, so that the allocation itself becomes the
    // caller's buffer below (no temporary and no copy of the output).
    pm.addPass(createCanonicalizerPass(withoutRegionSimplification()));
    pm.addPass(createCSEPass());
    // A reshaped buffer returned (a product over a batch's stacked rows) is
    // allocated in the result's shape, to become the caller's buffer too.
    pm.addPass(createMithrilReshapedResults());
    // Outputs become caller-owned destination buffers: the runtime hands in
    // numpy arrays and nothing is returned by pointer.
    bufferization::BufferResultsToOutParamsPassOptions outParams;
    outParams.hoistStaticAllocs = true;
    outParams.modifyPublicFunctions = true;
    pm.addPass(bufferization::createBufferResultsToOutParamsPass(outParams));
    // Buffers copied whole into a new stack are computed in it instead.
    pm.addPass(createMithrilStackInPlace());
    // A loop's temporaries allocated once for all its iterations.
    pm.addPass(createMithrilHoistLoopBuffers());
    // Upstream's buffer-deallocation-pipeline, but for its canonicalizations
    // before the deallocation (the IR is canonical already, above, and no
    // realloc has been expanded: 8 ms of a CNN training step's compile) and
    // between the deallocation and its simplification. Neither, nor the one
    // that followed the out-parameters, changed the LLVM IR of any of 34
    // models and targets (MLPs, CNNs, their SGD and Adam steps, residual and
    // bf16 models, dynamic shapes, one and two threads); the last
    // canonicalization below cleans up after all of them (10 ms less of the
    // CNN training step's compile).
    memref::ExpandReallocPassOptions expandRealloc;
    expandRealloc.emitDeallocs = false;
    pm.addPass(memref::createExpandReallocPass(expandRealloc));
    pm.addPass(bufferization::createOwnershipBasedBufferDeallocationPass());
    pm.addPass(bufferization::createBufferDeallocationSimplificationPass());
    pm.addPass(bufferization::createLowerDeallocationsPass());
    // The windows are the runtime's: calls only once nothing frees them.
    pm.addPass(createMithrilLowerCollectiveWindows());
    pm.addPass(createCSEPass());
    pm.addPass(createCanonicalizerPass(withoutRegionSimplification()));
    // The GPU pipeline's front (no host schedule) maps copies to threads.
    MithrilStridedCopiesOptions copies;
    copies.vectorRuns = options.schedule;
    // Split like the ops around them, when they run on the task pool.
    if (options.schedule && options.taskPool)
      copies.threads = options.threads;
    pm.addPass(createMithrilStridedCopies(copies));
    // Temporaries die at their last use, not at the end of the function.
    if (options.memoryPlanning)
      pm.addPass(createMithrilDeallocAtLastUse());
    if (options.gpuTilesOnHost) {
      MithrilGpuTileContractionsOptions tiles;
      tiles.workgroupMemory = false;
      pm.addNestedPass<func::FuncOp>(createMithrilGpuTileContractions(tiles));
      pm.addPass(createForallToForLoopPass());
      pm.addPass(createCanonicalizerPass());
    }
  }

  if (wanted("loops")) {
    // Which updated parameters and state may be written over their inputs
    // (the runtime tells callers), proved while the code is still one
    // structured function.
    pm.addPass(createMithrilMarkInPlaceUpdates());
    // The schedule's AMX matmul tiles, on buffers now (tile loads need them).
    pm.addPass(createMithrilX86TileMatmuls());
    // Register tiles of results larger than the L2 load their accumulators
    // from L3 or memory: the next tile's, prefetched during this one's loop.
    if (options.schedule) {
      MithrilPrefetchAccumulatorsOptions prefetch;
      prefetch.targetCpu = options.targetCpu;
      pm.addNestedPass<func::FuncOp>(createMithrilPrefetchAccumulators(prefetch));
      // Each step of a register tile's reduction reads a row of a panel
      // from L2: that row, a few steps ahead, into L1.
      pm.addNestedPass<func::FuncOp>(createMithrilPrefetchPanels());
      // A matrix-vector product's next weight rows, while the batch's row
      // groups pass over this group's; a register tile's next broadcast
      // rows, while it reads this tile's.
      pm.addNestedPass<func::FuncOp>(createMithrilPrefetchNextRows());
    }
    if (options.profile) {
      MithrilProfileKernelsOptions profile;
      profile.firstId = options.profileFirstId;
      pm.addPass(createMithrilProfileKernels(profile));
    }
    if (options.threads > 1 && options.taskPool) {
      // The chunks of split ops run on the host's pool, one call per op.
      pm.addPass(createMithrilDispatchChunks());
    } else if (options.threads > 1) {
      // The chunks of split ops become tasks of the async runtime's pool.
      pm.addPass(createForallToParallelLoopPass());
      AsyncParallelForPassOptions parallelFor;
      parallelFor.asyncDispatch = false;
      parallelFor.numWorkerThreads = static_cast<int32_t>(options.threads);
      parallelFor.minTaskSize = 1;
      pm.addPass(createAsyncParallelForPass(parallelFor));
      pm.addPass(createAsyncToAsyncRuntimePass());
      pm.addPass(createAsyncRuntimeRefCountingPass());
      pm.addPass(createAsyncRuntimeRefCountingOptPass());
    }
    pm.addNestedPass<func::FuncOp>(createConvertLinalgToLoopsPass());
    if (options.outlineKernels) {
      MithrilOutlineKernelsOptions outline;
      outline.sharedOnly = options.outlineSharedOnly;
      pm.addPass(createMithrilOutlineKernels(outline));
    }
    // From here to the conversion to the LLVM dialect, what only rewrites
    // the inside of functions runs function by function, the kernels of a
    // model on the context's threads.
    OpPassManager &functions = pm.nest<func::FuncOp>();
    // Unrolled into 1-D transfers: the default goes through a stack buffer
    // per transfer, allocated inside the loops, which overflows the stack on
    // long loop nests.
    functions.addPass(createMithrilUnrollTransfers());
    // Without 512-bit registers, masked writes of a prefix (7 lanes of 8)
    // as plain stores: AVX2's masked stores are slow on AMD cores.
    if (options.schedule && !options.gpuTilesOnHost) {
      std::optional<CpuTarget> target = cpuTarget(options.targetCpu);
      unsigned bits = options.vectorBits ? options.vectorBits : target ? target->vectorBits : 512;
      if (bits < 512)
        functions.addPass(createMithrilSplitMaskedWrites());
    }
    functions.addPass(createMithrilLowerScalarTransfers());
    functions.addPass(createLowerAffinePass());
    // No canonicalization of the blocks mithril-scf-to-cf leaves: LLVM's
    // SimplifyCFG merges them, and the code came out the same (the CNN
    // training step's outputs bit for bit; its loops stage 8 ms less).
    functions.addPass(createMithrilScfToControlFlow());
  }

  if (wanted("llvm")) {
    // Constant buffers (weights compiled in) as flat byte arrays, not nested
    // LLVM arrays of one constant per row.
    pm.addPass(createMithrilFlatGlobals());
    pm.addPass(createConvertBufferizationToMemRefPass());
    // Function by function, on the context's threads, up to the libm calls.
    OpPassManager &inFunctions = pm.nest<func::FuncOp>();
    inFunctions.addPass(createMithrilExpandStridedMetadata());
    inFunctions.addPass(createLowerAffinePass());
    // Math with an LLVM intrinsic (abs, floor, ceil, sqrt, fma, ...) stays
    // vector code; the libm lowering, first, called fabsf and floorf once per
    // element (3,500 calls in an int8 MLP). libm takes the rest (tanh, erf,
    // ...), and log1p: the intrinsic form would compute log(1 + x).
    // float32 exp, tanh, erf, log1p and log as vector polynomials: LLVM
    // scalarizes them into libm calls otherwise. Upstream's log polynomial
    // loses subnormal inputs (log(1e-38) off by 2): mithril-approximate-math
    // scales them into the normal range first.
    if (options.approximateMath) {
      MithrilApproximateMathOptions approximate;
      approximate.functions = {"exp", "tanh", "erf", "log1p", "log"};
      inFunctions.addPass(createMithrilApproximateMath(approximate));
    }
    ConvertMathToLLVMPassOptions mathToLLVM;
    mathToLLVM.approximateLog1p = false;
    inFunctions.addPass(createConvertMathToLLVMPass(mathToLLVM));
    // (It declares the libm functions it calls: the module's.)
    pm.addPass(createConvertMathToLibmPass());
    // Function by function again, up to the vector conversion.
    OpPassManager &vectorsInFunctions = pm.nest<func::FuncOp>();
    // The target once (the host's reads CPUID and sysfs).
    std::optional<CpuTarget> target = cpuTarget(options.targetCpu);
    // With AVX512-BF16, truncations to bf16 stay for vcvtneps2bf16.
    MithrilExpandBF16Options expandBF16;
    if (target)
      expandBF16.nativeTruncation = target->bf16DotProduct;
    vectorsInFunctions.addPass(createMithrilExpandBF16(expandBF16));
    // The schedule's int8 register tiles as vpdpbusd (AVX512-VNNI targets).
    vectorsInFunctions.addPass(createMithrilX86DotProducts());
    // Multi-dimensional reductions the vectorizer produced become 1-D ones.
    vectorsInFunctions.addPass(createMithrilLowerMultiReductions());
    // Their min and max (and every other) without ordering -0 below +0:
    // half the instructions on x86.
    vectorsInFunctions.addPass(createMithrilRelaxFloatMinMax());
    // Transposes' shuffle rounds cut in pairs for LLVM's instruction selection.
    MithrilShuffleBarriersOptions barriers;
    if (target)
      barriers.vectorBits = target->vectorBits;
    vectorsInFunctions.addPass(createMithrilShuffleBarriers(barriers));
    // Register-tile contractions become outer products: broadcasts and FMAs.
    ConvertVectorToLLVMPassOptions vectorToLLVM;
    vectorToLLVM.vectorContractLowering = vector::VectorContractLowering::OuterProduct;
    vectorToLLVM.reassociateFPReductions = true;
    // The dot products the schedule picked for the target (vdpbf16ps).
    vectorToLLVM.x86Vector = true;
    // And the AMX tiles (mithril-x86-tile-matmuls).
    vectorToLLVM.amx = true;
    vectorsInFunctions.addPass(createConvertVectorToLLVMPass(vectorToLLVM));
    if (options.threads > 1 && !options.taskPool)
      pm.addPass(createConvertAsyncToLLVMPass());
    // The functions' bodies on the context's threads; the two module
    // passes below then convert only signatures, calls and globals on one
    // (the bench CNN training step on two threads: the stage 141 -> 110 ms,
    // median of 8 paired launches on a contended Zen 3; the same LLVM IR).
    MithrilConvertBodiesToLLVMOptions bodiesToLLVM;
    bodiesToLLVM.useGenericFunctions = options.runtimeAllocator;
    bodiesToLLVM.useAlignedAlloc = true;
    pm.addPass(createMithrilConvertBodiesToLLVM(bodiesToLLVM));
    FinalizeMemRefToLLVMConversionPassOptions memrefToLLVM;
    memrefToLLVM.useGenericFunctions = options.runtimeAllocator;
    // The aligned pointer is the allocation's own (not an integer rounded
    // up and cast back), so LLVM sees which allocation a pointer is from.
    memrefToLLVM.useAlignedAlloc = true;
    pm.addPass(createFinalizeMemRefToLLVMConversionPass(memrefToLLVM));
    pm.addPass(createConvertToLLVMPass());
    pm.addPass(createReconcileUnrealizedCastsPass());
    // Fresh buffers alias nothing: LLVM keeps inputs' loads out of loops
    // that store into temporaries.
    pm.addPass(createMithrilNoAliasAllocations());
    // bf16 vectors of odd lengths that LLVM cannot load or store.
    pm.addPass(createMithrilLegalizeBF16Memory());
  }
  return success();
}

/// The compute capability in `chip` (90 for sm_90a), 0 where there is none.
static unsigned computeCapability(StringRef chip) {
  unsigned sm = 0;
  if (chip.consume_front("sm_"))
    chip.take_while(llvm::isDigit).getAsInteger(10, sm);
  return sm;
}

/// The chips LLVM 22's NVPTX back end knows, with the first PTX ISA version
/// it accepts for each (an older one is a fatal error in the back end).
static const std::pair<StringRef, StringRef> kNvptxChips[] = {
    {"sm_20", "+ptx60"},   {"sm_21", "+ptx60"},   {"sm_30", "+ptx60"},   {"sm_32", "+ptx60"},
    {"sm_35", "+ptx60"},   {"sm_37", "+ptx60"},   {"sm_50", "+ptx60"},   {"sm_52", "+ptx60"},
    {"sm_53", "+ptx60"},   {"sm_60", "+ptx60"},   {"sm_61", "+ptx60"},   {"sm_62", "+ptx60"},
    {"sm_70", "+ptx60"},   {"sm_72", "+ptx61"},   {"sm_75", "+ptx63"},   {"sm_80", "+ptx70"},
    {"sm_86", "+ptx71"},   {"sm_87", "+ptx74"},   {"sm_88", "+ptx90"},   {"sm_89", "+ptx78"},
    {"sm_90", "+ptx80"},   {"sm_90a", "+ptx80"},  {"sm_100", "+ptx86"},  {"sm_100a", "+ptx86"},
    {"sm_100f", "+ptx88"}, {"sm_101", "+ptx86"},  {"sm_101a", "+ptx86"}, {"sm_101f", "+ptx88"},
    {"sm_103", "+ptx88"},  {"sm_103a", "+ptx88"}, {"sm_103f", "+ptx88"}, {"sm_110", "+ptx90"},
    {"sm_110a", "+ptx90"}, {"sm_110f", "+ptx90"}, {"sm_120", "+ptx87"},  {"sm_120a", "+ptx87"},
    {"sm_120f", "+ptx88"}, {"sm_121", "+ptx88"},  {"sm_121a", "+ptx88"}, {"sm_121f", "+ptx88"}};

std::string mithril::defaultPtxFeatures(StringRef chip) {
  for (auto [known, features] : kNvptxChips)
    if (known == chip)
      return features.str();
  return "+ptx60";
}

std::string mithril::findLibdevice() {
  SmallVector<std::string> candidates;
  for (const char *var : {"CUDA_ROOT", "CUDA_HOME", "CUDA_PATH"})
    if (const char *root = std::getenv(var); root && *root)
      candidates.push_back((Twine(root) + "/nvvm/libdevice/libdevice.10.bc").str());
  candidates.push_back("/usr/local/cuda/nvvm/libdevice/libdevice.10.bc");
  // Debian's nvidia-cuda-toolkit.
  candidates.push_back("/usr/lib/nvidia-cuda-toolkit/libdevice/libdevice.10.bc");
  for (const std::string &path : candidates)
    if (llvm::sys::fs::is_regular_file(path))
      return path;
  return "";
}

/// Kernels to NVVM and PTX (or a cubin), host code to the LLVM dialect with
/// calls into the CUDA runtime: upstream's gpu-lower-to-nvvm-pipeline in
/// substance, plus libdevice, without which ptxas rejects kernels that use
/// math functions (sqrt, exp, ...: they become calls to __nv_sqrtf, ...).
static void addNvvmLowering(OpPassManager &pm, const GpuPipelineOptions &options) {
  // Upstream lowers f16 tensor-core products, not bf16 ones.
  pm.addPass(createMithrilGpuBf16MmaToNvvm());
  pm.addPass(createConvertNVGPUToNVVMPass());
  pm.addPass(createConvertVectorToSCFPass());
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(createConvertNVVMToLLVMPass());
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(memref::createExpandStridedMetadataPass());
  GpuNVVMAttachTargetOptions target;
  target.chip = options.chip;
  target.features =
      options.features.empty() ? defaultPtxFeatures(options.chip) : options.features.getValue();
  std::string libdevice =
      options.libdevice.empty() ? findLibdevice() : options.libdevice.getValue();
  if (!libdevice.empty() && libdevice != "none")
    target.linkLibs.push_back(libdevice);
  pm.addPass(createGpuNVVMAttachTarget(target));
  pm.addPass(createLowerAffinePass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertIndexToLLVMPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());

  pm.addNestedPass<gpu::GPUModuleOp>(createStripDebugInfoPass());
  pm.addNestedPass<gpu::GPUModuleOp>(createConvertGpuOpsToNVVMOps());
  pm.addNestedPass<gpu::GPUModuleOp>(LLVM::createNVVMOptimizeForTargetPass());
  pm.addNestedPass<gpu::GPUModuleOp>(createCanonicalizerPass());
  pm.addNestedPass<gpu::GPUModuleOp>(createCSEPass());
  pm.addNestedPass<gpu::GPUModuleOp>(createReconcileUnrealizedCastsPass());

  pm.addPass(createGpuToLLVMConversionPass());
  GpuModuleToBinaryPassOptions binary;
  binary.compilationTarget = options.format;
  pm.addPass(createGpuModuleToBinaryPass(binary));
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
}

/// Whether `stop` is a CPU pipeline stage the GPU pipeline shares.
static bool isSharedStage(StringRef stop) {
  return llvm::is_contained(kStages, stop) &&
         llvm::find(kStages, stop) <= llvm::find(kStages, StringRef("bufferize"));
}

std::string mithril::checkGpuPipelineOptions(const GpuPipelineOptions &options) {
  StringRef stop = options.stopAfter;
  if (!isSharedStage(stop) && stop != "kernels" && stop != "binary")
    return "unknown GPU pipeline stage '" + stop.str() +
           "' (the CPU stages up to bufferize, then kernels or binary)";
  if (options.format != "isa" && options.format != "bin" && options.format != "fatbin")
    return "unknown kernel format '" + options.format + "' (isa, bin or fatbin)";
  if (llvm::none_of(kNvptxChips, [&](auto chip) { return chip.first == options.chip; }))
    return "unknown GPU architecture '" + options.chip + "' (sm_80, sm_90, ...: sm_20 to sm_121f)";
  // An older PTX ISA than the chip needs is a fatal error in the back end.
  auto ptxVersion = [](StringRef features) {
    unsigned version = 0;
    size_t at = features.find("+ptx");
    if (at != StringRef::npos)
      features.drop_front(at + 4).take_while(llvm::isDigit).getAsInteger(10, version);
    return version;
  };
  std::string needed = defaultPtxFeatures(options.chip);
  if (!options.features.empty() && ptxVersion(options.features) < ptxVersion(needed))
    return "PTX features '" + options.features + "' are older than " + options.chip + " needs (" +
           needed + ")";
  return "";
}

LogicalResult mithril::buildGpuPipeline(OpPassManager &pm, const GpuPipelineOptions &options) {
  if (!checkGpuPipelineOptions(options).empty())
    return failure();
  StringRef stop = options.stopAfter;
  bool cpuStage = isSharedStage(stop);
  CpuPipelineOptions front;
  copyModelOptions(front, options);
  // The host schedule vectorizes for CPU registers; GPU loops map to threads.
  front.schedule = false;
  front.stopAfter = cpuStage ? stop.str() : "bufferize";
  if (failed(buildCpuPipeline(pm, front)))
    return failure();
  if (cpuStage)
    return success();

  // Contractions become kernels that stage tiles of their operands in shared
  // memory; every other parallel loop nest becomes a kernel of its own: tiles
  // of 16x16 map to blocks and threads (guards instead of min/max bounds keep
  // block sizes static).
  // f16 and bf16 products on tensor cores where the chip has mma.sync
  // m16n8k16 (sm_80 and later).
  MithrilGpuTileContractionsOptions tiles;
  tiles.tensorCores = computeCapability(options.chip) >= 80;
  pm.addNestedPass<func::FuncOp>(createMithrilGpuTileContractions(tiles));
  pm.addNestedPass<func::FuncOp>(createMithrilGpuMapForall());
  // Reductions inside the kernels, not host loops launching one per step.
  pm.addNestedPass<func::FuncOp>(createMithrilGpuReductionsInner());
  pm.addNestedPass<func::FuncOp>(createConvertLinalgToParallelLoopsPass());
  pm.addNestedPass<func::FuncOp>(createParallelLoopTilingPass({16, 16}, /*noMinMaxBounds=*/true));
  pm.addNestedPass<func::FuncOp>(createGpuMapParallelLoopsPass());
  pm.addNestedPass<func::FuncOp>(createConvertParallelLoopToGpuPass());
  // What is left of host code touching buffers (loops without a parallel
  // dimension, 0-d arithmetic) runs as one-thread kernels.
  pm.addNestedPass<func::FuncOp>(createMithrilGpuSerialKernels());
  // Constants and index arithmetic go into the kernels rather than become
  // kernel arguments: tile sizes and bounds stay known to the PTX compiler.
  pm.addPass(createGpuLaunchSinkIndexComputationsPass());
  pm.addPass(createGpuKernelOutliningPass());
  // One PTX module for all kernels: a file ptxas takes as it is.
  pm.addPass(createMithrilGpuMergeModules());
  pm.addNestedPass<func::FuncOp>(createMithrilGpuHostMemory());
  pm.addPass(createCanonicalizerPass());
  if (stop == "kernels")
    return success();
  // gpu-to-llvm lowers only asynchronous allocations and copies.
  pm.addNestedPass<func::FuncOp>(createGpuAsyncRegionPass());

  addNvvmLowering(pm, options);
  return success();
}

/// Registers a pipeline whose options are checked first: mithril-opt then
/// reports what is wrong with them rather than run an empty pipeline.
template <typename Options>
static void registerCheckedPipeline(StringRef name, StringRef description,
                                    std::string (*check)(const Options &),
                                    LogicalResult (*build)(OpPassManager &, const Options &)) {
  registerPassPipeline(
      name, description,
      [=](OpPassManager &pm, StringRef text,
          function_ref<LogicalResult(const Twine &)> errorHandler) -> LogicalResult {
        Options options;
        if (failed(options.parseFromString(text)))
          return failure();
        if (std::string error = check(options); !error.empty())
          return errorHandler(Twine(name) + ": " + error);
        return build(pm, options);
      },
      [](function_ref<void(const mlir::detail::PassOptions &)> printOptions) {
        printOptions(Options());
      });
}

void mithril::registerPipelines() {
  registerMithrilPipelinesPasses();
  registerCheckedPipeline<GpuPipelineOptions>(
      "mithril-gpu-pipeline", "Compile mithril models to NVIDIA GPU kernels (PTX) and host code",
      checkGpuPipelineOptions, buildGpuPipeline);
  registerCheckedPipeline<CpuPipelineOptions>(
      "mithril-cpu-pipeline", "Compile mithril models to the LLVM dialect for the host CPU",
      checkCpuPipelineOptions, buildCpuPipeline);
}
