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
  auto type = RankedTensorType::get({}, elementType);
  return ConstantOp::create(rewriter, loc,
                            DenseElementsAttr::get(type, rewriter.getFloatAttr(elementType, v)));
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
    rewriter.replaceOpWithNewOp<DivideOp>(op, e, sum);
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

/// layer_norm(x) = (x - mean(x)) / sqrt(var(x) + eps) over the last axes.
struct DecomposeLayerNorm : OpRewritePattern<LayerNormOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(LayerNormOp op, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    int64_t rank = op.getInput().getType().getRank();
    SmallVector<int64_t> axes;
    for (int64_t i = rank - static_cast<int64_t>(op.getNumAxes()); i < rank; ++i)
      axes.push_back(i);
    auto axesAttr = rewriter.getDenseI64ArrayAttr(axes);
    Value mean = MeanOp::create(rewriter, loc, op.getInput(), axesAttr, rewriter.getBoolAttr(true));
    Value centered = SubtractOp::create(rewriter, loc, op.getInput(), mean);
    Value var = MeanOp::create(rewriter, loc, SquareOp::create(rewriter, loc, centered), axesAttr,
                               rewriter.getBoolAttr(true));
    Type et = elementTypeOf(op.getInput());
    Value denom = SqrtOp::create(
        rewriter, loc,
        AddOp::create(rewriter, loc, var, scalar(rewriter, loc, et, op.getEps().convertToDouble())));
    rewriter.replaceOpWithNewOp<DivideOp>(op, centered, denom);
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
    Value normed = DivideOp::create(rewriter, loc, centered, denom);
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

struct DecomposePass : public mithril::impl::MithrilDecomposeBase<DecomposePass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateMithrilDecomposePatterns(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace

void mithril::populateMithrilDecomposePatterns(RewritePatternSet &patterns) {
  patterns.add<DecomposeCrossEntropy, DecomposeSoftmax, DecomposeLogSoftmax, DecomposeLayerNorm,
               DecomposeBatchNorm>(patterns.getContext());
}
