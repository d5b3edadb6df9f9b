//===- ExpandBFloat16.cpp - bf16 conversions as integer arithmetic --------===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//

#include "mithril/Codegen/CPU/Passes.h"

#include "mithril/Support/RewriteSelected.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mithril {
#define GEN_PASS_DEF_MITHRILEXPANDBF16
#include "mithril/Codegen/CPU/Passes.h.inc"
} // namespace mithril

using namespace mlir;

namespace {
/// Upstream's bf16 patterns alone (arith-expand would also rewrite min/max
/// and the integer divisions that the LLVM lowering handles better).
struct ExpandBFloat16Pass : public mithril::impl::MithrilExpandBF16Base<ExpandBFloat16Pass> {
  using MithrilExpandBF16Base::MithrilExpandBF16Base;

  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    arith::populateExpandBFloat16Patterns(patterns);
    // The conversions from and to bf16.
    auto isBF16 = [](Type type) { return isa<BFloat16Type>(getElementTypeOrSelf(type)); };
    auto converts = [&](Operation *op) {
      if (auto ext = dyn_cast<arith::ExtFOp>(op))
        return isBF16(ext.getIn().getType());
      if (auto trunc = dyn_cast<arith::TruncFOp>(op))
        return !nativeTruncation && isBF16(trunc.getType());
      return false;
    };
    if (failed(mithril::rewriteSelected(getOperation(), std::move(patterns), converts)))
      signalPassFailure();
  }
};
} // namespace
