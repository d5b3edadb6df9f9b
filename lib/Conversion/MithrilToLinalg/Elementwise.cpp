//===- Elementwise.cpp - elementwise ops to linalg ------------------------===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//

#include "Utils.h"

#include "mithril/Dialect/Mithril/IR/MithrilOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>

using namespace mlir;
using namespace mithril;
using namespace mithril::linalg_lowering;

//===----------------------------------------------------------------------===//
// Scalar bodies of the elementwise ops
//===----------------------------------------------------------------------===//

static Value softplusScalar(OpBuilder &b, Location loc, Value x) {
  // max(x, 0) + log1p(exp(-|x|)): no overflow for large |x|.
  Type t = x.getType();
  Value relu = arith::MaximumFOp::create(b, loc, x, floatConst(b, loc, t, 0.0));
  Value negAbs = arith::NegFOp::create(b, loc, math::AbsFOp::create(b, loc, x));
  Value l = math::Log1pOp::create(b, loc, math::ExpOp::create(b, loc, negAbs));
  return arith::AddFOp::create(b, loc, relu, l);
}

/// Computes the scalar result of elementwise op `op` on `args`, or null if
/// `op` is not an elementwise op with a scalar body.
static Value scalarBody(Operation *op, OpBuilder &b, Location loc, ValueRange args,
                        Type resultType) {
  Type t = args.empty() ? resultType : args[0].getType();
  bool f = isFloat(t);
  auto c = [&](double v) { return floatConst(b, loc, t, v); };
  Value x = args.empty() ? Value() : args[0];
  Value y = args.size() > 1 ? args[1] : Value();
  return TypeSwitch<Operation *, Value>(op)
      .Case([&](AddOp) -> Value {
        return f ? arith::AddFOp::create(b, loc, x, y).getResult()
                 : arith::AddIOp::create(b, loc, x, y).getResult();
      })
      .Case([&](SubtractOp) -> Value {
        return f ? arith::SubFOp::create(b, loc, x, y).getResult()
                 : arith::SubIOp::create(b, loc, x, y).getResult();
      })
      .Case([&](MultiplyOp) -> Value {
        return f ? arith::MulFOp::create(b, loc, x, y).getResult()
                 : arith::MulIOp::create(b, loc, x, y).getResult();
      })
      .Case([&](DivideOp divide) -> Value {
        if (!f)
          return arith::DivSIOp::create(b, loc, x, y).getResult();
        // arcp: LLVM then inverts a divisor repeated across a row once.
        return arith::DivFOp::create(b, loc, x, y,
                                     divide.getReciprocal() ? arith::FastMathFlags::arcp
                                                            : arith::FastMathFlags::none)
            .getResult();
      })
      .Case([&](FloorDivideOp) -> Value {
        if (!f)
          return arith::FloorDivSIOp::create(b, loc, x, y);
        return math::FloorOp::create(b, loc, arith::DivFOp::create(b, loc, x, y));
      })
      .Case([&](PowerOp) -> Value {
        if (!f)
          return math::IPowIOp::create(b, loc, x, y);
        return math::PowFOp::create(b, loc, x, y);
      })
      .Case([&](MinimumOp) -> Value {
        return f ? arith::MinimumFOp::create(b, loc, x, y).getResult()
                 : arith::MinSIOp::create(b, loc, x, y).getResult();
      })
      .Case([&](MaximumOp) -> Value {
        return f ? arith::MaximumFOp::create(b, loc, x, y).getResult()
                 : arith::MaxSIOp::create(b, loc, x, y).getResult();
      })
      .Case<EqualOp, NotEqualOp, LessOp, LessEqualOp, GreaterOp, GreaterEqualOp>(
          [&](Operation *cmp) -> Value {
            using FP = arith::CmpFPredicate;
            using IP = arith::CmpIPredicate;
            std::pair<FP, IP> pred =
                TypeSwitch<Operation *, std::pair<FP, IP>>(cmp)
                    .Case([](EqualOp) { return std::make_pair(FP::OEQ, IP::eq); })
                    .Case([](NotEqualOp) { return std::make_pair(FP::UNE, IP::ne); })
                    .Case([](LessOp) { return std::make_pair(FP::OLT, IP::slt); })
                    .Case([](LessEqualOp) { return std::make_pair(FP::OLE, IP::sle); })
                    .Case([](GreaterOp) { return std::make_pair(FP::OGT, IP::sgt); })
                    .Default([](Operation *) { return std::make_pair(FP::OGE, IP::sge); });
            if (f)
              return arith::CmpFOp::create(b, loc, pred.first, x, y);
            return arith::CmpIOp::create(b, loc, pred.second, x, y);
          })
      .Case([&](ShiftLeftOp) -> Value { return arith::ShLIOp::create(b, loc, x, y); })
      .Case([&](ShiftRightOp) -> Value { return arith::ShRSIOp::create(b, loc, x, y); })
      .Case([&](LogicalAndOp) -> Value { return arith::AndIOp::create(b, loc, x, y); })
      .Case([&](LogicalOrOp) -> Value { return arith::OrIOp::create(b, loc, x, y); })
      .Case([&](LogicalXorOp) -> Value { return arith::XOrIOp::create(b, loc, x, y); })
      .Case([&](LogicalNotOp) -> Value {
        Value one = arith::ConstantOp::create(b, loc, b.getIntegerAttr(t, 1));
        return arith::XOrIOp::create(b, loc, x, one);
      })
      .Case([&](NegateOp) -> Value {
        if (f)
          return arith::NegFOp::create(b, loc, x);
        return arith::SubIOp::create(b, loc, zeroOf(b, loc, t), x);
      })
      .Case([&](AbsOp) -> Value {
        if (f)
          return math::AbsFOp::create(b, loc, x);
        // max(x, -x), not math.absi: MathToLLVM takes no multi-dimensional
        // vector of it, and this vectorizes as any max does.
        Value negated = arith::SubIOp::create(b, loc, zeroOf(b, loc, t), x);
        return arith::MaxSIOp::create(b, loc, x, negated);
      })
      .Case([&](SignOp) -> Value {
        if (!f) {
          Value zero = zeroOf(b, loc, t);
          Value one = arith::ConstantOp::create(b, loc, b.getIntegerAttr(t, 1));
          Value pos = arith::ExtUIOp::create(
              b, loc, t, arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sgt, x, zero));
          Value neg = arith::ExtUIOp::create(
              b, loc, t, arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, x, zero));
          (void)one;
          return arith::SubIOp::create(b, loc, pos, neg);
        }
        Value zero = c(0.0);
        Value pos = arith::SelectOp::create(
            b, loc, arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT, x, zero), c(1.0),
            zero);
        return arith::SelectOp::create(
            b, loc, arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLT, x, zero), c(-1.0),
            pos);
      })
      .Case([&](SquareOp) -> Value {
        return f ? arith::MulFOp::create(b, loc, x, x).getResult()
                 : arith::MulIOp::create(b, loc, x, x).getResult();
      })
      .Case([&](StopGradientOp) -> Value { return x; })
      .Case([&](ExpOp) -> Value { return math::ExpOp::create(b, loc, x); })
      .Case([&](LogOp) -> Value { return math::LogOp::create(b, loc, x); })
      .Case([&](SqrtOp) -> Value { return math::SqrtOp::create(b, loc, x); })
      .Case([&](SinOp) -> Value { return math::SinOp::create(b, loc, x); })
      .Case([&](CosOp) -> Value { return math::CosOp::create(b, loc, x); })
      .Case([&](ReciprocalOp) -> Value { return arith::DivFOp::create(b, loc, c(1.0), x); })
      .Case([&](ErfOp) -> Value { return math::ErfOp::create(b, loc, x); })
      .Case([&](TanhOp) -> Value { return math::TanhOp::create(b, loc, x); })
      .Case([&](ReluOp) -> Value { return arith::MaximumFOp::create(b, loc, x, c(0.0)); })
      .Case([&](SigmoidOp) -> Value {
        Value e = math::ExpOp::create(b, loc, arith::NegFOp::create(b, loc, x));
        return arith::DivFOp::create(b, loc, c(1.0), arith::AddFOp::create(b, loc, c(1.0), e));
      })
      .Case([&](SoftplusOp) -> Value { return softplusScalar(b, loc, x); })
      .Case([&](LeakyReluOp lr) -> Value {
        Value scaled = arith::MulFOp::create(b, loc, x, c(lr.getSlope().convertToDouble()));
        Value pos = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT, x, c(0.0));
        return arith::SelectOp::create(b, loc, pos, x, scaled);
      })
      .Case([&](GeluOp g) -> Value {
        Value half = arith::MulFOp::create(b, loc, x, c(0.5));
        Value inner;
        if (g.getApproximate()) {
          Value x3 = arith::MulFOp::create(b, loc, x, arith::MulFOp::create(b, loc, x, x));
          Value poly =
              arith::AddFOp::create(b, loc, x, arith::MulFOp::create(b, loc, x3, c(0.044715)));
          inner = math::TanhOp::create(
              b, loc, arith::MulFOp::create(b, loc, poly, c(std::sqrt(2.0 / M_PI))));
        } else {
          inner = math::ErfOp::create(b, loc, arith::MulFOp::create(b, loc, x, c(M_SQRT1_2)));
        }
        return arith::MulFOp::create(b, loc, half, arith::AddFOp::create(b, loc, c(1.0), inner));
      })
      .Case([&](WhereOp) -> Value { return arith::SelectOp::create(b, loc, x, y, args[2]); })
      .Case([&](SquaredErrorOp) -> Value {
        Value d = arith::SubFOp::create(b, loc, x, y);
        return arith::MulFOp::create(b, loc, d, d);
      })
      .Case([&](AbsoluteErrorOp) -> Value {
        return math::AbsFOp::create(b, loc, arith::SubFOp::create(b, loc, x, y));
      })
      .Case<HingeOp, QuadHingeOp>([&](Operation *h) -> Value {
        Value m = arith::SubFOp::create(b, loc, c(1.0), arith::MulFOp::create(b, loc, x, y));
        Value r = arith::MaximumFOp::create(b, loc, m, c(0.0));
        if (isa<QuadHingeOp>(h))
          return arith::MulFOp::create(b, loc, r, r);
        return r;
      })
      .Case([&](KLDivergenceOp) -> Value {
        // target * (log(target) - log(input)), 0 where target == 0.
        Value diff = arith::SubFOp::create(b, loc, math::LogOp::create(b, loc, y),
                                           math::LogOp::create(b, loc, x));
        Value r = arith::MulFOp::create(b, loc, y, diff);
        Value isZero = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, y, c(0.0));
        return arith::SelectOp::create(b, loc, isZero, c(0.0), r);
      })
      .Case([&](QuantileOp q) -> Value {
        double qv = q.getQuantile().convertToDouble();
        Value d = arith::SubFOp::create(b, loc, y, x);
        return arith::MaximumFOp::create(b, loc, arith::MulFOp::create(b, loc, d, c(qv)),
                                         arith::MulFOp::create(b, loc, d, c(qv - 1.0)));
      })
      .Case([&](BinaryCrossEntropyOp bce) -> Value {
        if (bce.getFromLogits()) {
          // max(x, 0) - x * t + log1p(exp(-|x|))
          Value relu = arith::MaximumFOp::create(b, loc, x, c(0.0));
          Value negAbs = arith::NegFOp::create(b, loc, math::AbsFOp::create(b, loc, x));
          Value l = math::Log1pOp::create(b, loc, math::ExpOp::create(b, loc, negAbs));
          return arith::AddFOp::create(
              b, loc, arith::SubFOp::create(b, loc, relu, arith::MulFOp::create(b, loc, x, y)), l);
        }
        Value lp = math::LogOp::create(b, loc, x);
        Value l1p = math::LogOp::create(b, loc, arith::SubFOp::create(b, loc, c(1.0), x));
        Value s = arith::AddFOp::create(
            b, loc, arith::MulFOp::create(b, loc, y, lp),
            arith::MulFOp::create(b, loc, arith::SubFOp::create(b, loc, c(1.0), y), l1p));
        return arith::NegFOp::create(b, loc, s);
      })
      .Case([&](CastOp) -> Value {
        Type to = resultType;
        if (t == to)
          return x;
        if (isFloat(t) && isFloat(to)) {
          // f16 <-> bf16: same width, neither holds the other; through f32.
          if (t.getIntOrFloatBitWidth() == to.getIntOrFloatBitWidth())
            x = arith::ExtFOp::create(b, loc, b.getF32Type(), x);
          return x.getType().getIntOrFloatBitWidth() < to.getIntOrFloatBitWidth()
                     ? arith::ExtFOp::create(b, loc, to, x).getResult()
                     : arith::TruncFOp::create(b, loc, to, x).getResult();
        }
        if (isFloat(t)) {
          if (to.isInteger(1))
            return arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNE, x, c(0.0));
          return arith::FPToSIOp::create(b, loc, to, x);
        }
        if (isFloat(to))
          return t.isInteger(1) ? arith::UIToFPOp::create(b, loc, to, x).getResult()
                                : arith::SIToFPOp::create(b, loc, to, x).getResult();
        if (to.isInteger(1))
          return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, x, zeroOf(b, loc, t));
        unsigned from = t.getIntOrFloatBitWidth(), width = to.getIntOrFloatBitWidth();
        if (from < width)
          return t.isInteger(1) ? arith::ExtUIOp::create(b, loc, to, x).getResult()
                                : arith::ExtSIOp::create(b, loc, to, x).getResult();
        return arith::TruncIOp::create(b, loc, to, x);
      })
      .Default([](Operation *) -> Value { return Value(); });
}

//===----------------------------------------------------------------------===//
// Patterns
//===----------------------------------------------------------------------===//

namespace {

/// Every elementwise op: one linalg.generic with a scalar body.
struct ElementwisePattern : public RewritePattern {
  ElementwisePattern(MLIRContext *ctx) : RewritePattern(MatchAnyOpTypeTag(), /*benefit=*/1, ctx) {}

  LogicalResult matchAndRewrite(Operation *op, PatternRewriter &rewriter) const override {
    if (!op->hasTrait<traits::Elementwise>() || op->getNumResults() != 1)
      return failure();
    auto resultType = cast<RankedTensorType>(op->getResult(0).getType());
    Value result = buildElementwise(rewriter, op->getLoc(), resultType, op->getOperands(),
                                    [&](OpBuilder &b, Location loc, ValueRange args, Type et) {
                                      return scalarBody(op, b, loc, args, et);
                                    });
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// broadcast_to: a copy with broadcasting maps.
struct BroadcastToPattern : OpRewritePattern<BroadcastToOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(BroadcastToOp op, PatternRewriter &rewriter) const override {
    Value r =
        buildElementwise(rewriter, op.getLoc(), op.getType(), op.getInput(),
                         [](OpBuilder &, Location, ValueRange args, Type) { return args[0]; });
    rewriter.replaceOp(op, r);
    return success();
  }
};

struct ConstantPattern : OpRewritePattern<ConstantOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ConstantOp op, PatternRewriter &rewriter) const override {
    auto value = dyn_cast<TypedAttr>(op.getValue());
    if (!value)
      return rewriter.notifyMatchFailure(op, "constant is not a typed attribute");
    rewriter.replaceOpWithNewOp<arith::ConstantOp>(op, value);
    return success();
  }
};

} // namespace

void linalg_lowering::populateElementwisePatterns(RewritePatternSet &patterns) {
  MLIRContext *ctx = patterns.getContext();
  patterns.add<ElementwisePattern, BroadcastToPattern, ConstantPattern>(ctx);
}
