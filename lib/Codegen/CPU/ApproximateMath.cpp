//===- ApproximateMath.cpp - float32 math as vector polynomials -----------===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//

#include "mithril/Codegen/CPU/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mithril {
#define GEN_PASS_DEF_MITHRILAPPROXIMATEMATH
#include "mithril/Codegen/CPU/Passes.h.inc"
} // namespace mithril

using namespace mlir;

namespace {
struct ApproximateMathPass : public mithril::impl::MithrilApproximateMathBase<ApproximateMathPass> {
  using MithrilApproximateMathBase::MithrilApproximateMathBase;
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    // Upstream names the ops in full (math.exp); the option takes both.
    auto wanted = [&](StringRef name) {
      StringRef bare = name;
      bare.consume_front("math.");
      return llvm::is_contained(functions, name) || llvm::is_contained(functions, bare);
    };
    populateMathPolynomialApproximationPatterns(patterns,
                                                llvm::function_ref<bool(StringRef)>(wanted));
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace
