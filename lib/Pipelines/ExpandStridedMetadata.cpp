//===- ExpandStridedMetadata.cpp - views as explicit offsets and strides --===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//

#include "mithril/Pipelines/Pipelines.h"
#include "mithril/Support/RewriteSelected.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/MemRef/Transforms/Transforms.h"

namespace mithril {
#define GEN_PASS_DEF_MITHRILEXPANDSTRIDEDMETADATA
#include "mithril/Pipelines/Passes.h.inc"
} // namespace mithril

using namespace mlir;

namespace {
struct ExpandStridedMetadataPass
    : public mithril::impl::MithrilExpandStridedMetadataBase<ExpandStridedMetadataPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    memref::populateExpandStridedMetadataPatterns(patterns);
    // The memref ops (views, reshapes, metadata reads) and what their
    // expansion creates: the rest of the function has nothing to expand.
    if (failed(mithril::rewriteSelected(getOperation(), std::move(patterns), [](Operation *op) {
          return isa_and_nonnull<memref::MemRefDialect>(op->getDialect());
        })))
      return signalPassFailure();
  }
};
} // namespace
