//===- ApproximateMath.cpp - float32 math as vector polynomials -----------===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//

#include "mithril/Codegen/CPU/Passes.h"

#include "mithril/Support/RewriteSelected.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <limits>

namespace mithril {
#define GEN_PASS_DEF_MITHRILAPPROXIMATEMATH
#include "mithril/Codegen/CPU/Passes.h.inc"
} // namespace mithril

using namespace mlir;

namespace {
/// Marks a log whose input is known to be normal (or zero, infinite, NaN):
/// upstream's polynomial takes it as it is.
constexpr llvm::StringLiteral kNormalInput = "mithril.normal_input";

/// float32 log(x) as log(x * 2^24) - 24 ln 2 where x is subnormal, else
/// log(x): upstream's polynomial reads the exponent field, which a subnormal
/// does not have (log(1e-38) came out off by 2). The inner log is marked for
/// the polynomial.
struct NormalizedLog : OpRewritePattern<math::LogOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(math::LogOp op, PatternRewriter &rewriter) const override {
    Type type = op.getType();
    if (op->hasAttr(kNormalInput) || !getElementTypeOrSelf(type).isF32())
      return failure();
    Location loc = op.getLoc();
    auto constant = [&](float value) {
      return createScalarOrSplatConstant(rewriter, loc, type, APFloat(value));
    };
    Value x = op.getOperand();
    Value tiny = arith::CmpFOp::create(rewriter, loc, arith::CmpFPredicate::OLT,
                                       math::AbsFOp::create(rewriter, loc, x),
                                       constant(std::numeric_limits<float>::min()));
    Value scaled = arith::SelectOp::create(
        rewriter, loc, tiny, arith::MulFOp::create(rewriter, loc, x, constant(0x1p24f)), x);
    auto log = math::LogOp::create(rewriter, loc, scaled, op.getFastmathAttr());
    log->setAttr(kNormalInput, rewriter.getUnitAttr());
    Value shifted = arith::SubFOp::create(rewriter, loc, log, constant(24.0f * 0.693147180559945f));
    rewriter.replaceOpWithNewOp<arith::SelectOp>(op, tiny, shifted, log);
    return success();
  }
};

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
    // The model's own float32 logs first go through NormalizedLog; upstream's
    // pattern then approximates the marked inner log.
    if (wanted("log"))
      patterns.add<NormalizedLog>(&getContext(), /*benefit=*/2);
    auto selected = [&](Operation *op) {
      return op->getDialect() && op->getDialect()->getNamespace() == "math" &&
             wanted(op->getName().getStringRef());
    };
    if (failed(mithril::rewriteSelected(getOperation(), std::move(patterns), selected)))
      signalPassFailure();
  }
};
} // namespace
