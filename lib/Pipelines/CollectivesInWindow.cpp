//===- CollectivesInWindow.cpp - all-reduce operands computed in place ----===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//

#include "mithril/Dialect/Mithril/IR/MithrilOps.h"
#include "mithril/Pipelines/Pipelines.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Bufferization/Transforms/OneShotAnalysis.h"
#include "mlir/Dialect/Bufferization/Transforms/OneShotModuleBufferize.h"
#include "mlir/Dialect/Bufferization/Transforms/Transforms.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/PatternMatch.h"

namespace mithril {
#define GEN_PASS_DEF_MITHRILCOLLECTIVESINWINDOW
#include "mithril/Pipelines/Passes.h.inc"
} // namespace mithril

using namespace mlir;

namespace {
/// Whether `tensor` is a view of a collective window, as
/// convert-mithril-to-linalg places an all_reduce's operand.
bool isWindowPlace(Value tensor) {
  auto toTensor = tensor.getDefiningOp<bufferization::ToTensorOp>();
  if (!toTensor)
    return false;
  auto view = toTensor.getBuffer().getDefiningOp<memref::ViewOp>();
  return view && view.getSource().getDefiningOp<mithril::CollectiveWindowOp>();
}

struct CollectivesInWindowPass
    : public mithril::impl::MithrilCollectivesInWindowBase<CollectivesInWindowPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    // Most modules sum nothing: no analysis for them.
    if (!module.walk([](mithril::CollectiveWindowOp) { return WalkResult::interrupt(); })
             .wasInterrupted())
      return;
    // As the pipeline's one-shot bufferization will decide.
    bufferization::OneShotBufferizationOptions options;
    options.bufferizeFunctionBoundaries = true;
    options.setFunctionBoundaryTypeConversion(bufferization::LayoutMapOption::IdentityLayoutMap);
    bufferization::OneShotAnalysisState state(module, options);
    if (failed(bufferization::analyzeModuleOp(module, state)))
      return signalPassFailure();
    auto intoWindowsOnly = [](RewriterBase &rewriter, SubsetInsertionOpInterface op,
                              tensor::EmptyOp empty, Operation *user) -> Value {
      auto materialize = dyn_cast<bufferization::MaterializeInDestinationOp>(op.getOperation());
      if (!materialize || !isWindowPlace(materialize.getDest()))
        return Value();
      return bufferization::buildSubsetExtraction(rewriter, op, empty, user);
    };
    IRRewriter rewriter(module.getContext());
    if (failed(bufferization::eliminateEmptyTensors(rewriter, module, state, intoWindowsOnly)))
      return signalPassFailure();
    // The empty tensors replaced in all their uses.
    module.walk([](tensor::EmptyOp empty) {
      if (empty->use_empty())
        empty->erase();
    });
  }
};
} // namespace
