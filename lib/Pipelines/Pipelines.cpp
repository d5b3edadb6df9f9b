//===- Pipelines.cpp - the named compilation pipelines --------------------===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//

#include "mithril/Pipelines/Pipelines.h"
#include "mithril/Conversion/Passes.h"
#include "mithril/Dialect/Mithril/Transforms/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;
using namespace mithril;

static constexpr llvm::StringRef kStages[] = {"flatten", "shapes",    "linalg", "fusion",
                                              "bufferize", "loops", "llvm"};

ArrayRef<StringRef> mithril::getCpuPipelineStages() { return kStages; }

LogicalResult mithril::buildCpuPipeline(OpPassManager &pm, const CpuPipelineOptions &options) {
  StringRef stop = options.stopAfter;
  if (!llvm::is_contained(kStages, stop))
    return failure();
  auto done = [&](StringRef stage) { return stop == stage; };

  MithrilFlattenOptions flatten;
  flatten.entry = options.entry;
  pm.addPass(createMithrilFlatten(flatten));
  if (done("flatten"))
    return success();

  MithrilInferShapesOptions shapes;
  shapes.entry = options.entry;
  shapes.shapes.assign(options.shapes.begin(), options.shapes.end());
  pm.addPass(createMithrilInferShapes(shapes));
  MithrilDCEOptions dce;
  dce.discard.assign(options.discard.begin(), options.discard.end());
  pm.addPass(createMithrilDCE(dce));
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  if (done("shapes"))
    return success();

  pm.addPass(createMithrilDecompose());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createConvertMithrilToLinalg());
  pm.addPass(createCanonicalizerPass());
  if (done("linalg"))
    return success();

  pm.addPass(createLinalgElementwiseOpFusionPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  if (done("fusion"))
    return success();

  bufferization::OneShotBufferizePassOptions bufferize;
  bufferize.bufferizeFunctionBoundaries = true;
  bufferize.functionBoundaryTypeConversion = bufferization::LayoutMapOption::IdentityLayoutMap;
  pm.addPass(bufferization::createOneShotBufferizePass(bufferize));
  // Outputs become caller-owned destination buffers: the runtime hands in
  // numpy arrays and nothing is returned by pointer.
  bufferization::BufferResultsToOutParamsPassOptions outParams;
  outParams.hoistStaticAllocs = true;
  outParams.modifyPublicFunctions = true;
  pm.addPass(bufferization::createBufferResultsToOutParamsPass(outParams));
  pm.addPass(createCanonicalizerPass());
  bufferization::BufferDeallocationPipelineOptions dealloc;
  bufferization::buildBufferDeallocationPipeline(pm, dealloc);
  if (done("bufferize"))
    return success();

  pm.addNestedPass<func::FuncOp>(createConvertLinalgToLoopsPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(createCanonicalizerPass());
  if (done("loops"))
    return success();

  pm.addPass(createConvertBufferizationToMemRefPass());
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createConvertMathToLibmPass());
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  pm.addPass(createConvertToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
  return success();
}

void mithril::registerPipelines() {
  PassPipelineRegistration<CpuPipelineOptions>(
      "mithril-cpu-pipeline",
      "Compile mithril models to the LLVM dialect for the host CPU",
      [](OpPassManager &pm, const CpuPipelineOptions &options) {
        // An unknown stage is reported by the options' own validation.
        (void)buildCpuPipeline(pm, options);
      });
}
