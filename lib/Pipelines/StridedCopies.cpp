//===- StridedCopies.cpp - strided memref copies as loops -----------------===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//

#include "mithril/Pipelines/Pipelines.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/PatternMatch.h"

namespace mithril {
#define GEN_PASS_DEF_MITHRILSTRIDEDCOPIES
#include "mithril/Pipelines/Passes.h.inc"
} // namespace mithril

using namespace mlir;

namespace {
struct StridedCopiesPass : public mithril::impl::MithrilStridedCopiesBase<StridedCopiesPass> {
  void runOnOperation() override {
    SmallVector<memref::CopyOp> copies;
    getOperation().walk([&](memref::CopyOp copy) {
      auto source = dyn_cast<MemRefType>(copy.getSource().getType());
      auto target = dyn_cast<MemRefType>(copy.getTarget().getType());
      // A contiguous pair is one memcpy; a dynamic shape keeps the runtime's
      // general copy.
      if (source && target && source.hasStaticShape() && target.hasStaticShape() &&
          source.getRank() > 0 &&
          !(source.areTrailingDimsContiguous(source.getRank()) &&
            target.areTrailingDimsContiguous(target.getRank())))
        copies.push_back(copy);
    });
    IRRewriter rewriter(&getContext());
    for (memref::CopyOp copy : copies) {
      rewriter.setInsertionPoint(copy);
      rewriter.replaceOpWithNewOp<linalg::CopyOp>(copy, copy.getSource(), copy.getTarget());
    }
  }
};
} // namespace
