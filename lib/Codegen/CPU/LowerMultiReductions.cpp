//===- LowerMultiReductions.cpp - multi-reductions to 1-D reductions -------===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//

#include "mithril/Codegen/CPU/Passes.h"
#include "mithril/Support/RewriteSelected.h"

#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/Vector/Transforms/LoweringPatterns.h"

namespace mithril {
#define GEN_PASS_DEF_MITHRILLOWERMULTIREDUCTIONS
#include "mithril/Codegen/CPU/Passes.h.inc"
} // namespace mithril

using namespace mlir;

namespace {
struct LowerMultiReductionsPass
    : public mithril::impl::MithrilLowerMultiReductionsBase<LowerMultiReductionsPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    vector::populateVectorMultiReductionLoweringPatterns(
        patterns, vector::VectorMultiReductionLowering::InnerParallel);
    // The reductions and what their lowering creates, not the whole
    // function: the vector code of a model is large and holds few of them.
    if (failed(mithril::rewriteSelected(getOperation(), std::move(patterns), [](Operation *op) {
          return isa<vector::MultiDimReductionOp>(op);
        })))
      return signalPassFailure();
  }
};
} // namespace
