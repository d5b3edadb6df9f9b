//===- LowerScalarTransfers.cpp - one-element transfers as loads ----------===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//

#include "mithril/Codegen/CPU/Passes.h"

#include "mithril/Support/RewriteSelected.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/Vector/Transforms/LoweringPatterns.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mithril {
#define GEN_PASS_DEF_MITHRILLOWERSCALARTRANSFERS
#include "mithril/Codegen/CPU/Passes.h.inc"
} // namespace mithril

using namespace mlir;

namespace {
/// A 0-d transfer_read of a buffer is a load and a broadcast: upstream's
/// scalar patterns only rewrite reads that feed extracts. A padding value is
/// not needed: a 0-d read has no dimension to be out of bounds in.
struct ZeroDimReadAsLoad : OpRewritePattern<vector::TransferReadOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(vector::TransferReadOp read,
                                PatternRewriter &rewriter) const override {
    if (read.getVectorType().getRank() != 0 || read.getMask() ||
        !isa<MemRefType>(read.getBase().getType()))
      return failure();
    Value scalar =
        memref::LoadOp::create(rewriter, read.getLoc(), read.getBase(), read.getIndices());
    rewriter.replaceOpWithNewOp<vector::BroadcastOp>(read, read.getVectorType(), scalar);
    return success();
  }
};

struct LowerScalarTransfersPass
    : public mithril::impl::MithrilLowerScalarTransfersBase<LowerScalarTransfersPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<ZeroDimReadAsLoad>(&getContext());
    vector::populateScalarVectorTransferLoweringPatterns(patterns, /*benefit=*/1,
                                                         /*allowMultipleUses=*/true);
    // Transfers, and extracts of a transfer's read.
    auto transfer = [](Operation *op) {
      if (auto extract = dyn_cast<vector::ExtractOp>(op))
        return extract.getSource().getDefiningOp<vector::TransferReadOp>() != nullptr;
      return isa<vector::TransferReadOp, vector::TransferWriteOp>(op);
    };
    if (failed(mithril::rewriteSelected(getOperation(), std::move(patterns), transfer)))
      signalPassFailure();
  }
};
} // namespace
