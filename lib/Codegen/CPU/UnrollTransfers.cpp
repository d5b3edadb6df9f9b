//===- UnrollTransfers.cpp - n-d vector transfers as unrolled 1-d ones -----===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//

#include "mithril/Codegen/CPU/Passes.h"

#include "mlir/Conversion/VectorToSCF/VectorToSCF.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/Vector/Transforms/LoweringPatterns.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mithril {
#define GEN_PASS_DEF_MITHRILUNROLLTRANSFERS
#include "mithril/Codegen/CPU/Passes.h.inc"
} // namespace mithril

using namespace mlir;

namespace {
/// Applies `patterns` to the function's transfers and to what they become.
LogicalResult rewriteTransfers(Operation *root, RewritePatternSet &&patterns) {
  SmallVector<Operation *> transfers;
  root->walk([&](Operation *op) {
    if (isa<vector::TransferReadOp, vector::TransferWriteOp>(op))
      transfers.push_back(op);
  });
  if (transfers.empty())
    return success();
  GreedyRewriteConfig config;
  config.setStrictness(GreedyRewriteStrictness::ExistingAndNewOps);
  return applyOpPatternsGreedily(transfers, std::move(patterns), config);
}

struct UnrollTransfersPass : public mithril::impl::MithrilUnrollTransfersBase<UnrollTransfersPass> {
  void runOnOperation() override {
    // Permutation maps first, as upstream's convert-vector-to-scf does.
    RewritePatternSet permutations(&getContext());
    vector::populateVectorTransferPermutationMapLoweringPatterns(permutations);
    if (failed(rewriteTransfers(getOperation(), std::move(permutations))))
      return signalPassFailure();
    RewritePatternSet unroll(&getContext());
    populateVectorToSCFConversionPatterns(unroll, VectorTransferToSCFOptions().enableFullUnroll());
    if (failed(rewriteTransfers(getOperation(), std::move(unroll))))
      return signalPassFailure();
  }
};
} // namespace
