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

/// float32 erf(x) as two polynomials, without a division: x P(x^2) where
/// |x| < 1, and Q(|x| - 2.46) with the sign of x where |x| is in [1, 3.92]
/// (beyond, erf rounds to +-1 in float32, and |x| is clamped to 3.92).
/// Coefficients fitted here by least squares at Chebyshev nodes of each
/// interval; at most 2.4 ulp from the exact erf over every float32.
/// Upstream's approximation evaluates three rational functions, three
/// divisions per vector: an exact GELU over a GPT's [1024, 1024] MLP
/// activations took half the time of the product before it.
struct ErfAsPolynomials : OpRewritePattern<math::ErfOp> {
  ErfAsPolynomials(MLIRContext *ctx) : OpRewritePattern(ctx, /*benefit=*/2) {}
  LogicalResult matchAndRewrite(math::ErfOp op, PatternRewriter &rewriter) const override {
    Type type = op.getType();
    if (!getElementTypeOrSelf(type).isF32())
      return failure();
    Location loc = op.getLoc();
    auto constant = [&](float value) {
      return createScalarOrSplatConstant(rewriter, loc, type, APFloat(value));
    };
    auto horner = [&](Value t, ArrayRef<float> coefficients) {
      Value r = constant(coefficients.back());
      for (float c : llvm::reverse(coefficients.drop_back()))
        r = math::FmaOp::create(rewriter, loc, r, t, constant(c));
      return r;
    };
    static constexpr float kNear[] = {1.1283791065216064f,    -0.37612611055374146f,
                                      0.11283461004495621f,   -0.02684955671429634f,
                                      0.0051812538877129555f, -0.0007953780586831272f,
                                      7.680844282731414e-05f};
    static constexpr float kFar[] = {
        0.9994966983795166f,      0.0026562088169157505f,  -0.006535748485475779f,
        0.009832828305661678f,    -0.009904964827001095f,  0.00679815374314785f,
        -0.002963119884952903f,   0.0004615696961991489f,  0.0003906787314917892f,
        -0.00030136696295812726f, 5.1896404329454526e-05f, 2.5363142412970774e-05f,
        -9.166920790448785e-06f};
    Value x = op.getOperand();
    // NaN stays NaN through the clamp (minimumf) and both polynomials.
    Value a = arith::MinimumFOp::create(rewriter, loc, math::AbsFOp::create(rewriter, loc, x),
                                        constant(3.92f));
    Value near = arith::MulFOp::create(
        rewriter, loc, horner(arith::MulFOp::create(rewriter, loc, a, a), kNear), a);
    Value far = horner(arith::SubFOp::create(rewriter, loc, a, constant(2.46f)), kFar);
    Value isNear =
        arith::CmpFOp::create(rewriter, loc, arith::CmpFPredicate::OLT, a, constant(1.0f));
    Value magnitude = arith::SelectOp::create(rewriter, loc, isNear, near, far);
    rewriter.replaceOpWithNewOp<math::CopySignOp>(op, magnitude, x);
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
    if (wanted("erf"))
      patterns.add<ErfAsPolynomials>(&getContext());
    auto selected = [&](Operation *op) {
      return op->getDialect() && op->getDialect()->getNamespace() == "math" &&
             wanted(op->getName().getStringRef());
    };
    if (failed(mithril::rewriteSelected(getOperation(), std::move(patterns), selected)))
      signalPassFailure();
  }
};
} // namespace
