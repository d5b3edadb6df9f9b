//===- ExpandBFloat16.cpp - bf16 conversions as integer arithmetic --------===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//

#include "mithril/Codegen/CPU/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
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
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    arith::populateExpandBFloat16Patterns(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace
