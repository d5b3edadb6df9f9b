//===- Decompose.cpp - composite primitives in terms of simpler ones ------===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//

#include "mithril/Dialect/Mithril/Transforms/Passes.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mithril {
#define GEN_PASS_DEF_MITHRILDECOMPOSE
#include "mithril/Dialect/Mithril/Transforms/Passes.h.inc"
} // namespace mithril

using namespace mlir;
using namespace mithril;

/// A scalar constant of `elementType`, broadcast by the elementwise ops.
static Value scalar(PatternRewriter &rewriter, Location loc, Type elementType, double v) {
  return scalarConstant(rewriter, loc, elementType, v);
}

static Type elementTypeOf(Value v) { return cast<RankedTensorType>(v.getType()).getElementType(); }

namespace {
/// softmax(x) = exp(x - max(x)) / sum(exp(x - max(x)))
struct DecomposeSoftmax : OpRewritePattern<SoftmaxOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(SoftmaxOp op, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    int64_t axes[] = {static_cast<int64_t>(op.getAxis())};
    // The shift only guards against overflow: softmax does not depend on it,
    // so it carries no gradient.
    Value max = StopGradientOp::create(
        rewriter, loc,
        MaxOp::create(rewriter, loc, op.getInput(), rewriter.getDenseI64ArrayAttr(axes),
                      rewriter.getBoolAttr(true)));
    Value shifted = SubtractOp::create(rewriter, loc, op.getInput(), max);
    Value e = ExpOp::create(rewriter, loc, shifted);
    Value sum = SumOp::create(rewriter, loc, e, rewriter.getDenseI64ArrayAttr(axes),
                              rewriter.getBoolAttr(true));
    // (The sum is at least 1: its reciprocal stands for it.)
    rewriter.replaceOpWithNewOp<DivideOp>(op, e, sum, /*reciprocal=*/true);
    return success();
  }
};

/// log_softmax(x) = (x - max) - log(sum(exp(x - max)))
struct DecomposeLogSoftmax : OpRewritePattern<LogSoftmaxOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(LogSoftmaxOp op, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    int64_t axes[] = {static_cast<int64_t>(op.getAxis())};
    // The shift only guards against overflow: softmax does not depend on it,
    // so it carries no gradient.
    Value max = StopGradientOp::create(
        rewriter, loc,
        MaxOp::create(rewriter, loc, op.getInput(), rewriter.getDenseI64ArrayAttr(axes),
                      rewriter.getBoolAttr(true)));
    Value shifted = SubtractOp::create(rewriter, loc, op.getInput(), max);
    Value e = ExpOp::create(rewriter, loc, shifted);
    Value sum = SumOp::create(rewriter, loc, e, rewriter.getDenseI64ArrayAttr(axes),
                              rewriter.getBoolAttr(true));
    Value logSum = LogOp::create(rewriter, loc, sum);
    rewriter.replaceOpWithNewOp<SubtractOp>(op, shifted, logSum);
    return success();
  }
};

/// layer_norm(x) = (x - mean(x)) / sqrt(var(x) + eps) over the last axes (the
/// mean corrected once: LayerNormOp::buildCentered),
/// times the weight and plus the bias where it has them.
struct DecomposeLayerNorm : OpRewritePattern<LayerNormOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(LayerNormOp op, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto axesAttr = rewriter.getDenseI64ArrayAttr(op.getNormalizedAxes());
    Value centered = op.buildCentered(rewriter, loc);
    Value var = MeanOp::create(rewriter, loc, SquareOp::create(rewriter, loc, centered), axesAttr,
                               rewriter.getBoolAttr(true));
    Type et = elementTypeOf(op.getInput());
    Value denom = SqrtOp::create(
        rewriter, loc,
        AddOp::create(rewriter, loc, var, scalar(rewriter, loc, et, op.getEps().convertToDouble())));
    // (At least sqrt(eps): its reciprocal stands for it.)
    Value result = DivideOp::create(rewriter, loc, centered, denom, /*reciprocal=*/true);
    ValueRange affine = op.getAffine();
    if (op.getScaled())
      result = MultiplyOp::create(rewriter, loc, result, affine.front());
    if (op.getShifted())
      result = AddOp::create(rewriter, loc, result, affine.back());
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// batch_norm(x) = (x - mean) / sqrt(var + eps) * weight + bias, with the
/// statistics reshaped to [C, 1, ...] so that they broadcast over axis 1.
struct DecomposeBatchNorm : OpRewritePattern<BatchNormOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(BatchNormOp op, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto type = op.getInput().getType();
    int64_t channels = type.getDimSize(1);
    if (ShapedType::isDynamic(channels))
      return rewriter.notifyMatchFailure(op, "dynamic channel count");
    SmallVector<int64_t> shape(type.getRank() - 1, 1);
    shape[0] = channels;
    auto shapeAttr = rewriter.getDenseI64ArrayAttr(shape);
    auto r = [&](Value v) { return ReshapeOp::create(rewriter, loc, v, shapeAttr).getResult(); };
    Type et = type.getElementType();
    Value centered = SubtractOp::create(rewriter, loc, op.getInput(), r(op.getMean()));
    Value denom = SqrtOp::create(
        rewriter, loc,
        AddOp::create(rewriter, loc, r(op.getVariance()),
                      scalar(rewriter, loc, et, op.getEps().convertToDouble())));
    Value normed = DivideOp::create(rewriter, loc, centered, denom, /*reciprocal=*/true);
    Value scaled = MultiplyOp::create(rewriter, loc, normed, r(op.getWeight()));
    rewriter.replaceOpWithNewOp<AddOp>(op, scaled, r(op.getBias()));
    return success();
  }
};

/// cross_entropy on logits or probabilities becomes cross_entropy on
/// log-probabilities, which is what lowering implements.
struct DecomposeCrossEntropy : OpRewritePattern<CrossEntropyOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(CrossEntropyOp op, PatternRewriter &rewriter) const override {
    if (op.getFromLogProbs())
      return failure();
    Location loc = op.getLoc();
    int64_t classAxis = op.getInput().getType().getRank() == 1 ? 0 : 1;
    Value logp = op.getFromLogits()
                     ? LogSoftmaxOp::create(rewriter, loc, op.getInput(), classAxis).getResult()
                     : LogOp::create(rewriter, loc, op.getInput()).getResult();
    rewriter.replaceOpWithNewOp<CrossEntropyOp>(op, logp, op.getTarget(), false, true);
    return success();
  }
};

/// The default threshold of the robust functions: the smallest positive
/// normal number of the type, or for stable_reciprocal Mithril's
/// STABLE_RECIPROCAL_THRESHOLD (10 * sqrt of it in f64).
static double defaultThreshold(Type elementType, bool reciprocal) {
  unsigned width = elementType.getIntOrFloatBitWidth();
  if (width >= 64)
    return reciprocal ? 1.4916681462400413e-153 : 2.2250738585072014e-308;
  if (width >= 32)
    return reciprocal ? 1.0842021951e-19 : 1.1754944e-38;
  return reciprocal ? 0.007812809993849843 : 6.104e-05;
}

template <typename OpT>
static double thresholdOf(OpT op, Type elementType, bool reciprocal = false) {
  if (std::optional<APFloat> t = op.getThreshold())
    return t->convertToDouble();
  return defaultThreshold(elementType, reciprocal);
}

namespace {
/// Builds the elementwise expansions below with numpy broadcasting.
struct Expander {
  PatternRewriter &rewriter;
  Location loc;
  Type et;

  Value cst(double v) { return scalar(rewriter, loc, et, v); }
  Value abs(Value x) { return AbsOp::create(rewriter, loc, x); }
  Value add(Value x, Value y) { return AddOp::create(rewriter, loc, x, y); }
  Value sub(Value x, Value y) { return SubtractOp::create(rewriter, loc, x, y); }
  Value mul(Value x, Value y) { return MultiplyOp::create(rewriter, loc, x, y); }
  Value div(Value x, Value y) { return DivideOp::create(rewriter, loc, x, y); }
  Value less(Value x, Value y) { return LessOp::create(rewriter, loc, x, y); }
  Value where(Value c, Value x, Value y) { return WhereOp::create(rewriter, loc, c, x, y); }

  /// cond ? linear : plain(x), where plain reads 1 instead of x where cond
  /// holds: see the note below.
  template <typename PlainOp>
  Value robustSelect(Value cond, Value linear, Value x) {
    Value safe = where(cond, cst(1.0), x);
    return where(cond, linear, PlainOp::create(rewriter, loc, safe));
  }
};
} // namespace

// Each robust function is a select between its plain form and a linear piece.
// The plain form reads `where(cond, 1, x)` rather than `x`, so that the branch
// not taken never evaluates log(0) or 1/0: autodiff multiplies its gradient by
// zero, and 0 * inf would be NaN.

/// robust_sqrt(x) = |x| < t ? |x| / sqrt(t) : sqrt(|x|)
struct DecomposeRobustSqrt : OpRewritePattern<RobustSqrtOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(RobustSqrtOp op, PatternRewriter &rewriter) const override {
    Expander e{rewriter, op.getLoc(), elementTypeOf(op.getInput())};
    double t = thresholdOf(op, e.et);
    Value a = e.abs(op.getInput());
    Value cond = e.less(a, e.cst(t));
    Value linear = e.mul(a, e.cst(1.0 / std::sqrt(t)));
    rewriter.replaceOp(op, e.robustSelect<SqrtOp>(cond, linear, a));
    return success();
  }
};

/// robust_log(x) = |x| < t ? log(t) + |x| / t - 1 : log(|x|)
struct DecomposeRobustLog : OpRewritePattern<RobustLogOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(RobustLogOp op, PatternRewriter &rewriter) const override {
    Expander e{rewriter, op.getLoc(), elementTypeOf(op.getInput())};
    double t = thresholdOf(op, e.et);
    Value a = e.abs(op.getInput());
    Value cond = e.less(a, e.cst(t));
    Value linear = e.sub(e.add(e.cst(std::log(t)), e.div(a, e.cst(t))), e.cst(1.0));
    rewriter.replaceOp(op, e.robustSelect<LogOp>(cond, linear, a));
    return success();
  }
};

/// stable_reciprocal(x) = |x| < t ? 2 s / t - x / t^2 : 1 / x, where
/// s = sign(x) + 1 - sign(|x|) is the sign of x with 1 at 0.
struct DecomposeStableReciprocal : OpRewritePattern<StableReciprocalOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(StableReciprocalOp op, PatternRewriter &rewriter) const override {
    Expander e{rewriter, op.getLoc(), elementTypeOf(op.getInput())};
    double t = thresholdOf(op, e.et, /*reciprocal=*/true);
    Value x = op.getInput();
    Value a = e.abs(x);
    Value cond = e.less(a, e.cst(t));
    Value s = e.add(SignOp::create(rewriter, e.loc, x),
                    e.sub(e.cst(1.0), SignOp::create(rewriter, e.loc, a)));
    Value linear = e.add(e.mul(e.mul(s, e.cst(2.0)), e.cst(1.0 / t)),
                         e.div(NegateOp::create(rewriter, e.loc, x), e.cst(t * t)));
    rewriter.replaceOp(op, e.robustSelect<ReciprocalOp>(cond, linear, x));
    return success();
  }
};

/// robust_power(b, p) = cond ? |b| / t : |b| ** p, with
/// cond = |b| < t and p < 1 - log(t) / log(|b|).
struct DecomposeRobustPower : OpRewritePattern<RobustPowerOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(RobustPowerOp op, PatternRewriter &rewriter) const override {
    Expander e{rewriter, op.getLoc(), elementTypeOf(op.getLhs())};
    double t = thresholdOf(op, e.et);
    Value a = e.abs(op.getLhs());
    Value p = op.getRhs();
    Value limit = e.sub(e.cst(1.0), e.div(e.cst(std::log(t)), LogOp::create(rewriter, e.loc, a)));
    Value cond = LogicalAndOp::create(rewriter, e.loc, e.less(p, limit), e.less(a, e.cst(t)));
    Value linear = e.mul(e.cst(1.0 / t), a);
    // Both operands of the plain power are made safe: its exponent gradient
    // reads log(|b|).
    Value one = e.cst(1.0);
    Value plain = PowerOp::create(rewriter, e.loc, e.where(cond, one, a), e.where(cond, one, p));
    rewriter.replaceOp(op, e.where(cond, linear, plain));
    return success();
  }
};

/// polynomial_features: one product of column slices per monomial, joined
/// along the feature axis.
struct DecomposePolynomialFeatures : OpRewritePattern<PolynomialFeaturesOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(PolynomialFeaturesOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value input = op.getInput();
    auto type = cast<RankedTensorType>(input.getType());
    int64_t features = type.getDimSize(1);
    auto degree = static_cast<int64_t>(op.getDegree());
    // At degree 1 the monomials are the columns, and with no columns there
    // are none: either way the result is the input itself.
    if (degree == 1 || features == 0) {
      rewriter.replaceOp(op, input);
      return success();
    }
    if (ShapedType::isDynamic(features) || !polynomialFeatureCount(features, degree))
      return rewriter.notifyMatchFailure(op, "needs a static feature count");
    SmallVector<Value> columns;
    for (int64_t j = 0; j < features; ++j)
      columns.push_back(SliceOp::create(rewriter, loc, input, rewriter.getDenseI64ArrayAttr({1}),
                                        rewriter.getDenseI64ArrayAttr({j}),
                                        rewriter.getDenseI64ArrayAttr({j + 1}),
                                        rewriter.getDenseI64ArrayAttr({1})));
    // Combinations with replacement of {0: the constant 1, 1..d: the columns},
    // in lexicographic order; the first (all constants) is the bias, skipped.
    SmallVector<Value> monomials;
    SmallVector<int64_t> combo(degree, 0);
    while (true) {
      int64_t i = degree - 1;
      while (i >= 0 && combo[i] == features)
        --i;
      if (i < 0)
        break;
      int64_t next = combo[i] + 1;
      for (int64_t k = i; k < degree; ++k)
        combo[k] = next;
      Value product;
      for (int64_t c : combo) {
        if (c == 0)
          continue;
        Value col = columns[c - 1];
        product = product ? MultiplyOp::create(rewriter, loc, product, col).getResult() : col;
      }
      monomials.push_back(product);
    }
    rewriter.replaceOpWithNewOp<ConcatOp>(op, monomials, /*axis=*/1);
    return success();
  }
};

struct DecomposePass : public mithril::impl::MithrilDecomposeBase<DecomposePass> {
  void runOnOperation() override {
    // One product per monomial: their number must be known when compiling.
    WalkResult unsupported = getOperation()->walk([](PolynomialFeaturesOp op) {
      auto type = cast<RankedTensorType>(op.getInput().getType());
      if (op.getDegree() > 1 && type.isDynamicDim(1)) {
        op.emitOpError("needs a static number of feature columns at degree ")
            << op.getDegree() << " (the input is " << formatShape(type.getShape())
            << "): give the input's column count in its shape";
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    if (unsupported.wasInterrupted())
      return signalPassFailure();
    RewritePatternSet patterns(&getContext());
    populateMithrilDecomposePatterns(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace

void mithril::populateMithrilDecomposePatterns(RewritePatternSet &patterns, bool layerNorm) {
  patterns.add<DecomposeCrossEntropy, DecomposeSoftmax, DecomposeLogSoftmax, DecomposeBatchNorm,
               DecomposeRobustSqrt, DecomposeRobustLog, DecomposeStableReciprocal,
               DecomposeRobustPower, DecomposePolynomialFeatures>(patterns.getContext());
  if (layerNorm)
    patterns.add<DecomposeLayerNorm>(patterns.getContext());
}
