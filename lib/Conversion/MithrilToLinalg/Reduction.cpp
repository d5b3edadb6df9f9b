//===- Reduction.cpp - reductions to linalg -------------------------------===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//

#include "Utils.h"

#include "mithril/Dialect/Mithril/IR/MithrilOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Utils/StructuredOpsUtils.h"
#include "mlir/IR/AffineMap.h"

using namespace mlir;
using namespace mithril;
using namespace mithril::linalg_lowering;

namespace {

static FailureOr<Reducer> getReducer(Operation *op, Type et, Builder &b) {
  bool f = isFloat(et);
  if (isa<SumOp, MeanOp>(op))
    return Reducer{b.getZeroAttr(et),
                   [f](OpBuilder &nb, Location l, Value x, Value acc) -> Value {
                     return f ? arith::AddFOp::create(nb, l, x, acc).getResult()
                              : arith::AddIOp::create(nb, l, x, acc).getResult();
                   },
                   /*additive=*/true};
  if (isa<ProdOp>(op))
    return Reducer{f ? TypedAttr(b.getFloatAttr(et, 1.0)) : TypedAttr(b.getIntegerAttr(et, 1)),
                   [f](OpBuilder &nb, Location l, Value x, Value acc) -> Value {
                     return f ? arith::MulFOp::create(nb, l, x, acc).getResult()
                              : arith::MulIOp::create(nb, l, x, acc).getResult();
                   }};
  if (isa<MaxOp, MinOp>(op)) {
    bool isMax = isa<MaxOp>(op);
    if (f) {
      auto ft = cast<FloatType>(et);
      APFloat inf = APFloat::getInf(ft.getFloatSemantics(), /*Negative=*/isMax);
      return Reducer{b.getFloatAttr(et, inf),
                     [isMax](OpBuilder &nb, Location l, Value x, Value acc) -> Value {
                       return isMax ? arith::MaximumFOp::create(nb, l, x, acc).getResult()
                                    : arith::MinimumFOp::create(nb, l, x, acc).getResult();
                     }};
    }
    unsigned w = et.getIntOrFloatBitWidth();
    APInt init = isMax ? APInt::getSignedMinValue(w) : APInt::getSignedMaxValue(w);
    return Reducer{b.getIntegerAttr(et, init),
                   [isMax](OpBuilder &nb, Location l, Value x, Value acc) -> Value {
                     return isMax ? arith::MaxSIOp::create(nb, l, x, acc).getResult()
                                  : arith::MinSIOp::create(nb, l, x, acc).getResult();
                   }};
  }
  return failure();
}

/// The number of elements over `axes` of `input`, as a scalar of type `et`.
static Value countOver(OpBuilder &b, Location loc, Value input, ArrayRef<int64_t> axes, Type et) {
  Value n = arith::ConstantIndexOp::create(b, loc, 1);
  for (int64_t a : axes)
    n = arith::MulIOp::create(b, loc, n,
                              getValueOrCreateConstantIndexOp(b, loc, dimOf(b, loc, input, a)));
  Value i64 = arith::IndexCastOp::create(b, loc, b.getI64Type(), n);
  return arith::SIToFPOp::create(b, loc, et, i64);
}

template <typename OpT> struct ReducePattern : OpRewritePattern<OpT> {
  using OpRewritePattern<OpT>::OpRewritePattern;
  LogicalResult matchAndRewrite(OpT op, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    RankedTensorType in = op.getInput().getType();
    SmallVector<int64_t> axes = reductionAxes(op.getAxes(), in.getRank());
    FailureOr<Reducer> reducer = getReducer(op, in.getElementType(), rewriter);
    if (failed(reducer))
      return failure();
    Value r = buildReduction(rewriter, loc, op.getInput(), axes, *reducer);
    if (isa<MeanOp>(op.getOperation())) {
      if (!isFloat(in.getElementType()))
        return rewriter.notifyMatchFailure(op, "mean of integers");
      r = divideByScalar(rewriter, loc, r,
                         countOver(rewriter, loc, op.getInput(), axes, in.getElementType()));
    }
    rewriter.replaceOp(op, keepDims(rewriter, loc, r, op.getType(), axes));
    return success();
  }
};

/// variance = sum((x - mean)^2) / (N - correction)
struct VariancePattern : OpRewritePattern<VarianceOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(VarianceOp op, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    RankedTensorType in = op.getInput().getType();
    Type et = in.getElementType();
    SmallVector<int64_t> axes = reductionAxes(op.getAxes(), in.getRank());
    FailureOr<Reducer> sum = getReducer(op, et, rewriter);
    Reducer add{rewriter.getZeroAttr(et),
                [](OpBuilder &nb, Location l, Value x, Value acc) {
                  return arith::AddFOp::create(nb, l, x, acc).getResult();
                },
                /*additive=*/true};
    (void)sum;
    Value count = countOver(rewriter, loc, op.getInput(), axes, et);
    Value total = buildReduction(rewriter, loc, op.getInput(), axes, add);
    Value mean = divideByScalar(rewriter, loc, total, count);
    // Keep the reduced axes so the mean broadcasts against the input.
    SmallVector<int64_t> keptShape(in.getShape());
    for (int64_t a : axes)
      keptShape[a] = 1;
    Value meanKept = keepDims(rewriter, loc, mean, RankedTensorType::get(keptShape, et), axes);
    Value sq = buildElementwise(rewriter, loc, in, ValueRange{op.getInput(), meanKept},
                                [](OpBuilder &nb, Location l, ValueRange a, Type) {
                                  Value d = arith::SubFOp::create(nb, l, a[0], a[1]);
                                  return arith::MulFOp::create(nb, l, d, d).getResult();
                                });
    Value ss = buildReduction(rewriter, loc, sq, axes, add);
    Value denom = arith::SubFOp::create(
        rewriter, loc, count, floatConst(rewriter, loc, et, op.getCorrection().convertToDouble()));
    Value var = divideByScalar(rewriter, loc, ss, denom);
    rewriter.replaceOp(op, keepDims(rewriter, loc, var, op.getType(), axes));
    return success();
  }
};

/// argmax / argmin along one axis: a reduction carrying (value, index).
template <typename OpT> struct ArgReducePattern : OpRewritePattern<OpT> {
  using OpRewritePattern<OpT>::OpRewritePattern;
  LogicalResult matchAndRewrite(OpT op, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    bool isMax = isa<ArgMaxOp>(op.getOperation());
    Value input = op.getInput();
    RankedTensorType in = tensorType(input);
    Type et = in.getElementType();
    int64_t axis;
    // The axes keepdim puts back: the one reduced, or all of them.
    SmallVector<int64_t> keptAxes;
    if (auto a = op.getAxis()) {
      axis = normalizeAxis(*a, in.getRank());
      keptAxes.push_back(axis);
    } else {
      keptAxes = llvm::to_vector(llvm::seq<int64_t>(0, in.getRank()));
      // Over the flattened tensor.
      int64_t n = 1;
      for (int64_t d : in.getShape())
        n = (ShapedType::isDynamic(d) || ShapedType::isDynamic(n)) ? kDyn : n * d;
      auto flatType = RankedTensorType::get({n}, et);
      SmallVector<OpFoldResult> sizes;
      if (ShapedType::isDynamic(n)) {
        Value total = arith::ConstantIndexOp::create(rewriter, loc, 1);
        for (int64_t i = 0; i < in.getRank(); ++i)
          total = arith::MulIOp::create(
              rewriter, loc, total,
              getValueOrCreateConstantIndexOp(rewriter, loc, dimOf(rewriter, loc, input, i)));
        sizes.push_back(total);
      } else {
        sizes.push_back(rewriter.getIndexAttr(n));
      }
      input = buildReshape(rewriter, loc, input, flatType, sizes);
      in = flatType;
      axis = 0;
    }
    SmallVector<int64_t> shape;
    SmallVector<OpFoldResult> sizes;
    SmallVector<AffineExpr> outExprs;
    SmallVector<utils::IteratorType> iterators;
    for (int64_t i = 0; i < in.getRank(); ++i) {
      if (i == axis) {
        iterators.push_back(utils::IteratorType::reduction);
        continue;
      }
      iterators.push_back(utils::IteratorType::parallel);
      shape.push_back(in.getDimSize(i));
      sizes.push_back(dimOf(rewriter, loc, input, i));
      outExprs.push_back(getAffineDimExpr(i, ctx));
    }
    Type i64 = rewriter.getI64Type();
    auto valType = RankedTensorType::get(shape, et);
    auto idxType = RankedTensorType::get(shape, i64);
    // The identity of the comparison: -inf / +inf, or the integer type's
    // extreme (bool compares unsigned: true is 1, not -1).
    bool boolean = et.isInteger(1);
    Value initVal;
    if (auto ft = dyn_cast<FloatType>(et)) {
      initVal = arith::ConstantOp::create(
          rewriter, loc, rewriter.getFloatAttr(et, APFloat::getInf(ft.getFloatSemantics(), isMax)));
    } else {
      unsigned width = et.getIntOrFloatBitWidth();
      APInt extreme =
          boolean ? (isMax ? APInt::getMinValue(width) : APInt::getMaxValue(width))
                  : (isMax ? APInt::getSignedMinValue(width) : APInt::getSignedMaxValue(width));
      initVal = arith::ConstantOp::create(rewriter, loc, rewriter.getIntegerAttr(et, extreme));
    }
    Value vals =
        linalg::FillOp::create(rewriter, loc, initVal, emptyTensor(rewriter, loc, valType, sizes))
            .getResult(0);
    Value idxs =
        linalg::FillOp::create(
            rewriter, loc,
            arith::ConstantOp::create(rewriter, loc, rewriter.getI64IntegerAttr(0)).getResult(),
            emptyTensor(rewriter, loc, idxType, sizes))
            .getResult(0);
    AffineMap outMap = AffineMap::get(in.getRank(), 0, outExprs, ctx);
    SmallVector<AffineMap> maps = {rewriter.getMultiDimIdentityMap(in.getRank()), outMap, outMap};
    auto generic = linalg::GenericOp::create(
        rewriter, loc, TypeRange{valType, idxType}, input, ValueRange{vals, idxs}, maps, iterators,
        [&](OpBuilder &b, Location l, ValueRange args) {
          Value idx = arith::IndexCastOp::create(b, l, i64, linalg::IndexOp::create(b, l, axis));
          // Strict comparison keeps the first extreme element, as numpy does.
          Value better;
          if (isFloat(et))
            better = arith::CmpFOp::create(
                b, l, isMax ? arith::CmpFPredicate::OGT : arith::CmpFPredicate::OLT, args[0],
                args[1]);
          else if (boolean)
            better = arith::CmpIOp::create(
                b, l, isMax ? arith::CmpIPredicate::ugt : arith::CmpIPredicate::ult, args[0],
                args[1]);
          else
            better = arith::CmpIOp::create(
                b, l, isMax ? arith::CmpIPredicate::sgt : arith::CmpIPredicate::slt, args[0],
                args[1]);
          linalg::YieldOp::create(
              b, l,
              ValueRange{arith::SelectOp::create(b, l, better, args[0], args[1]),
                         arith::SelectOp::create(b, l, better, idx, args[2])});
        });
    rewriter.replaceOp(op, keepDims(rewriter, loc, generic.getResult(1), op.getType(), keptAxes));
    return success();
  }
};

} // namespace

void linalg_lowering::populateReductionPatterns(RewritePatternSet &patterns) {
  MLIRContext *ctx = patterns.getContext();
  patterns.add<ReducePattern<SumOp>, ReducePattern<MeanOp>, ReducePattern<MaxOp>,
               ReducePattern<MinOp>, ReducePattern<ProdOp>, VariancePattern,
               ArgReducePattern<ArgMaxOp>, ArgReducePattern<ArgMinOp>>(ctx);
}
