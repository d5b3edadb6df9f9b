//===- UnrollTransfers.cpp - n-d vector transfers as unrolled 1-d ones -----===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//

#include "mithril/Codegen/CPU/Passes.h"
#include "mithril/Support/RewriteSelected.h"

#include "mlir/Conversion/VectorToSCF/VectorToSCF.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/Vector/Transforms/LoweringPatterns.h"

namespace mithril {
#define GEN_PASS_DEF_MITHRILUNROLLTRANSFERS
#include "mithril/Codegen/CPU/Passes.h.inc"
} // namespace mithril

using namespace mlir;

namespace {
bool isTransfer(Operation *op) { return isa<vector::TransferReadOp, vector::TransferWriteOp>(op); }

struct UnrollTransfersPass : public mithril::impl::MithrilUnrollTransfersBase<UnrollTransfersPass> {
  void runOnOperation() override {
    // Permutation maps first, as upstream's convert-vector-to-scf does.
    RewritePatternSet permutations(&getContext());
    vector::populateVectorTransferPermutationMapLoweringPatterns(permutations);
    if (failed(mithril::rewriteSelected(getOperation(), std::move(permutations), isTransfer)))
      return signalPassFailure();
    RewritePatternSet unroll(&getContext());
    populateVectorToSCFConversionPatterns(unroll, VectorTransferToSCFOptions().enableFullUnroll());
    if (failed(mithril::rewriteSelected(getOperation(), std::move(unroll), isTransfer)))
      return signalPassFailure();
  }
};
} // namespace
