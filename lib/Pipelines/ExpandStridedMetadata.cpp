//===- ExpandStridedMetadata.cpp - views as explicit offsets and strides --===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//

#include "mithril/Pipelines/Pipelines.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/MemRef/Transforms/Transforms.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mithril {
#define GEN_PASS_DEF_MITHRILEXPANDSTRIDEDMETADATA
#include "mithril/Pipelines/Passes.h.inc"
} // namespace mithril

using namespace mlir;

namespace {
struct ExpandStridedMetadataPass
    : public mithril::impl::MithrilExpandStridedMetadataBase<ExpandStridedMetadataPass> {
  void runOnOperation() override {
    // The memref ops (views, reshapes, metadata reads) and what their
    // expansion creates: the rest of the function has nothing to expand.
    SmallVector<Operation *> memrefOps;
    getOperation()->walk([&](Operation *op) {
      if (isa_and_nonnull<memref::MemRefDialect>(op->getDialect()))
        memrefOps.push_back(op);
    });
    if (memrefOps.empty())
      return;
    RewritePatternSet patterns(&getContext());
    memref::populateExpandStridedMetadataPatterns(patterns);
    GreedyRewriteConfig config;
    config.setStrictness(GreedyRewriteStrictness::ExistingAndNewOps);
    if (failed(applyOpPatternsGreedily(memrefOps, std::move(patterns), config)))
      return signalPassFailure();
  }
};
} // namespace
