//===- FuseElementwise.cpp - elementwise fusion with safe reshapes --------===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//

#include "mithril/Pipelines/Pipelines.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tensor/Transforms/Transforms.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mithril {
#define GEN_PASS_DEF_MITHRILFUSEELEMENTWISE
#include "mithril/Pipelines/Passes.h.inc"
} // namespace mithril

using namespace mlir;

/// Does every reassociation group of the reshape's expanded side have at most
/// one dynamic size?
static bool hasOneDynamicSizePerGroup(RankedTensorType expanded,
                                      ArrayRef<ReassociationIndices> groups) {
  return llvm::all_of(groups, [&](const ReassociationIndices &group) {
    return llvm::count_if(group, [&](int64_t d) { return expanded.isDynamicDim(d); }) <= 1;
  });
}

/// The fusion control: producers with one use, as upstream's pass, and
/// reshapes folded by expansion only where they stay well-formed.
static bool shouldFuse(OpOperand *fused) {
  Operation *producer = fused->get().getDefiningOp();
  if (!producer || !producer->hasOneUse())
    return false;
  // A collapse feeding a linalg op, or an expand of a linalg op's result.
  if (auto collapse = dyn_cast<tensor::CollapseShapeOp>(producer))
    return hasOneDynamicSizePerGroup(collapse.getSrcType(),
                                     collapse.getReassociationIndices());
  if (auto expand = dyn_cast<tensor::ExpandShapeOp>(fused->getOwner()))
    return hasOneDynamicSizePerGroup(expand.getResultType(), expand.getReassociationIndices());
  // A producer that reads its own result (a reduction over no loops, as of a
  // 0-d tensor) keeps that result in the fused op, written under the
  // consumer's indexing map: broadcast into a loop, it would accumulate once
  // per iteration. It stays apart.
  if (auto linalgProducer = dyn_cast<linalg::LinalgOp>(producer))
    if (llvm::any_of(linalgProducer.getDpsInitsMutable(), [&](OpOperand &init) {
          return linalgProducer.payloadUsesValueFromOperand(&init);
        }))
      return false;
  return true;
}

namespace {
struct FuseElementwisePass
    : public mithril::impl::MithrilFuseElementwiseBase<FuseElementwisePass> {
  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    RewritePatternSet patterns(ctx);
    linalg::populateElementwiseOpsFusionPatterns(patterns, shouldFuse);
    linalg::populateFoldReshapeOpsByExpansionPatterns(patterns, shouldFuse);
    tensor::populateBubbleUpExpandShapePatterns(patterns);
    affine::AffineApplyOp::getCanonicalizationPatterns(patterns, ctx);
    linalg::GenericOp::getCanonicalizationPatterns(patterns, ctx);
    tensor::ExpandShapeOp::getCanonicalizationPatterns(patterns, ctx);
    tensor::CollapseShapeOp::getCanonicalizationPatterns(patterns, ctx);
    ctx->getLoadedDialect<linalg::LinalgDialect>()->getCanonicalizationPatterns(patterns);
    linalg::populateConstantFoldLinalgOperations(patterns, shouldFuse);
    GreedyRewriteConfig config;
    config.setUseTopDownTraversal(true);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns), config)))
      signalPassFailure();
  }
};
} // namespace
