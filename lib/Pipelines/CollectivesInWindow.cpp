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
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/LoopLikeInterface.h"

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

/// Whether `tensor` is a window place or a part of one: an insert_slice
/// into it or an extract_slice of it, at any depth.
bool isInWindowPlace(Value tensor) {
  while (true) {
    if (isWindowPlace(tensor))
      return true;
    if (auto insert = tensor.getDefiningOp<tensor::InsertSliceOp>())
      tensor = insert.getDest();
    else if (auto extract = tensor.getDefiningOp<tensor::ExtractSliceOp>())
      tensor = extract.getSource();
    else
      return false;
  }
}

/// Whether some insert_slice in `module` writes into a window place.
bool hasSliceInWindowPlace(ModuleOp module) {
  return module
      .walk([](tensor::InsertSliceOp insert) {
        return isInWindowPlace(insert.getDest()) ? WalkResult::interrupt() : WalkResult::advance();
      })
      .wasInterrupted();
}

/// Whether two ops write into `tensor` (take it as the tensor they update):
/// each would then write into the one buffer a window place gives it.
bool writtenTwice(Value tensor) {
  int writers = 0;
  for (OpOperand &use : tensor.getUses()) {
    Operation *owner = use.getOwner();
    bool writes = false;
    if (auto write = dyn_cast<vector::TransferWriteOp>(owner))
      writes = write.getBase() == tensor;
    else if (auto insert = dyn_cast<tensor::InsertSliceOp>(owner))
      writes = insert.getDest() == tensor;
    else if (auto dps = dyn_cast<DestinationStyleOpInterface>(owner))
      writes = dps.isDpsInit(&use);
    else if (auto loop = dyn_cast<LoopLikeOpInterface>(owner))
      writes = llvm::any_of(loop.getInitsMutable(), [&](OpOperand &init) { return &init == &use; });
    if (writes && ++writers > 1)
      return true;
  }
  return false;
}

struct CollectivesInWindowPass
    : public mithril::impl::MithrilCollectivesInWindowBase<CollectivesInWindowPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    // Most modules sum nothing: no analysis for them.
    if (!module.walk([](mithril::CollectiveWindowOp) { return WalkResult::interrupt(); })
             .wasInterrupted())
      return;
    // Twice: first the operands computed whole into their places; then
    // the parts of an operand computed apart (a product split at its
    // register tiles' remainder, each part into a slice of the whole),
    // whose slices now lie in a window place.
    for (bool parts : {false, true}) {
      // (The second analysis only where some part lies in a window.)
      if (parts && !hasSliceInWindowPlace(module))
        break;
      // As the pipeline's one-shot bufferization will decide.
      bufferization::OneShotBufferizationOptions options;
      options.bufferizeFunctionBoundaries = true;
      options.setFunctionBoundaryTypeConversion(bufferization::LayoutMapOption::IdentityLayoutMap);
      bufferization::OneShotAnalysisState state(module, options);
      if (failed(bufferization::analyzeModuleOp(module, state)))
        return signalPassFailure();
      auto intoWindowsOnly = [parts](RewriterBase &rewriter, SubsetInsertionOpInterface op,
                                     tensor::EmptyOp empty, Operation *user) -> Value {
        Value dest = op.getDestinationOperand().get();
        bool intoWindow =
            parts ? isa<tensor::InsertSliceOp>(op.getOperation()) && isInWindowPlace(dest)
                  : isa<bufferization::MaterializeInDestinationOp>(op.getOperation()) &&
                        isWindowPlace(dest);
        // Not where the empty tensor's first user's result is written by two
        // ops: a zero fill that CSE shared between the operand's product and
        // another product of its shape, put in the window, had the other
        // product's accumulators written there after the operand's sum was
        // started (tensor-parallel gradients on a Zen 3, where a float64 8 x
        // 8 product's 6-row tiles matched a 6 x 8 operand).
        if (!intoWindow || llvm::any_of(user->getResults(), writtenTwice))
          return Value();
        return bufferization::buildSubsetExtraction(rewriter, op, empty, user);
      };
      IRRewriter rewriter(module.getContext());
      if (failed(bufferization::eliminateEmptyTensors(rewriter, module, state, intoWindowsOnly)))
        return signalPassFailure();
    }
    // The empty tensors replaced in all their uses.
    module.walk([](tensor::EmptyOp empty) {
      if (empty->use_empty())
        empty->erase();
    });
  }
};
} // namespace
