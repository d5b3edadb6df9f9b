//===- ApproximateMath.cpp - float32 math as vector polynomials -----------===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//

#include "mithril/Codegen/CPU/Passes.h"

#include "RewriteSelected.h"

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
    // log1p's expansion computes log(1 + x) with a math.log, whose argument
    // is never subnormal (1 + x is 0, or at least 2^-24): that log is
    // approximated too, else it stayed an LLVM intrinsic that the backend
    // scalarizes into one logf call per element (softplus at a third of
    // torch's speed). Only the expansion's logs: the ops rewritten are the
    // ones selected below and the ones their patterns create.
    auto expanded = [&](StringRef name) {
      return wanted(name) || (wanted("log1p") && name == "math.log");
    };
    populateMathPolynomialApproximationPatterns(patterns,
                                                llvm::function_ref<bool(StringRef)>(expanded));
    auto selected = [&](Operation *op) {
      return op->getDialect() && op->getDialect()->getNamespace() == "math" &&
             wanted(op->getName().getStringRef());
    };
    if (failed(mithril::cpu::rewriteSelected(getOperation(), std::move(patterns), selected)))
      signalPassFailure();
  }
};
} // namespace
