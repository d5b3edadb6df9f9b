//===- MithrilToLinalg.cpp - mithril to linalg on tensors -----------------===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//

#include "mithril/Conversion/MithrilToLinalg/MithrilToLinalg.h"
#include "mithril/Dialect/Mithril/IR/MithrilOps.h"

#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Utils/StructuredOpsUtils.h"
#include "mlir/IR/AffineMap.h"
#include "mlir/Transforms/DialectConversion.h"
#include "llvm/ADT/TypeSwitch.h"
#include <cmath>

namespace mithril {
#define GEN_PASS_DEF_CONVERTMITHRILTOLINALG
#define GEN_PASS_DEF_MITHRILUNIQUERESULTS
#include "mithril/Conversion/Passes.h.inc"
} // namespace mithril

using namespace mlir;
using namespace mithril;

void mithril::yieldMultiplyAdd(OpBuilder &b, Location loc, ValueRange args) {
  linalg::YieldOp::create(
      b, loc,
      arith::AddFOp::create(b, loc, args[2], arith::MulFOp::create(b, loc, args[0], args[1]))
          .getResult());
}

static constexpr int64_t kDyn = ShapedType::kDynamic;

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

static RankedTensorType tensorType(Value v) { return cast<RankedTensorType>(v.getType()); }

/// The size of dimension `d` of `v` as an index value or attribute.
static OpFoldResult dimOf(OpBuilder &b, Location loc, Value v, int64_t d) {
  RankedTensorType t = tensorType(v);
  if (!t.isDynamicDim(d))
    return b.getIndexAttr(t.getDimSize(d));
  return tensor::DimOp::create(b, loc, v, d).getResult();
}

/// A tensor.empty of `type`, taking dynamic sizes from `sizes`.
static Value emptyTensor(OpBuilder &b, Location loc, RankedTensorType type,
                         ArrayRef<OpFoldResult> sizes) {
  SmallVector<Value> dynamic;
  for (int64_t i = 0; i < type.getRank(); ++i)
    if (type.isDynamicDim(i))
      dynamic.push_back(getValueOrCreateConstantIndexOp(b, loc, sizes[i]));
  return tensor::EmptyOp::create(b, loc, type.getShape(), type.getElementType(), dynamic);
}

/// Whether `v` has a static size 0: no elements to read.
static bool hasNoElements(Value v) {
  return llvm::is_contained(cast<RankedTensorType>(v.getType()).getShape(), 0);
}

/// A static-shaped tensor of `type` filled with zeros.
static Value zeroFilled(OpBuilder &b, Location loc, RankedTensorType type) {
  Value zero = arith::ConstantOp::create(b, loc, b.getZeroAttr(type.getElementType()));
  Value empty = tensor::EmptyOp::create(b, loc, type.getShape(), type.getElementType());
  return linalg::FillOp::create(b, loc, zero, empty).getResult(0);
}

/// A tensor of `type` (its dynamic sizes those of `like`), whose every element `element`
/// computes from its indices (linalg.index) alone.
static Value generateElements(OpBuilder &b, Location loc, RankedTensorType type, Value like,
                              function_ref<Value(OpBuilder &, Location)> element) {
  int64_t rank = type.getRank();
  SmallVector<OpFoldResult> sizes;
  for (int64_t i = 0; i < rank; ++i)
    sizes.push_back(type.isDynamicDim(i) ? dimOf(b, loc, like, i)
                                         : OpFoldResult(b.getIndexAttr(type.getDimSize(i))));
  SmallVector<AffineMap> maps = {b.getMultiDimIdentityMap(rank)};
  SmallVector<utils::IteratorType> iterators(rank, utils::IteratorType::parallel);
  return linalg::GenericOp::create(b, loc, TypeRange{type}, ValueRange{},
                                   emptyTensor(b, loc, type, sizes), maps, iterators,
                                   [&](OpBuilder &nb, Location l, ValueRange) {
                                     linalg::YieldOp::create(nb, l, element(nb, l));
                                   })
      .getResult(0);
}

/// Index attributes for static offsets, sizes or strides.
static SmallVector<OpFoldResult> indexAttrs(OpBuilder &b, ArrayRef<int64_t> values) {
  return llvm::map_to_vector(values,
                             [&](int64_t v) -> OpFoldResult { return b.getIndexAttr(v); });
}

/// lhs + rhs, elementwise, for two static tensors of one float type.
static Value addTensors(OpBuilder &b, Location loc, Value lhs, Value rhs) {
  RankedTensorType type = tensorType(lhs);
  AffineMap identity = b.getMultiDimIdentityMap(type.getRank());
  Value init = tensor::EmptyOp::create(b, loc, type.getShape(), type.getElementType());
  SmallVector<utils::IteratorType> iterators(type.getRank(), utils::IteratorType::parallel);
  return linalg::GenericOp::create(
             b, loc, TypeRange{type}, ValueRange{lhs, rhs}, init,
             SmallVector<AffineMap>(3, identity), iterators,
             [](OpBuilder &nb, Location nl, ValueRange args) {
               linalg::YieldOp::create(
                   nb, nl, arith::AddFOp::create(nb, nl, args[0], args[1]).getResult());
             })
      .getResult(0);
}

/// Sizes of the broadcast result of `operands` with result type `type`: a
/// dynamic result dimension takes its size from an operand that has that
/// dimension dynamic (or static and not 1).
static SmallVector<OpFoldResult> broadcastSizes(OpBuilder &b, Location loc,
                                                RankedTensorType type, ValueRange operands) {
  SmallVector<OpFoldResult> sizes;
  int64_t rank = type.getRank();
  for (int64_t i = 0; i < rank; ++i) {
    if (!type.isDynamicDim(i)) {
      sizes.push_back(b.getIndexAttr(type.getDimSize(i)));
      continue;
    }
    OpFoldResult size;
    for (Value v : operands) {
      RankedTensorType t = tensorType(v);
      int64_t j = i - (rank - t.getRank());
      if (j >= 0 && t.getDimSize(j) != 1) {
        size = dimOf(b, loc, v, j);
        break;
      }
    }
    sizes.push_back(size ? size : b.getIndexAttr(1));
  }
  return sizes;
}

/// The indexing map that reads `operand` in a loop nest over `result`,
/// broadcasting missing leading dimensions and static size-1 dimensions.
static AffineMap broadcastMap(MLIRContext *ctx, RankedTensorType operand,
                              RankedTensorType result) {
  int64_t rank = result.getRank(), offset = rank - operand.getRank();
  SmallVector<AffineExpr> exprs;
  for (int64_t j = 0; j < operand.getRank(); ++j) {
    bool stretched = operand.getDimSize(j) == 1 && result.getDimSize(j + offset) != 1;
    exprs.push_back(stretched ? getAffineConstantExpr(0, ctx)
                              : getAffineDimExpr(j + offset, ctx));
  }
  return AffineMap::get(rank, 0, exprs, ctx);
}

using ScalarFn = function_ref<Value(OpBuilder &, Location, ValueRange, Type)>;

/// An elementwise linalg.generic computing `fn` over broadcast operands.
static Value buildElementwise(OpBuilder &b, Location loc, RankedTensorType resultType,
                              ValueRange operands, ScalarFn fn) {
  MLIRContext *ctx = b.getContext();
  Value init = emptyTensor(b, loc, resultType, broadcastSizes(b, loc, resultType, operands));
  SmallVector<AffineMap> maps;
  for (Value v : operands)
    maps.push_back(broadcastMap(ctx, tensorType(v), resultType));
  maps.push_back(b.getMultiDimIdentityMap(resultType.getRank()));
  SmallVector<utils::IteratorType> iterators(resultType.getRank(),
                                             utils::IteratorType::parallel);
  auto generic = linalg::GenericOp::create(
      b, loc, resultType, operands, init, maps, iterators,
      [&](OpBuilder &nb, Location nloc, ValueRange args) {
        Value r = fn(nb, nloc, args.drop_back(), resultType.getElementType());
        linalg::YieldOp::create(nb, nloc, r);
      });
  return generic.getResult(0);
}

static Value floatConst(OpBuilder &b, Location loc, Type t, double v) {
  return arith::ConstantOp::create(b, loc, b.getFloatAttr(t, v));
}

static bool isFloat(Type t) { return isa<FloatType>(t); }

/// x for integers, x for floats; the scalar "zero" of type t.
static Value zeroOf(OpBuilder &b, Location loc, Type t) {
  return arith::ConstantOp::create(b, loc, b.getZeroAttr(t));
}

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
      .Case([&](DivideOp) -> Value {
        return f ? arith::DivFOp::create(b, loc, x, y).getResult()
                 : arith::DivSIOp::create(b, loc, x, y).getResult();
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
        return math::AbsIOp::create(b, loc, x);
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
          Value poly = arith::AddFOp::create(b, loc, x,
                                             arith::MulFOp::create(b, loc, x3, c(0.044715)));
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
              b, loc, arith::SubFOp::create(b, loc, relu, arith::MulFOp::create(b, loc, x, y)),
              l);
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
        if (isFloat(t) && isFloat(to))
          return t.getIntOrFloatBitWidth() < to.getIntOrFloatBitWidth()
                     ? arith::ExtFOp::create(b, loc, to, x).getResult()
                     : arith::TruncFOp::create(b, loc, to, x).getResult();
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
  ElementwisePattern(MLIRContext *ctx)
      : RewritePattern(MatchAnyOpTypeTag(), /*benefit=*/1, ctx) {}

  LogicalResult matchAndRewrite(Operation *op, PatternRewriter &rewriter) const override {
    if (!isa<MithrilDialect>(op->getDialect()) || op->getNumResults() != 1 ||
        !isa<AddOp, SubtractOp, MultiplyOp, DivideOp, FloorDivideOp, PowerOp, MinimumOp,
             MaximumOp, EqualOp, NotEqualOp, LessOp, LessEqualOp, GreaterOp, GreaterEqualOp,
             LogicalAndOp, LogicalOrOp, LogicalXorOp, ShiftLeftOp, ShiftRightOp, LogicalNotOp, NegateOp, AbsOp, SignOp,
             SquareOp, StopGradientOp, ExpOp, LogOp, SqrtOp, SinOp, CosOp, ReciprocalOp, ErfOp,
             TanhOp, ReluOp, SigmoidOp, SoftplusOp, LeakyReluOp, GeluOp, WhereOp,
             SquaredErrorOp, AbsoluteErrorOp, HingeOp, QuadHingeOp, KLDivergenceOp,
             QuantileOp, BinaryCrossEntropyOp, CastOp>(op))
      return failure();
    auto resultType = cast<RankedTensorType>(op->getResult(0).getType());
    Value result = buildElementwise(
        rewriter, op->getLoc(), resultType, op->getOperands(),
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
    Value r = buildElementwise(rewriter, op.getLoc(), op.getType(), op.getInput(),
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

/// The neutral element of a reduction and its combiner. An additive reduction
/// of floats narrower than f64 accumulates in f64 (see buildReduction): its
/// combiner is then called on f64 values, so it must not bake in a type.
struct Reducer {
  using Combine = std::function<Value(OpBuilder &, Location, Value, Value)>;
  TypedAttr init;
  Combine combine;
  bool additive = false;
};

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

/// The type an additive reduction of `et` accumulates in: f64 for narrower
/// floats. A float32 running sum of 10^6 values near 1000 is off by 1%
/// (each addition rounds to the sum's ulp, 64 at 10^9); in f64 the error stays
/// below f32's own rounding at any size a tensor can have, and the reduction,
/// memory-bound, keeps its speed.
static Type accumulatorType(Type et, const Reducer &reducer) {
  auto ft = dyn_cast<FloatType>(et);
  if (!reducer.additive || !ft || ft.getWidth() >= 64)
    return et;
  return Float64Type::get(et.getContext());
}

/// One linalg.generic reducing `input` over `axes` (normalized) into a tensor
/// of `acc` elements (the input's, or wider), without the reduced axes.
static Value reduceInto(OpBuilder &b, Location loc, Value input, ArrayRef<int64_t> axes,
                        TypedAttr init, const Reducer::Combine &combine, Type acc) {
  MLIRContext *ctx = b.getContext();
  RankedTensorType in = tensorType(input);
  SmallVector<int64_t> shape;
  SmallVector<OpFoldResult> sizes;
  SmallVector<AffineExpr> outExprs;
  SmallVector<utils::IteratorType> iterators;
  for (int64_t i = 0; i < in.getRank(); ++i) {
    if (llvm::is_contained(axes, i)) {
      iterators.push_back(utils::IteratorType::reduction);
      continue;
    }
    iterators.push_back(utils::IteratorType::parallel);
    shape.push_back(in.getDimSize(i));
    sizes.push_back(dimOf(b, loc, input, i));
    outExprs.push_back(getAffineDimExpr(i, ctx));
  }
  auto accType = RankedTensorType::get(shape, acc);
  Value empty = emptyTensor(b, loc, accType, sizes);
  if (init.getType() != acc)
    init = b.getFloatAttr(acc, cast<FloatAttr>(init).getValueAsDouble());
  Value initValue = arith::ConstantOp::create(b, loc, init);
  Value filled = linalg::FillOp::create(b, loc, initValue, empty).getResult(0);
  SmallVector<AffineMap> maps = {b.getMultiDimIdentityMap(in.getRank()),
                                 AffineMap::get(in.getRank(), 0, outExprs, ctx)};
  auto generic = linalg::GenericOp::create(
      b, loc, accType, input, filled, maps, iterators,
      [&](OpBuilder &nb, Location nloc, ValueRange args) {
        Value x = args[0];
        if (x.getType() != acc)
          x = arith::ExtFOp::create(nb, nloc, acc, x);
        linalg::YieldOp::create(nb, nloc, combine(nb, nloc, x, args[1]));
      });
  return generic.getResult(0);
}

/// Lanes of partial sums a long float sum keeps (kSumLanes apart), so that the
/// vectorized loop adds whole vectors instead of folding each one into a
/// single running scalar; from kSumLanesMinLength elements on.
constexpr int64_t kSumLanes = 32;
constexpr int64_t kSumLanesMinLength = 1024;

/// Reduces `input` over `axes` (normalized) with `reducer`; the result has the
/// reduced axes removed and the input's element type. A float sum over the
/// innermost axis, long and static, is taken in two steps: kSumLanes partial
/// sums of every kSumLanes-th element, then their sum.
static Value buildReduction(OpBuilder &b, Location loc, Value input, ArrayRef<int64_t> axes,
                            const Reducer &reducer) {
  RankedTensorType in = tensorType(input);
  Type et = in.getElementType();
  Type acc = accumulatorType(et, reducer);
  int64_t last = in.getRank() - 1;
  int64_t length = last >= 0 ? in.getDimSize(last) : 0;
  Value result;
  if (reducer.additive && isa<FloatType>(et) && llvm::is_contained(axes, last) &&
      !ShapedType::isDynamic(length) && length >= kSumLanesMinLength &&
      length % kSumLanes == 0) {
    SmallVector<int64_t> shape(in.getShape());
    shape.back() = length / kSumLanes;
    shape.push_back(kSumLanes);
    SmallVector<ReassociationIndices> groups;
    for (int64_t i = 0; i < last; ++i)
      groups.push_back({i});
    groups.push_back({last, last + 1});
    SmallVector<OpFoldResult> sizes;
    for (int64_t i = 0; i < last; ++i)
      sizes.push_back(dimOf(b, loc, input, i));
    sizes.push_back(b.getIndexAttr(length / kSumLanes));
    sizes.push_back(b.getIndexAttr(kSumLanes));
    Value lanes = tensor::ExpandShapeOp::create(b, loc, RankedTensorType::get(shape, et), input,
                                                groups, sizes);
    Value partial = reduceInto(b, loc, lanes, axes, reducer.init, reducer.combine, acc);
    // The lanes already carry the combiner's sign (cross entropy subtracts):
    // they merge by adding.
    Reducer::Combine add = [](OpBuilder &nb, Location l, Value x, Value a) {
      return arith::AddFOp::create(nb, l, x, a).getResult();
    };
    result = reduceInto(b, loc, partial, {tensorType(partial).getRank() - 1}, reducer.init, add,
                        acc);
  } else {
    result = reduceInto(b, loc, input, axes, reducer.init, reducer.combine, acc);
  }
  if (acc == et)
    return result;
  RankedTensorType rt = tensorType(result);
  return buildElementwise(b, loc, RankedTensorType::get(rt.getShape(), et), result,
                          [&](OpBuilder &nb, Location l, ValueRange a, Type) {
                            return arith::TruncFOp::create(nb, l, et, a[0]).getResult();
                          });
}

/// Reshapes `input` to `type`, whose dynamic sizes are given by `sizes`, via
/// collapse to 1-D and expand (both free after bufferization).
static Value buildReshape(OpBuilder &b, Location loc, Value input, RankedTensorType type,
                          ArrayRef<OpFoldResult> sizes) {
  RankedTensorType in = tensorType(input);
  if (in == type)
    return input;
  // No elements, nothing to move: a new empty tensor. (Collapsing a static 0
  // with dynamic sizes has no type both tensor.collapse_shape and its memref
  // form accept: one wants the group dynamic, the other computes 0; and a
  // dynamic source expands into no group with a static 0.)
  if (llvm::is_contained(in.getShape(), 0) || llvm::is_contained(type.getShape(), 0))
    return emptyTensor(b, loc, type, sizes);
  if (in.getRank() == 0)
    return tensor::ExpandShapeOp::create(b, loc, type, input,
                                         ArrayRef<ReassociationIndices>{}, sizes);
  if (type.getRank() == 0)
    return tensor::CollapseShapeOp::create(b, loc, type, input,
                                           ArrayRef<ReassociationIndices>{});
  Value flat = input;
  if (in.getRank() != 1) {
    ReassociationIndices all;
    for (int64_t i = 0; i < in.getRank(); ++i)
      all.push_back(i);
    int64_t n = 1;
    for (int64_t d : in.getShape())
      n = (ShapedType::isDynamic(d) || ShapedType::isDynamic(n)) ? kDyn : n * d;
    flat = tensor::CollapseShapeOp::create(
        b, loc, RankedTensorType::get({n}, in.getElementType()), input,
        ArrayRef<ReassociationIndices>{all});
  }
  if (type.getRank() == 1) {
    if (flat.getType() == type)
      return flat;
    return tensor::CastOp::create(b, loc, type, flat);
  }
  ReassociationIndices all;
  for (int64_t i = 0; i < type.getRank(); ++i)
    all.push_back(i);
  // A static source expands only into a static group.
  if (!type.hasStaticShape() && tensorType(flat).hasStaticShape())
    flat = tensor::CastOp::create(b, loc, RankedTensorType::get({kDyn}, type.getElementType()),
                                  flat);
  return tensor::ExpandShapeOp::create(b, loc, type, flat, ArrayRef<ReassociationIndices>{all},
                                       sizes);
}

/// Adds back the reduced `axes` (normalized) as size-1 dimensions for keepdim;
/// `reduced` is already of `type` without keepdim. The axes must be given: a
/// [1, 5] sum reduced to [1, 5, 1] has two unit dimensions that only they tell
/// apart.
static Value keepDims(OpBuilder &b, Location loc, Value reduced, RankedTensorType type,
                      ArrayRef<int64_t> axes) {
  RankedTensorType rt = tensorType(reduced);
  if (rt == type || rt.getRank() == type.getRank())
    return reduced;
  // One expand_shape whose groups each hold one kept dimension and the unit
  // ones around it: a collapse to 1-D and an expand with several dynamic sizes
  // in one group would be ambiguous (and crashed upstream's reshape folding).
  SmallVector<OpFoldResult> sizes;
  SmallVector<ReassociationIndices> groups(rt.getRank());
  int64_t kept = 0;
  for (int64_t i = 0; i < type.getRank(); ++i) {
    bool unit = llvm::is_contained(axes, i);
    sizes.push_back(unit ? OpFoldResult(b.getIndexAttr(1)) : dimOf(b, loc, reduced, kept));
    if (!unit)
      ++kept;
    // Unit dimensions join the kept one before them (the first kept one if
    // none is before).
    if (!groups.empty())
      groups[std::max<int64_t>(kept - 1, 0)].push_back(i);
  }
  return tensor::ExpandShapeOp::create(b, loc, type, reduced, groups, sizes);
}

/// The number of elements over `axes` of `input`, as a scalar of type `et`.
static Value countOver(OpBuilder &b, Location loc, Value input, ArrayRef<int64_t> axes,
                       Type et) {
  Value n = arith::ConstantIndexOp::create(b, loc, 1);
  for (int64_t a : axes)
    n = arith::MulIOp::create(b, loc, n,
                              getValueOrCreateConstantIndexOp(b, loc, dimOf(b, loc, input, a)));
  Value i64 = arith::IndexCastOp::create(b, loc, b.getI64Type(), n);
  return arith::SIToFPOp::create(b, loc, et, i64);
}

/// Divides every element of `t` by the scalar `s`.
static Value divideByScalar(OpBuilder &b, Location loc, Value t, Value s) {
  RankedTensorType type = tensorType(t);
  return buildElementwise(b, loc, type, t, [&](OpBuilder &nb, Location l, ValueRange a, Type) {
    return arith::DivFOp::create(nb, l, a[0], s).getResult();
  });
}

template <typename OpT>
struct ReducePattern : OpRewritePattern<OpT> {
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
template <typename OpT>
struct ArgReducePattern : OpRewritePattern<OpT> {
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
    if (!isFloat(et))
      return rewriter.notifyMatchFailure(op, "integer argmax");
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
    auto ft = cast<FloatType>(et);
    Value initVal = arith::ConstantOp::create(
        rewriter, loc, rewriter.getFloatAttr(et, APFloat::getInf(ft.getFloatSemantics(), isMax)));
    Value vals = linalg::FillOp::create(rewriter, loc, initVal,
                                        emptyTensor(rewriter, loc, valType, sizes))
                     .getResult(0);
    Value idxs = linalg::FillOp::create(rewriter, loc,
                                        arith::ConstantOp::create(rewriter, loc,
                                                                  rewriter.getI64IntegerAttr(0))
                                            .getResult(),
                                        emptyTensor(rewriter, loc, idxType, sizes))
                     .getResult(0);
    AffineMap outMap = AffineMap::get(in.getRank(), 0, outExprs, ctx);
    SmallVector<AffineMap> maps = {rewriter.getMultiDimIdentityMap(in.getRank()), outMap, outMap};
    auto generic = linalg::GenericOp::create(
        rewriter, loc, TypeRange{valType, idxType}, input, ValueRange{vals, idxs}, maps, iterators,
        [&](OpBuilder &b, Location l, ValueRange args) {
          Value idx = arith::IndexCastOp::create(b, l, i64, linalg::IndexOp::create(b, l, axis));
          // Strict comparison keeps the first extreme element, as numpy does.
          Value better = arith::CmpFOp::create(
              b, l, isMax ? arith::CmpFPredicate::OGT : arith::CmpFPredicate::OLT, args[0],
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

/// matmul: linalg.matmul for matrices, linalg.batch_matmul for equal batches,
/// and a linalg.generic contraction for vectors and broadcast batches.
struct MatmulPattern : OpRewritePattern<MatmulOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(MatmulOp op, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    Value lhs = op.getLhs(), rhs = op.getRhs();
    RankedTensorType lt = tensorType(lhs), rt = tensorType(rhs), out = op.getType();
    Type et = out.getElementType();
    // Output sizes.
    SmallVector<OpFoldResult> sizes;
    int64_t outRank = out.getRank();
    bool lhsVec = lt.getRank() == 1, rhsVec = rt.getRank() == 1;
    int64_t batchRank = outRank - (lhsVec ? 0 : 1) - (rhsVec ? 0 : 1);
    auto batchDim = [&](int64_t i) -> OpFoldResult {
      for (Value v : {lhs, rhs}) {
        RankedTensorType t = tensorType(v);
        int64_t vb = std::max<int64_t>(t.getRank() - 2, 0);
        int64_t j = i - (batchRank - vb);
        if (j >= 0 && t.getDimSize(j) != 1)
          return dimOf(rewriter, loc, v, j);
      }
      return rewriter.getIndexAttr(1);
    };
    for (int64_t i = 0; i < batchRank; ++i)
      sizes.push_back(batchDim(i));
    if (!lhsVec)
      sizes.push_back(dimOf(rewriter, loc, lhs, lt.getRank() - 2));
    if (!rhsVec)
      sizes.push_back(dimOf(rewriter, loc, rhs, rt.getRank() - 1));
    Value zero = arith::ConstantOp::create(rewriter, loc, rewriter.getZeroAttr(et));
    Value init =
        linalg::FillOp::create(rewriter, loc, zero, emptyTensor(rewriter, loc, out, sizes))
            .getResult(0);
    if (lt.getRank() == 2 && rt.getRank() == 2) {
      rewriter.replaceOp(op, linalg::MatmulOp::create(rewriter, loc, TypeRange{out},
                                                      ValueRange{lhs, rhs}, ValueRange{init})
                                 .getResult(0));
      return success();
    }
    if (lt.getRank() == 3 && rt.getRank() == 3 && lt.getDimSize(0) == rt.getDimSize(0) &&
        !lt.isDynamicDim(0)) {
      rewriter.replaceOp(op, linalg::BatchMatmulOp::create(rewriter, loc, TypeRange{out},
                                                           ValueRange{lhs, rhs}, ValueRange{init})
                                 .getResult(0));
      return success();
    }
    // General case: loops (batch..., [m], [n], k).
    int64_t numLoops = outRank + 1;
    AffineExpr k = getAffineDimExpr(numLoops - 1, ctx);
    int64_t mLoop = lhsVec ? -1 : batchRank;
    int64_t nLoop = rhsVec ? -1 : batchRank + (lhsVec ? 0 : 1);
    auto batchExprs = [&](RankedTensorType t, int64_t vecDims) {
      SmallVector<AffineExpr> e;
      int64_t vb = t.getRank() - vecDims;
      for (int64_t j = 0; j < vb; ++j) {
        int64_t loopIdx = j + (batchRank - vb);
        e.push_back(t.getDimSize(j) == 1 && out.getDimSize(loopIdx) != 1
                        ? getAffineConstantExpr(0, ctx)
                        : getAffineDimExpr(loopIdx, ctx));
      }
      return e;
    };
    SmallVector<AffineExpr> le = batchExprs(lt, lhsVec ? 1 : 2);
    if (!lhsVec)
      le.push_back(getAffineDimExpr(mLoop, ctx));
    le.push_back(k);
    SmallVector<AffineExpr> re = batchExprs(rt, rhsVec ? 1 : 2);
    re.push_back(k);
    if (!rhsVec)
      re.push_back(getAffineDimExpr(nLoop, ctx));
    SmallVector<AffineExpr> oe;
    for (int64_t i = 0; i < outRank; ++i)
      oe.push_back(getAffineDimExpr(i, ctx));
    SmallVector<AffineMap> maps = {AffineMap::get(numLoops, 0, le, ctx),
                                   AffineMap::get(numLoops, 0, re, ctx),
                                   AffineMap::get(numLoops, 0, oe, ctx)};
    SmallVector<utils::IteratorType> iterators(outRank, utils::IteratorType::parallel);
    iterators.push_back(utils::IteratorType::reduction);
    bool f = isFloat(et);
    auto generic = linalg::GenericOp::create(
        rewriter, loc, TypeRange{out}, ValueRange{lhs, rhs}, init, maps, iterators,
        [&](OpBuilder &b, Location l, ValueRange a) {
          Value r = f ? arith::AddFOp::create(b, l, a[2], arith::MulFOp::create(b, l, a[0], a[1]))
                            .getResult()
                      : arith::AddIOp::create(b, l, a[2], arith::MulIOp::create(b, l, a[0], a[1]))
                            .getResult();
          linalg::YieldOp::create(b, l, r);
        });
    rewriter.replaceOp(op, generic.getResult(0));
    return success();
  }
};

struct TransposePattern : OpRewritePattern<TransposeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(TransposeOp op, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    SmallVector<int64_t> perm = op.getPermutationOrDefault();
    SmallVector<OpFoldResult> sizes;
    for (int64_t p : perm)
      sizes.push_back(dimOf(rewriter, loc, op.getInput(), p));
    Value init = emptyTensor(rewriter, loc, op.getType(), sizes);
    rewriter.replaceOp(op, linalg::TransposeOp::create(rewriter, loc, op.getInput(), init, perm)
                               .getResult()[0]);
    return success();
  }
};

/// Drops the unit axes `drop` (normalized) of `input`, giving `type`: one
/// collapse_shape whose groups each hold one kept axis and the dropped ones
/// after it (or before the first kept one).
static Value dropUnitDims(OpBuilder &b, Location loc, Value input, RankedTensorType type,
                          ArrayRef<int64_t> drop) {
  RankedTensorType in = tensorType(input);
  SmallVector<ReassociationIndices> groups(type.getRank());
  int64_t kept = 0;
  for (int64_t i = 0; i < in.getRank(); ++i) {
    bool dropped = llvm::is_contained(drop, i);
    if (!dropped)
      ++kept;
    if (!groups.empty())
      groups[std::max<int64_t>(kept - 1, 0)].push_back(i);
  }
  Value collapsed = tensor::CollapseShapeOp::create(
      b, loc, tensor::CollapseShapeOp::inferCollapsedType(in, groups), input, groups);
  if (collapsed.getType() != type)
    collapsed = tensor::CastOp::create(b, loc, type, collapsed);
  return collapsed;
}

/// reshape, flatten, squeeze and unsqueeze are all reshapes; they differ in
/// how the dynamic result sizes are computed.
struct ReshapeLikePattern : public RewritePattern {
  ReshapeLikePattern(MLIRContext *ctx) : RewritePattern(MatchAnyOpTypeTag(), 1, ctx) {}
  LogicalResult matchAndRewrite(Operation *op, PatternRewriter &rewriter) const override {
    if (!isa<ReshapeOp, FlattenOp, SqueezeOp, UnsqueezeOp>(op))
      return failure();
    Location loc = op->getLoc();
    Value input = op->getOperand(0);
    RankedTensorType in = tensorType(input);
    auto type = cast<RankedTensorType>(op->getResult(0).getType());
    SmallVector<OpFoldResult> sizes;
    Value total;
    auto totalSize = [&]() {
      if (!total) {
        total = arith::ConstantIndexOp::create(rewriter, loc, 1);
        for (int64_t i = 0; i < in.getRank(); ++i)
          total = arith::MulIOp::create(
              rewriter, loc, total,
              getValueOrCreateConstantIndexOp(rewriter, loc, dimOf(rewriter, loc, input, i)));
      }
      return total;
    };
    if (!type.hasStaticShape()) {
      if (auto flat = dyn_cast<FlattenOp>(op)) {
        int64_t start = in.getRank() ? normalizeAxis(flat.getStartDim(), in.getRank()) : 0;
        int64_t end = in.getRank() ? normalizeAxis(flat.getEndDim(), in.getRank()) : 0;
        for (int64_t i = 0; i < start; ++i)
          sizes.push_back(dimOf(rewriter, loc, input, i));
        Value merged = arith::ConstantIndexOp::create(rewriter, loc, 1);
        for (int64_t i = start; i <= end; ++i)
          merged = arith::MulIOp::create(
              rewriter, loc, merged,
              getValueOrCreateConstantIndexOp(rewriter, loc, dimOf(rewriter, loc, input, i)));
        sizes.push_back(merged);
        for (int64_t i = end + 1; i < in.getRank(); ++i)
          sizes.push_back(dimOf(rewriter, loc, input, i));
        // One collapse of the flattened axes: through 1-D, the expand back
        // could have several dynamic sizes in one group (which upstream's
        // expand-strided-metadata crashes on).
        if (in.getRank() > 0 && !llvm::is_contained(in.getShape(), 0)) {
          SmallVector<ReassociationIndices> groups;
          for (int64_t i = 0; i < in.getRank(); ++i)
            if (i <= start || i > end)
              groups.push_back({i});
            else
              groups.back().push_back(i);
          Value collapsed = tensor::CollapseShapeOp::create(
              rewriter, loc, tensor::CollapseShapeOp::inferCollapsedType(in, groups), input,
              groups);
          if (collapsed.getType() != type)
            collapsed = tensor::CastOp::create(rewriter, loc, type, collapsed);
          rewriter.replaceOp(op, collapsed);
          return success();
        }
      } else if (auto unsqueeze = dyn_cast<UnsqueezeOp>(op)) {
        int64_t axis = normalizeAxis(unsqueeze.getAxis(), type.getRank());
        for (int64_t i = 0; i < type.getRank(); ++i)
          sizes.push_back(i == axis ? OpFoldResult(rewriter.getIndexAttr(1))
                                    : dimOf(rewriter, loc, input, i < axis ? i : i - 1));
        // One expand whose groups hold one axis each and the new unit one:
        // through 1-D, several dynamic sizes would share a group (which
        // upstream's expand-strided-metadata crashes on).
        if (!llvm::is_contained(in.getShape(), 0)) {
          int64_t unit[] = {axis};
          rewriter.replaceOp(op, keepDims(rewriter, loc, input, type, unit));
          return success();
        }
      } else if (auto squeeze = dyn_cast<SqueezeOp>(op)) {
        // The input's sizes but the dropped axes, as the shape rule drops them.
        SmallVector<int64_t> drop;
        if (auto axes = squeeze.getAxes())
          drop = *normalizeAxes(*axes, in.getRank());
        else
          for (int64_t i = 0; i < in.getRank(); ++i)
            if (in.getDimSize(i) == 1)
              drop.push_back(i);
        for (int64_t i = 0; i < in.getRank(); ++i)
          if (!llvm::is_contained(drop, i))
            sizes.push_back(dimOf(rewriter, loc, input, i));
        if (!llvm::is_contained(in.getShape(), 0)) {
          rewriter.replaceOp(op, dropUnitDims(rewriter, loc, input, type, drop));
          return success();
        }
      } else {
        auto reshape = cast<ReshapeOp>(op);
        int64_t known = 1;
        for (int64_t d : reshape.getShape())
          if (d != -1)
            known *= d;
        for (int64_t d : reshape.getShape()) {
          if (d != -1) {
            sizes.push_back(rewriter.getIndexAttr(d));
            continue;
          }
          sizes.push_back(arith::DivUIOp::create(
                              rewriter, loc, totalSize(),
                              arith::ConstantIndexOp::create(rewriter, loc, known))
                              .getResult());
        }
      }
    } else {
      for (int64_t d : type.getShape())
        sizes.push_back(rewriter.getIndexAttr(d));
    }
    rewriter.replaceOp(op, buildReshape(rewriter, loc, input, type, sizes));
    return success();
  }
};

struct ConcatPattern : OpRewritePattern<ConcatOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ConcatOp op, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    RankedTensorType type = op.getType();
    int64_t rank = type.getRank();
    int64_t axis = normalizeAxis(op.getAxis(), rank);
    ValueRange inputs = op.getInputs();
    SmallVector<OpFoldResult> sizes;
    for (int64_t i = 0; i < rank; ++i) {
      if (i != axis) {
        sizes.push_back(dimOf(rewriter, loc, inputs[0], i));
        continue;
      }
      Value sum = arith::ConstantIndexOp::create(rewriter, loc, 0);
      for (Value v : inputs)
        sum = arith::AddIOp::create(
            rewriter, loc, sum,
            getValueOrCreateConstantIndexOp(rewriter, loc, dimOf(rewriter, loc, v, i)));
      sizes.push_back(sum);
    }
    Value result = emptyTensor(rewriter, loc, type, sizes);
    OpFoldResult offset = rewriter.getIndexAttr(0);
    for (Value v : inputs) {
      // An operand without elements adds nothing (and tensor.insert_slice
      // refuses a static offset at the end of the axis, even for no elements).
      if (llvm::is_contained(tensorType(v).getShape(), 0))
        continue;
      SmallVector<OpFoldResult> offsets(rank, rewriter.getIndexAttr(0));
      SmallVector<OpFoldResult> vsizes;
      for (int64_t i = 0; i < rank; ++i)
        vsizes.push_back(dimOf(rewriter, loc, v, i));
      offsets[axis] = offset;
      SmallVector<OpFoldResult> strides(rank, rewriter.getIndexAttr(1));
      result = tensor::InsertSliceOp::create(rewriter, loc, v, result, offsets, vsizes, strides);
      offset = arith::AddIOp::create(rewriter, loc,
                                     getValueOrCreateConstantIndexOp(rewriter, loc, offset),
                                     getValueOrCreateConstantIndexOp(rewriter, loc, vsizes[axis]))
                   .getResult();
    }
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// Python's start:stop:step over a dimension whose size is known at run time
/// only: the clamped offset and the length, as index values.
static std::pair<Value, Value> runtimeSlice(OpBuilder &b, Location loc, Value dim, int64_t start,
                                            int64_t stop, int64_t step) {
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  auto clamp = [&](int64_t v) -> Value {
    Value c = arith::ConstantIndexOp::create(b, loc, v);
    if (v >= 0)
      return arith::MinSIOp::create(b, loc, c, dim);
    return arith::MaxSIOp::create(b, loc, arith::AddIOp::create(b, loc, c, dim), zero);
  };
  Value s = clamp(start), e = clamp(stop);
  Value span = arith::MaxSIOp::create(b, loc, arith::SubIOp::create(b, loc, e, s), zero);
  Value stepValue = arith::ConstantIndexOp::create(b, loc, step);
  Value length = arith::CeilDivSIOp::create(b, loc, span, stepValue);
  return {s, length};
}

struct SlicePattern : OpRewritePattern<SliceOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(SliceOp op, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    RankedTensorType in = op.getInput().getType();
    int64_t rank = in.getRank();
    SmallVector<OpFoldResult> offsets(rank, rewriter.getIndexAttr(0)), sizes,
        strides(rank, rewriter.getIndexAttr(1));
    for (int64_t i = 0; i < rank; ++i)
      sizes.push_back(dimOf(rewriter, loc, op.getInput(), i));
    SmallVector<int64_t> axes = *normalizeAxes(op.getAxes(), rank);
    for (auto [i, axis] : llvm::enumerate(axes)) {
      int64_t start = op.getStart()[i], stop = op.getStop()[i], step = op.getStep()[i];
      strides[axis] = rewriter.getIndexAttr(step);
      if (in.isDynamicDim(axis)) {
        auto [offset, length] = runtimeSlice(
            rewriter, loc, getValueOrCreateConstantIndexOp(rewriter, loc, sizes[axis]), start,
            stop, step);
        offsets[axis] = offset;
        sizes[axis] = length;
        continue;
      }
      int64_t dim = in.getDimSize(axis);
      auto clamp = [&](int64_t v) { return std::clamp<int64_t>(v < 0 ? v + dim : v, 0, dim); };
      int64_t s = clamp(start), e = clamp(stop);
      offsets[axis] = rewriter.getIndexAttr(s);
      sizes[axis] = rewriter.getIndexAttr(e > s ? (e - s + step - 1) / step : 0);
    }
    // An empty result is a new empty tensor: tensor.extract_slice refuses a
    // static offset at the end of a dimension even for zero elements.
    if (llvm::any_of(sizes, [](OpFoldResult size) { return isConstantIntValue(size, 0); })) {
      rewriter.replaceOp(op, emptyTensor(rewriter, loc, op.getType(), sizes));
      return success();
    }
    Value slice =
        tensor::ExtractSliceOp::create(rewriter, loc, op.getInput(), offsets, sizes, strides);
    if (slice.getType() != op.getType())
      slice = tensor::CastOp::create(rewriter, loc, op.getType(), slice);
    rewriter.replaceOp(op, slice);
    return success();
  }
};

struct ShapePattern : OpRewritePattern<ShapeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ShapeOp op, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    SmallVector<Value> dims;
    for (int64_t i = 0; i < op.getInput().getType().getRank(); ++i)
      dims.push_back(arith::IndexCastOp::create(
          rewriter, loc, rewriter.getI64Type(),
          getValueOrCreateConstantIndexOp(rewriter, loc, dimOf(rewriter, loc, op.getInput(), i))));
    rewriter.replaceOpWithNewOp<tensor::FromElementsOp>(op, op.getType(), dims);
    return success();
  }
};

/// Zero-pads (or -inf pads) the spatial dimensions of `input`, which start at
/// `firstSpatial`.
static Value padSpatial(OpBuilder &b, Location loc, Value input, int64_t firstSpatial,
                        ArrayRef<int64_t> padding, Value padValue) {
  if (llvm::all_of(padding, [](int64_t p) { return p == 0; }))
    return input;
  RankedTensorType t = tensorType(input);
  SmallVector<OpFoldResult> lo(t.getRank(), b.getIndexAttr(0)), hi(t.getRank(), b.getIndexAttr(0));
  SmallVector<int64_t> shape(t.getShape());
  for (size_t i = 0; i < padding.size() / 2; ++i) {
    int64_t d = firstSpatial + i;
    lo[d] = b.getIndexAttr(padding[2 * i]);
    hi[d] = b.getIndexAttr(padding[2 * i + 1]);
    if (!ShapedType::isDynamic(shape[d]))
      shape[d] += padding[2 * i] + padding[2 * i + 1];
  }
  auto padded = RankedTensorType::get(shape, t.getElementType());
  return tensor::PadOp::create(b, loc, padded, input, lo, hi, padValue);
}

/// Splits axis `axis` of `v` into (outer, inner) with `outer` static.
static Value splitAxis(OpBuilder &b, Location loc, Value v, int64_t axis, int64_t outer) {
  RankedTensorType t = tensorType(v);
  SmallVector<int64_t> shape;
  SmallVector<OpFoldResult> sizes;
  SmallVector<ReassociationIndices> reassoc;
  for (int64_t i = 0; i < t.getRank(); ++i) {
    int64_t next = shape.size();
    if (i == axis) {
      int64_t inner = t.getDimSize(i) / outer;
      shape.append({outer, inner});
      sizes.append({b.getIndexAttr(outer), b.getIndexAttr(inner)});
      reassoc.push_back({next, next + 1});
    } else {
      shape.push_back(t.getDimSize(i));
      sizes.push_back(dimOf(b, loc, v, i));
      reassoc.push_back({next});
    }
  }
  return tensor::ExpandShapeOp::create(b, loc, RankedTensorType::get(shape, t.getElementType()),
                                       v, reassoc, sizes);
}

/// Merges axes `axis` and `axis + 1` of `v`.
static Value mergeAxes(OpBuilder &b, Location loc, Value v, int64_t axis, RankedTensorType type) {
  RankedTensorType t = tensorType(v);
  SmallVector<ReassociationIndices> reassoc;
  for (int64_t i = 0; i < t.getRank(); ++i) {
    if (i == axis + 1)
      continue;
    if (i == axis)
      reassoc.push_back({i, i + 1});
    else
      reassoc.push_back({i});
  }
  return tensor::CollapseShapeOp::create(b, loc, type, v, reassoc);
}

/// The flat-row layout of a plain 2-D convolution: the input, padded, is
/// stored as rows of the padded width `wp`, so output (oh, ow) at flat
/// position p = oh * wp + ow reads input p + dh * kh * wp + dw * kw for every
/// kernel position (dh, dw: the dilation). Columns ow >= OW are computed and
/// dropped (the wp - OW extra columns are the price of contiguous loads); p
/// runs to `positions`, a multiple of the register tile.
struct FlatConvLayout {
  int64_t wp = 0, oh = 0, ow = 0, kh = 0, kw = 0, dh = 1, dw = 1;
  int64_t positions = 0; // output positions computed, >= oh * wp
  int64_t length = 0;    // flat input length, rows of wp
};

/// The layout when an ungrouped convolution of these types is a plain static
/// 2-D one worth it, else nullopt (groups go one at a time: lowerPerGroup).
static std::optional<FlatConvLayout> flatConvLayout(RankedTensorType input,
                                                    RankedTensorType weight,
                                                    ArrayRef<int64_t> stride,
                                                    ArrayRef<int64_t> padding,
                                                    ArrayRef<int64_t> dilation) {
  auto isOne = [](int64_t v) { return v == 1; };
  if (input.getRank() != 4 || !input.hasStaticShape() ||
      !weight.hasStaticShape() || !llvm::all_of(stride, isOne) || dilation.size() != 2 ||
      llvm::any_of(dilation, [](int64_t v) { return v < 1; }) || padding.size() != 4 ||
      !isa<FloatType>(input.getElementType()))
    return std::nullopt;
  FlatConvLayout l;
  int64_t hp = input.getDimSize(2) + padding[0] + padding[1];
  l.wp = input.getDimSize(3) + padding[2] + padding[3];
  l.kh = weight.getDimSize(2);
  l.kw = weight.getDimSize(3);
  l.dh = dilation[0];
  l.dw = dilation[1];
  l.oh = hp - l.dh * (l.kh - 1);
  l.ow = l.wp - l.dw * (l.kw - 1);
  // Rows much wider than the output would waste most of the work.
  if (l.oh <= 0 || l.ow <= 0 || 4 * (l.wp - l.ow) > l.wp)
    return std::nullopt;
  l.positions = llvm::alignTo(l.oh * l.wp, kConvFlatTile);
  l.length = llvm::alignTo(l.positions + l.dh * (l.kh - 1) * l.wp + l.dw * (l.kw - 1), l.wp);
  return l;
}

/// The input of a flat convolution: zero-padded as the convolution pads it,
/// plus zero rows below so that every tile reads in bounds, flattened to
/// [N, C, length].
static Value flatConvInput(OpBuilder &b, Location loc, Value input, ArrayRef<int64_t> padding,
                           const FlatConvLayout &l) {
  RankedTensorType t = tensorType(input);
  int64_t rows = l.length / l.wp;
  int64_t below = rows - t.getDimSize(2) - padding[0];
  Value zero = floatConst(b, loc, t.getElementType(), 0.0);
  Value padded = padSpatial(b, loc, input, 2, {padding[0], below, padding[2], padding[3]}, zero);
  auto flat = RankedTensorType::get({t.getDimSize(0), t.getDimSize(1), l.length},
                                    t.getElementType());
  return tensor::CollapseShapeOp::create(b, loc, flat, padded,
                                         SmallVector<ReassociationIndices>{{0}, {1}, {2, 3}});
}

/// out[n, f, oh, ow] = sum_{c, kh, kw} x[n, c, oh + kh, ow + kw] w[f, c, kh, kw]
/// as a generic over flat rows (see FlatConvLayout), then the [N, F, OH, OW]
/// view of its result.
static Value lowerFlatConv(OpBuilder &b, Location loc, Value input, Value weight,
                           ArrayRef<int64_t> padding, const FlatConvLayout &l) {
  MLIRContext *ctx = b.getContext();
  RankedTensorType wt = tensorType(weight);
  Type et = wt.getElementType();
  int64_t n = tensorType(input).getDimSize(0), f = wt.getDimSize(0);
  Value flat = flatConvInput(b, loc, input, padding, l);
  auto resultType = RankedTensorType::get({n, f, l.positions}, et);
  Value init = zeroFilled(b, loc, resultType);
  auto d = [&](int64_t i) { return getAffineDimExpr(i, ctx); };
  // Loops: n, f, p, c, kh, kw.
  SmallVector<AffineMap> maps = {AffineMap::get(6, 0, {d(0), d(3), d(2) + d(4) * (l.dh * l.wp) + d(5) * l.dw}, ctx),
                                 AffineMap::get(6, 0, {d(1), d(3), d(4), d(5)}, ctx),
                                 AffineMap::get(6, 0, {d(0), d(1), d(2)}, ctx)};
  SmallVector<utils::IteratorType> iterators(3, utils::IteratorType::parallel);
  iterators.append(3, utils::IteratorType::reduction);
  auto generic = linalg::GenericOp::create(b, loc, TypeRange{resultType}, ValueRange{flat, weight},
                                           init, maps, iterators, yieldMultiplyAdd);
  generic->setAttr(kConvFlatAttr, b.getUnitAttr());
  // [N, F, positions] -> rows [N, F, OH, wp] -> columns < OW.
  Value rows = tensor::ExtractSliceOp::create(
      b, loc, RankedTensorType::get({n, f, l.oh * l.wp}, et), generic.getResult(0),
      ArrayRef<OpFoldResult>{b.getIndexAttr(0), b.getIndexAttr(0), b.getIndexAttr(0)},
      ArrayRef<OpFoldResult>{b.getIndexAttr(n), b.getIndexAttr(f), b.getIndexAttr(l.oh * l.wp)},
      ArrayRef<OpFoldResult>{b.getIndexAttr(1), b.getIndexAttr(1), b.getIndexAttr(1)});
  Value grid =
      tensor::ExpandShapeOp::create(b, loc, RankedTensorType::get({n, f, l.oh, l.wp}, et), rows,
                                    SmallVector<ReassociationIndices>{{0}, {1}, {2, 3}});
  SmallVector<OpFoldResult> zeros(4, b.getIndexAttr(0)), ones(4, b.getIndexAttr(1));
  SmallVector<OpFoldResult> sizes = {b.getIndexAttr(n), b.getIndexAttr(f), b.getIndexAttr(l.oh),
                                     b.getIndexAttr(l.ow)};
  return tensor::ExtractSliceOp::create(b, loc, RankedTensorType::get({n, f, l.oh, l.ow}, et), grid,
                                        zeros, sizes, ones);
}

/// One phase (row, column) of a 2-D stride (sh, sw): the kernel rows row,
/// row + sh, ... and columns column, column + sw, ..., which meet the input
/// rows and columns of the same phase. With kh = row + sh * i, input row
/// oh * sh + kh is row oh + i of the phase, so each phase is a stride-1
/// convolution with a kernel of kernelRows x kernelColumns.
struct StridePhase {
  int64_t row, column, kernelRows, kernelColumns;
};

/// The phases of `stride` that meet some of a kh x kw kernel.
static SmallVector<StridePhase> stridePhases(ArrayRef<int64_t> stride, int64_t kh, int64_t kw) {
  SmallVector<StridePhase> phases;
  for (int64_t row = 0; row < stride[0]; ++row)
    for (int64_t column = 0; column < stride[1]; ++column) {
      // A stride longer than the kernel leaves phases no kernel tap meets
      // (llvm::divideCeil is unsigned: test before dividing).
      if (row >= kh || column >= kw)
        continue;
      phases.push_back({row, column, static_cast<int64_t>(llvm::divideCeil(kh - row, stride[0])),
                        static_cast<int64_t>(llvm::divideCeil(kw - column, stride[1]))});
    }
  return phases;
}

/// Whether an ungrouped convolution of these types runs phase by phase:
/// 2-D, static, float, no dilation.
static bool isPhasedConv(RankedTensorType input, RankedTensorType weight, ArrayRef<int64_t> stride,
                         ArrayRef<int64_t> padding, ArrayRef<int64_t> dilation) {
  auto isOne = [](int64_t v) { return v == 1; };
  return input.getRank() == 4 && input.hasStaticShape() && weight.hasStaticShape() &&
         stride.size() == 2 && padding.size() == 4 && llvm::all_of(dilation, isOne) &&
         isa<FloatType>(input.getElementType());
}

/// The [N, C, rows, columns] slice of a 4-D tensor from (row, column), every
/// sh-th row and sw-th column.
static Value phaseSlice(OpBuilder &b, Location loc, Value source, int64_t row, int64_t column,
                        int64_t rows, int64_t columns, ArrayRef<int64_t> stride) {
  RankedTensorType t = tensorType(source);
  SmallVector<int64_t> sizes = {t.getDimSize(0), t.getDimSize(1), rows, columns};
  return tensor::ExtractSliceOp::create(b, loc, RankedTensorType::get(sizes, t.getElementType()),
                                        source, indexAttrs(b, {0, 0, row, column}),
                                        indexAttrs(b, sizes),
                                        indexAttrs(b, {1, 1, stride[0], stride[1]}));
}

/// `part` written into `dest` at (row, column), every sh-th row and sw-th
/// column: the inverse of phaseSlice.
static Value insertPhase(OpBuilder &b, Location loc, Value part, Value dest, int64_t row,
                         int64_t column, ArrayRef<int64_t> stride) {
  return tensor::InsertSliceOp::create(b, loc, part, dest, indexAttrs(b, {0, 0, row, column}),
                                       indexAttrs(b, tensorType(part).getShape()),
                                       indexAttrs(b, {1, 1, stride[0], stride[1]}));
}

/// The phases of a strided convolution's input that an oh x ow output
/// reads, each with the flat layout of its stride-1 convolution: phase (a, b)
/// is rows oh + i of the phase for i < kernelRows (columns likewise), all
/// inside the padded input since (oh - 1) * sh + kh - 1 is. nullopt where the
/// convolution is no strided plain one, or a phase has no flat layout.
using PlannedPhases = SmallVector<std::pair<StridePhase, FlatConvLayout>>;
static std::optional<PlannedPhases> planInputPhases(RankedTensorType input, RankedTensorType weight,
                                                    int64_t oh, int64_t ow,
                                                    ArrayRef<int64_t> stride,
                                                    ArrayRef<int64_t> padding,
                                                    ArrayRef<int64_t> dilation) {
  if (!isPhasedConv(input, weight, stride, padding, dilation) ||
      llvm::all_of(stride, [](int64_t v) { return v == 1; }))
    return std::nullopt;
  int64_t n = input.getDimSize(0), c = input.getDimSize(1), f = weight.getDimSize(0);
  Type et = input.getElementType();
  SmallVector<int64_t> noPadding(4, 0), ones(2, 1);
  PlannedPhases phases;
  for (const StridePhase &phase :
       stridePhases(stride, weight.getDimSize(2), weight.getDimSize(3))) {
    auto phaseInput =
        RankedTensorType::get({n, c, oh + phase.kernelRows - 1, ow + phase.kernelColumns - 1}, et);
    auto phaseWeight = RankedTensorType::get({f, c, phase.kernelRows, phase.kernelColumns}, et);
    auto layout = flatConvLayout(phaseInput, phaseWeight, ones, noPadding, ones);
    if (!layout)
      return std::nullopt;
    phases.push_back({phase, *layout});
  }
  return phases;
}

/// Phase `phase` of the padded input, as planInputPhases sizes it.
static Value phaseInput(OpBuilder &b, Location loc, Value padded, const StridePhase &phase,
                        const FlatConvLayout &layout, ArrayRef<int64_t> stride) {
  return phaseSlice(b, loc, padded, phase.row, phase.column, layout.oh + phase.kernelRows - 1,
                    layout.ow + phase.kernelColumns - 1, stride);
}

/// A strided 2-D convolution as the sum over the phases of its stride of
/// stride-1 flat-row convolutions (phase (a, b) of the padded input against
/// kernel rows a, a + sh, ... and columns b, b + sw, ...): the direct
/// convolution's work with contiguous loads.
static std::optional<Value> lowerPhasedConv(OpBuilder &b, Location loc, Value input, Value weight,
                                            ArrayRef<int64_t> stride, ArrayRef<int64_t> padding,
                                            ArrayRef<int64_t> dilation, RankedTensorType out) {
  if (!out.hasStaticShape())
    return std::nullopt;
  std::optional<PlannedPhases> phases =
      planInputPhases(tensorType(input), tensorType(weight), out.getDimSize(2), out.getDimSize(3),
                      stride, padding, dilation);
  if (!phases)
    return std::nullopt;
  Value padded =
      padSpatial(b, loc, input, 2, padding, floatConst(b, loc, out.getElementType(), 0.0));
  SmallVector<int64_t> noPadding(4, 0);
  Value sum;
  for (const auto &[phase, layout] : *phases) {
    Value phaseIn = phaseInput(b, loc, padded, phase, layout, stride);
    Value phaseWeight = phaseSlice(b, loc, weight, phase.row, phase.column, phase.kernelRows,
                                   phase.kernelColumns, stride);
    Value partial = lowerFlatConv(b, loc, phaseIn, phaseWeight, noPadding, layout);
    sum = sum ? addTensors(b, loc, sum, partial) : partial;
  }
  return sum;
}

/// dw[f, c, kh, kw] = sum_{n, oh, ow} x[n, c, oh + kh, ow + kw] g[n, f, oh, ow]
/// over flat rows: the output gradient, zero in the dropped columns, and the
/// input are both contiguous along p, so the sum runs in kConvFlatLanes lanes
/// of partial sums (a tile of output and input channels at a time) that are
/// added up at the end.
static Value lowerFlatConvWeightGrad(OpBuilder &b, Location loc, Value input, Value grad,
                                     ArrayRef<int64_t> padding, RankedTensorType weightType,
                                     const FlatConvLayout &l) {
  MLIRContext *ctx = b.getContext();
  Type et = weightType.getElementType();
  RankedTensorType gt = tensorType(grad);
  int64_t n = gt.getDimSize(0), f = gt.getDimSize(1), c = weightType.getDimSize(1);
  int64_t blocks = llvm::divideCeil(l.oh * l.wp, kConvFlatLanes);
  Value flat = flatConvInput(b, loc, input, padding, l);
  // The output gradient on the same rows: zero columns to wp, zero rows to
  // cover whole blocks of lanes.
  int64_t rows = llvm::divideCeil(blocks * kConvFlatLanes, l.wp);
  Value zero = floatConst(b, loc, et, 0.0);
  Value padded = padSpatial(b, loc, grad, 2, {0, rows - l.oh, 0, l.wp - l.ow}, zero);
  Value gradRows =
      tensor::CollapseShapeOp::create(b, loc, RankedTensorType::get({n, f, rows * l.wp}, et),
                                      padded, SmallVector<ReassociationIndices>{{0}, {1}, {2, 3}});
  SmallVector<OpFoldResult> zeros(3, b.getIndexAttr(0)), ones(3, b.getIndexAttr(1));
  SmallVector<OpFoldResult> sizes = {b.getIndexAttr(n), b.getIndexAttr(f),
                                     b.getIndexAttr(blocks * kConvFlatLanes)};
  Value gradFlat = tensor::ExtractSliceOp::create(
      b, loc, RankedTensorType::get({n, f, blocks * kConvFlatLanes}, et), gradRows, zeros, sizes,
      ones);
  Value gradLanes = tensor::ExpandShapeOp::create(
      b, loc, RankedTensorType::get({n, f, blocks, kConvFlatLanes}, et), gradFlat,
      SmallVector<ReassociationIndices>{{0}, {1}, {2, 3}});
  // Loops: f, c, kh, kw, lane, n, block.
  auto d = [&](int64_t i) { return getAffineDimExpr(i, ctx); };
  SmallVector<AffineMap> maps = {
      AffineMap::get(7, 0, {d(5), d(1), d(6) * kConvFlatLanes + d(4) + d(2) * (l.dh * l.wp) + d(3) * l.dw}, ctx),
      AffineMap::get(7, 0, {d(5), d(0), d(6), d(4)}, ctx),
      AffineMap::get(7, 0, {d(0), d(1), d(2), d(3), d(4)}, ctx)};
  SmallVector<utils::IteratorType> iterators(5, utils::IteratorType::parallel);
  iterators.append(2, utils::IteratorType::reduction);
  auto partialType = RankedTensorType::get({f, c, l.kh, l.kw, kConvFlatLanes}, et);
  auto partial =
      linalg::GenericOp::create(b, loc, TypeRange{partialType}, ValueRange{flat, gradLanes},
                                zeroFilled(b, loc, partialType), maps, iterators, yieldMultiplyAdd);
  partial->setAttr(kConvFlatWeightGradAttr, b.getUnitAttr());
  return linalg::ReduceOp::create(
             b, loc, ValueRange{partial.getResult(0)}, ValueRange{zeroFilled(b, loc, weightType)},
             /*dimensions=*/ArrayRef<int64_t>{4},
             [](OpBuilder &nb, Location nl, ValueRange a) {
               linalg::YieldOp::create(nb, nl,
                                       arith::AddFOp::create(nb, nl, a[0], a[1]).getResult());
             })
      .getResult(0);
}

/// w[f, c, kh, kw] -> w'[c, f, KH - 1 - kh, KW - 1 - kw]: the kernel that
/// runs a convolution backwards, from output channels to input channels. A
/// gather, like reverse: tiling mis-sizes the slices of negated dimensions.
static Value flipKernel(OpBuilder &b, Location loc, Value weight) {
  RankedTensorType wt = tensorType(weight);
  int64_t kh = wt.getDimSize(2), kw = wt.getDimSize(3);
  auto type =
      RankedTensorType::get({wt.getDimSize(1), wt.getDimSize(0), kh, kw}, wt.getElementType());
  return generateElements(b, loc, type, weight, [&](OpBuilder &nb, Location nl) {
    auto index = [&](int64_t d) { return linalg::IndexOp::create(nb, nl, d).getResult(); };
    auto flipped = [&](int64_t d, int64_t size) {
      return arith::SubIOp::create(nb, nl, arith::ConstantIndexOp::create(nb, nl, size - 1),
                                   index(d))
          .getResult();
    };
    return tensor::ExtractOp::create(nb, nl, weight,
                                     ValueRange{index(1), index(0), flipped(2, kh), flipped(3, kw)})
        .getResult();
  });
}

/// dx of a 2-D convolution phase by phase: row y of phase (a, b) of the
/// padded input gets sum_i g[y - i] w[a + sh * i] (columns likewise), a
/// stride-1 convolution of the output gradient, padded by the phase kernel's
/// size - 1, with that kernel flipped. The phases are written into the
/// padded input gradient, which is then cropped. Phases no kernel row meets
/// stay zero. nullopt where a phase has no flat layout.
static std::optional<Value> lowerPhasedConvGradInput(OpBuilder &b, Location loc, Value grad,
                                                     Value weight, ArrayRef<int64_t> stride,
                                                     ArrayRef<int64_t> padding,
                                                     ArrayRef<int64_t> dilation,
                                                     RankedTensorType out) {
  RankedTensorType gt = tensorType(grad), wt = tensorType(weight);
  // Dilation comes with unit strides only: the one phase is the whole input
  // and its kernel keeps the dilation.
  SmallVector<int64_t> ones(2, 1);
  bool unitStride = llvm::all_of(stride, [](int64_t v) { return v == 1; });
  ArrayRef<int64_t> phaseDilation = unitStride ? dilation : ArrayRef<int64_t>(ones);
  if (!isPhasedConv(gt, wt, stride, padding, unitStride ? ArrayRef<int64_t>(ones) : dilation) ||
      !out.hasStaticShape() || phaseDilation.size() != 2)
    return std::nullopt;
  int64_t n = out.getDimSize(0), c = out.getDimSize(1), f = wt.getDimSize(0);
  int64_t oh = gt.getDimSize(2), ow = gt.getDimSize(3);
  int64_t hp = out.getDimSize(2) + padding[0] + padding[1];
  int64_t wp = out.getDimSize(3) + padding[2] + padding[3];
  Type et = out.getElementType();
  struct Planned {
    StridePhase phase;
    SmallVector<int64_t> padding;
    FlatConvLayout layout;
  };
  SmallVector<Planned> phases;
  for (const StridePhase &phase : stridePhases(stride, wt.getDimSize(2), wt.getDimSize(3))) {
    // The phase's rows of the padded input, and the output-gradient padding
    // that yields exactly that many.
    if (phase.row >= hp || phase.column >= wp)
      return std::nullopt;
    int64_t rows = llvm::divideCeil(hp - phase.row, stride[0]);
    int64_t columns = llvm::divideCeil(wp - phase.column, stride[1]);
    SmallVector<int64_t> gradPadding = {phaseDilation[0] * (phase.kernelRows - 1), rows - oh,
                                        phaseDilation[1] * (phase.kernelColumns - 1),
                                        columns - ow};
    if (llvm::any_of(gradPadding, [](int64_t p) { return p < 0; }))
      return std::nullopt;
    auto flipped = RankedTensorType::get({c, f, phase.kernelRows, phase.kernelColumns}, et);
    auto layout = flatConvLayout(gt, flipped, ones, gradPadding, phaseDilation);
    if (!layout || layout->oh != rows || layout->ow != columns)
      return std::nullopt;
    phases.push_back({phase, gradPadding, *layout});
  }

  Value padded = zeroFilled(b, loc, RankedTensorType::get({n, c, hp, wp}, et));
  for (const Planned &planned : phases) {
    const StridePhase &phase = planned.phase;
    Value phaseWeight = phaseSlice(b, loc, weight, phase.row, phase.column, phase.kernelRows,
                                   phase.kernelColumns, stride);
    Value part = lowerFlatConv(b, loc, grad, flipKernel(b, loc, phaseWeight), planned.padding,
                               planned.layout);
    padded = insertPhase(b, loc, part, padded, phase.row, phase.column, stride);
  }
  return tensor::ExtractSliceOp::create(b, loc, out, padded,
                                        indexAttrs(b, {0, 0, padding[0], padding[2]}),
                                        indexAttrs(b, out.getShape()), indexAttrs(b, {1, 1, 1, 1}))
      .getResult();
}

/// dw of a strided 2-D convolution phase by phase: kernel rows a, a + sh,
/// ... (columns likewise) are the weight gradient of the stride-1
/// convolution of phase (a, b) of the padded input, written back into dw
/// with the stride.
static std::optional<Value> lowerPhasedConvGradWeight(OpBuilder &b, Location loc, Value input,
                                                      Value grad, ArrayRef<int64_t> stride,
                                                      ArrayRef<int64_t> padding,
                                                      ArrayRef<int64_t> dilation,
                                                      RankedTensorType out) {
  RankedTensorType gt = tensorType(grad);
  if (!gt.hasStaticShape())
    return std::nullopt;
  std::optional<PlannedPhases> phases =
      planInputPhases(tensorType(input), out, gt.getDimSize(2), gt.getDimSize(3), stride, padding,
                      dilation);
  if (!phases)
    return std::nullopt;
  Type et = out.getElementType();
  Value padded = padSpatial(b, loc, input, 2, padding, floatConst(b, loc, et, 0.0));
  SmallVector<int64_t> noPadding(4, 0);
  Value dw = zeroFilled(b, loc, out);
  for (const auto &[phase, layout] : *phases) {
    auto phaseWeight = RankedTensorType::get(
        {out.getDimSize(0), out.getDimSize(1), phase.kernelRows, phase.kernelColumns}, et);
    Value part = lowerFlatConvWeightGrad(b, loc, phaseInput(b, loc, padded, phase, layout, stride),
                                         grad, noPadding, phaseWeight, layout);
    dw = insertPhase(b, loc, part, dw, phase.row, phase.column, stride);
  }
  return dw;
}

/// The fast lowerings of an ungrouped 2-D convolution and its gradients:
/// flat rows, or phase by phase for strides; nullopt where neither applies.
static std::optional<Value> lowerFastConv(OpBuilder &b, Location loc, Value input, Value weight,
                                          ArrayRef<int64_t> stride, ArrayRef<int64_t> padding,
                                          ArrayRef<int64_t> dilation, RankedTensorType out) {
  if (auto layout =
          flatConvLayout(tensorType(input), tensorType(weight), stride, padding, dilation))
    return lowerFlatConv(b, loc, input, weight, padding, *layout);
  return lowerPhasedConv(b, loc, input, weight, stride, padding, dilation, out);
}

static std::optional<Value> lowerFastConvGradWeight(OpBuilder &b, Location loc, Value input,
                                                    Value grad, ArrayRef<int64_t> stride,
                                                    ArrayRef<int64_t> padding,
                                                    ArrayRef<int64_t> dilation,
                                                    RankedTensorType out) {
  if (auto layout = flatConvLayout(tensorType(input), out, stride, padding, dilation))
    return lowerFlatConvWeightGrad(b, loc, input, grad, padding, out, *layout);
  return lowerPhasedConvGradWeight(b, loc, input, grad, stride, padding, dilation, out);
}

/// A grouped convolution (or gradient) as one ungrouped one per group, on
/// channel slices: `operands` are sliced along their given dimension into
/// `groups` equal parts, `lower` computes a group's part of `out`, and the
/// parts fill `out` along `outDim`. Only where every group has at least 8
/// input and 8 output channels (a register tile's worth; depthwise
/// convolutions do better in the general form), and every group lowers.
static std::optional<Value>
lowerPerGroup(OpBuilder &b, Location loc, int64_t groups, int64_t inChannels,
              int64_t outChannels, RankedTensorType out, int64_t outDim,
              ArrayRef<std::pair<Value, int64_t>> operands,
              function_ref<std::optional<Value>(ArrayRef<Value>, RankedTensorType)> lower) {
  if (groups < 2 || inChannels % groups != 0 || outChannels % groups != 0 ||
      inChannels / groups < 8 || outChannels / groups < 8 || !out.hasStaticShape())
    return std::nullopt;
  auto slice = [&](Value v, int64_t dim, int64_t group) {
    RankedTensorType t = tensorType(v);
    SmallVector<int64_t> offsets(t.getRank(), 0), sizes(t.getShape());
    sizes[dim] /= groups;
    offsets[dim] = group * sizes[dim];
    return tensor::ExtractSliceOp::create(b, loc, RankedTensorType::get(sizes, t.getElementType()),
                                          v, indexAttrs(b, offsets), indexAttrs(b, sizes),
                                          indexAttrs(b, SmallVector<int64_t>(t.getRank(), 1)))
        .getResult();
  };
  SmallVector<int64_t> partShape(out.getShape());
  partShape[outDim] /= groups;
  auto partType = RankedTensorType::get(partShape, out.getElementType());
  Value result = tensor::EmptyOp::create(b, loc, out.getShape(), out.getElementType());
  for (int64_t group = 0; group < groups; ++group) {
    SmallVector<Value> slices;
    for (auto [value, dim] : operands)
      slices.push_back(slice(value, dim, group));
    std::optional<Value> part = lower(slices, partType);
    if (!part)
      return std::nullopt;
    SmallVector<int64_t> offsets(out.getRank(), 0);
    offsets[outDim] = group * partShape[outDim];
    result = tensor::InsertSliceOp::create(b, loc, *part, result, indexAttrs(b, offsets),
                                           indexAttrs(b, partShape),
                                           indexAttrs(b, SmallVector<int64_t>(out.getRank(), 1)));
  }
  return result;
}

/// Convolution of any spatial rank with groups, as one linalg.generic over
/// (n, g, f, o..., c, k...). The channel axes are split into (group, channel
/// in group) first so that every loop indexes some operand directly.
template <typename OpT> struct ConvPattern : OpRewritePattern<OpT> {
  using OpRewritePattern<OpT>::OpRewritePattern;
  LogicalResult matchAndRewrite(OpT op, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    RankedTensorType out = op.getType(), wt = op.getWeight().getType();
    int64_t spatial = out.getRank() - 2;
    int64_t groups = op.getGroups();
    int64_t cg = wt.getDimSize(1), fTotal = wt.getDimSize(0);
    if (ShapedType::isDynamic(cg) || ShapedType::isDynamic(fTotal))
      return rewriter.notifyMatchFailure(op, "dynamic channel counts");
    if (llvm::any_of(out.getShape().drop_front(2), ShapedType::isDynamic))
      return rewriter.notifyMatchFailure(op, "dynamic spatial dimensions");
    int64_t fg = fTotal / groups;
    Type et = out.getElementType();
    Value zero = floatConst(rewriter, loc, et, 0.0);
    // Without input elements or channels, every window sums nothing: the
    // output is the bias alone (zero-width inputs with padding have windows).
    if (hasNoElements(op.getInput()) || hasNoElements(op.getWeight()) ||
        hasNoElements(op.getResult())) {
      SmallVector<OpFoldResult> sizes = {dimOf(rewriter, loc, op.getInput(), 0)};
      for (int64_t i = 1; i < out.getRank(); ++i)
        sizes.push_back(rewriter.getIndexAttr(out.getDimSize(i)));
      Value zeros =
          linalg::FillOp::create(rewriter, loc, zero, emptyTensor(rewriter, loc, out, sizes))
              .getResult(0);
      rewriter.replaceOp(op, addChannelBias(rewriter, loc, zeros, op.getBias(), out));
      return success();
    }
    ArrayRef<int64_t> stride = op.getStride(), padding = op.getPadding(),
                      dilation = op.getDilation();
    auto lowerGroup = [&](ArrayRef<Value> operands, RankedTensorType part) {
      return lowerFastConv(rewriter, loc, operands[0], operands[1], stride, padding, dilation,
                           part);
    };
    std::optional<Value> fast =
        groups == 1
            ? lowerGroup({op.getInput(), op.getWeight()}, out)
            : lowerPerGroup(rewriter, loc, groups, cg * groups, fTotal, out, /*outDim=*/1,
                            {{op.getInput(), 1}, {op.getWeight(), 0}}, lowerGroup);
    if (fast) {
      rewriter.replaceOp(op, addChannelBias(rewriter, loc, *fast, op.getBias(), out));
      return success();
    }
    Value input = padSpatial(rewriter, loc, op.getInput(), 2, op.getPadding(), zero);
    Value groupedInput = splitAxis(rewriter, loc, input, 1, groups);           // [N, G, Cg, S...]
    Value groupedWeight = splitAxis(rewriter, loc, op.getWeight(), 0, groups); // [G, Fg, Cg, K...]
    SmallVector<int64_t> gShape = {out.getDimSize(0), groups, fg};
    SmallVector<OpFoldResult> sizes = {dimOf(rewriter, loc, op.getInput(), 0),
                                       rewriter.getIndexAttr(groups), rewriter.getIndexAttr(fg)};
    for (int64_t i = 0; i < spatial; ++i) {
      gShape.push_back(out.getDimSize(2 + i));
      sizes.push_back(rewriter.getIndexAttr(out.getDimSize(2 + i)));
    }
    auto groupedOut = RankedTensorType::get(gShape, et);
    Value init =
        linalg::FillOp::create(rewriter, loc, zero, emptyTensor(rewriter, loc, groupedOut, sizes))
            .getResult(0);
    // Loops: n, g, f, o_0..o_{s-1}, c, k_0..k_{s-1}
    int64_t numLoops = 3 + spatial + 1 + spatial;
    auto d = [&](int64_t i) { return getAffineDimExpr(i, ctx); };
    AffineExpr n = d(0), g = d(1), f = d(2), c = d(3 + spatial);
    SmallVector<AffineExpr> inE = {n, g, c}, wE = {g, f, c}, oE = {n, g, f};
    for (int64_t i = 0; i < spatial; ++i) {
      AffineExpr o = d(3 + i), k = d(4 + spatial + i);
      inE.push_back(o * op.getStride()[i] + k * op.getDilation()[i]);
      wE.push_back(k);
      oE.push_back(o);
    }
    SmallVector<AffineMap> maps = {AffineMap::get(numLoops, 0, inE, ctx),
                                   AffineMap::get(numLoops, 0, wE, ctx),
                                   AffineMap::get(numLoops, 0, oE, ctx)};
    SmallVector<utils::IteratorType> iterators(3 + spatial, utils::IteratorType::parallel);
    iterators.append(1 + spatial, utils::IteratorType::reduction);
    auto generic = linalg::GenericOp::create(rewriter, loc, TypeRange{groupedOut},
                                             ValueRange{groupedInput, groupedWeight}, init, maps,
                                             iterators, yieldMultiplyAdd);
    // Tells mithril-cpu-schedule the loop layout (it tiles convolutions like
    // matmuls: output channels by output columns).
    generic->setAttr(kConvSpatialAttr, rewriter.getI64IntegerAttr(spatial));
    Value result = mergeAxes(rewriter, loc, generic.getResult(0), 1, out);
    rewriter.replaceOp(op, addChannelBias(rewriter, loc, result, op.getBias(), out));
    return success();
  }

  /// result + bias[C_out] broadcast over [N, C_out, spatial...], into a new
  /// tensor of type `out`; `result` itself without a bias.
  static Value addChannelBias(OpBuilder &b, Location loc, Value result, Value bias,
                              RankedTensorType out) {
    if (!bias)
      return result;
    MLIRContext *ctx = b.getContext();
    SmallVector<AffineMap> maps = {AffineMap::get(out.getRank(), 0, getAffineDimExpr(1, ctx)),
                                   b.getMultiDimIdentityMap(out.getRank()),
                                   b.getMultiDimIdentityMap(out.getRank())};
    SmallVector<utils::IteratorType> iterators(out.getRank(), utils::IteratorType::parallel);
    SmallVector<OpFoldResult> sizes;
    for (int64_t i = 0; i < out.getRank(); ++i)
      sizes.push_back(dimOf(b, loc, result, i));
    return linalg::GenericOp::create(b, loc, TypeRange{out}, ValueRange{bias, result},
                                     ValueRange{emptyTensor(b, loc, out, sizes)}, maps, iterators,
                                     [&](OpBuilder &nb, Location l, ValueRange a) {
                                       linalg::YieldOp::create(
                                           nb, l,
                                           arith::AddFOp::create(nb, l, a[1], a[0]).getResult());
                                     })
        .getResult(0);
  }
};

/// For a gather-form window gradient: given input position `i` and window
/// offset `k` along one spatial dimension, the output position `o` whose
/// window covers `i` through `k` (when `valid`).
static std::pair<Value, Value> windowSource(OpBuilder &b, Location loc, Value i, Value k,
                                            int64_t stride, int64_t padLo, int64_t dilation,
                                            int64_t outSize) {
  auto idx = [&](int64_t v) { return arith::ConstantIndexOp::create(b, loc, v).getResult(); };
  Value t = arith::SubIOp::create(b, loc, arith::AddIOp::create(b, loc, i, idx(padLo)),
                                  arith::MulIOp::create(b, loc, k, idx(dilation)));
  Value nonNeg = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, t, idx(0));
  Value tc = arith::SelectOp::create(b, loc, nonNeg, t, idx(0));
  Value o = arith::DivUIOp::create(b, loc, tc, idx(stride));
  Value exact = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                      arith::RemUIOp::create(b, loc, tc, idx(stride)), idx(0));
  Value inRange = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, o, idx(outSize));
  Value valid =
      arith::AndIOp::create(b, loc, nonNeg, arith::AndIOp::create(b, loc, exact, inRange));
  Value oc = arith::SelectOp::create(b, loc, valid, o, idx(0));
  return {oc, valid};
}

/// Gradient of a convolution's input, in gather form over (n, g, c, i..., f,
/// k...): each input position sums the output gradients whose windows cover
/// it.
struct ConvGradInputPattern : OpRewritePattern<ConvGradInputOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ConvGradInputOp op, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    RankedTensorType out = op.getType(), gt = op.getGrad().getType(), wt = op.getWeight().getType();
    if (!out.hasStaticShape() || !gt.hasStaticShape() || !wt.hasStaticShape())
      return rewriter.notifyMatchFailure(op, "dynamic shapes");
    // No output gradient or no weights: no gradient reaches the input.
    if (hasNoElements(op.getResult()) || hasNoElements(op.getGrad()) ||
        hasNoElements(op.getWeight())) {
      rewriter.replaceOp(op, zeroFilled(rewriter, loc, out));
      return success();
    }
    int64_t spatial = out.getRank() - 2, groups = op.getGroups();
    auto lowerGroup = [&](ArrayRef<Value> operands, RankedTensorType part) {
      return lowerPhasedConvGradInput(rewriter, loc, operands[0], operands[1], op.getStride(),
                                      op.getPadding(), op.getDilation(), part);
    };
    std::optional<Value> fast =
        groups == 1 ? lowerGroup({op.getGrad(), op.getWeight()}, out)
                    : lowerPerGroup(rewriter, loc, groups, out.getDimSize(1), wt.getDimSize(0),
                                    out, /*outDim=*/1, {{op.getGrad(), 1}, {op.getWeight(), 0}},
                                    lowerGroup);
    if (fast) {
      rewriter.replaceOp(op, *fast);
      return success();
    }
    int64_t cg = wt.getDimSize(1);
    Type et = out.getElementType();
    Value grad = splitAxis(rewriter, loc, op.getGrad(), 1, groups);     // [N, G, Fg, O...]
    Value weight = splitAxis(rewriter, loc, op.getWeight(), 0, groups); // [G, Fg, Cg, K...]
    SmallVector<int64_t> shape = {out.getDimSize(0), groups, cg};
    llvm::append_range(shape, out.getShape().drop_front(2));
    auto groupedOut = RankedTensorType::get(shape, et);
    Value init = zeroFilled(rewriter, loc, RankedTensorType::get(shape, et));
    // Loops: n, g, c, i_0.., f, k_0..
    int64_t numLoops = 3 + spatial + 1 + spatial;
    auto d = [&](int64_t i) { return getAffineDimExpr(i, ctx); };
    SmallVector<AffineExpr> wE = {d(1), d(3 + spatial), d(2)}, oE = {d(0), d(1), d(2)};
    for (int64_t j = 0; j < spatial; ++j) {
      wE.push_back(d(4 + spatial + j));
      oE.push_back(d(3 + j));
    }
    SmallVector<AffineMap> maps = {AffineMap::get(numLoops, 0, wE, ctx),
                                   AffineMap::get(numLoops, 0, oE, ctx)};
    SmallVector<utils::IteratorType> iterators(3 + spatial, utils::IteratorType::parallel);
    iterators.append(1 + spatial, utils::IteratorType::reduction);
    Value result =
        linalg::GenericOp::create(
            rewriter, loc, TypeRange{groupedOut}, ValueRange{weight}, init, maps, iterators,
            [&](OpBuilder &b, Location l, ValueRange a) {
              SmallVector<Value> gIdx = {linalg::IndexOp::create(b, l, 0),
                                         linalg::IndexOp::create(b, l, 1),
                                         linalg::IndexOp::create(b, l, 3 + spatial)};
              Value valid = arith::ConstantIntOp::create(b, l, 1, 1);
              for (int64_t j = 0; j < spatial; ++j) {
                auto [o, ok] =
                    windowSource(b, l, linalg::IndexOp::create(b, l, 3 + j),
                                 linalg::IndexOp::create(b, l, 4 + spatial + j), op.getStride()[j],
                                 op.getPadding()[2 * j], op.getDilation()[j], gt.getDimSize(2 + j));
                gIdx.push_back(o);
                valid = arith::AndIOp::create(b, l, valid, ok);
              }
              Value gv = tensor::ExtractOp::create(b, l, grad, gIdx);
              Value prod = arith::MulFOp::create(b, l, gv, a[0]);
              Value contrib = arith::SelectOp::create(b, l, valid, prod, floatConst(b, l, et, 0.0));
              linalg::YieldOp::create(b, l, arith::AddFOp::create(b, l, a[1], contrib).getResult());
            })
            .getResult(0);
    rewriter.replaceOp(op, mergeAxes(rewriter, loc, result, 1, out));
    return success();
  }
};

/// Gradient of a convolution's weight over (g, f, c, k..., n, o...).
struct ConvGradWeightPattern : OpRewritePattern<ConvGradWeightOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ConvGradWeightOp op, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    RankedTensorType out = op.getType(), gt = op.getGrad().getType();
    if (!out.hasStaticShape() || !gt.hasStaticShape())
      return rewriter.notifyMatchFailure(op, "dynamic shapes");
    // No inputs or no output gradient (a batch of 0): a zero weight gradient.
    if (hasNoElements(op.getResult()) || hasNoElements(op.getGrad()) ||
        hasNoElements(op.getInput())) {
      rewriter.replaceOp(op, zeroFilled(rewriter, loc, out));
      return success();
    }
    int64_t spatial = out.getRank() - 2, groups = op.getGroups();
    int64_t cg = out.getDimSize(1), fg = out.getDimSize(0) / groups;
    Type et = out.getElementType();
    Value zero = floatConst(rewriter, loc, et, 0.0);
    auto lowerGroup = [&](ArrayRef<Value> operands, RankedTensorType part) {
      return lowerFastConvGradWeight(rewriter, loc, operands[0], operands[1], op.getStride(),
                                     op.getPadding(), op.getDilation(), part);
    };
    std::optional<Value> fast =
        groups == 1 ? lowerGroup({op.getInput(), op.getGrad()}, out)
                    : lowerPerGroup(rewriter, loc, groups, cg * groups, out.getDimSize(0), out,
                                    /*outDim=*/0, {{op.getInput(), 1}, {op.getGrad(), 1}},
                                    lowerGroup);
    if (fast) {
      rewriter.replaceOp(op, *fast);
      return success();
    }
    Value input = padSpatial(rewriter, loc, op.getInput(), 2, op.getPadding(), zero);
    input = splitAxis(rewriter, loc, input, 1, groups);             // [N, G, Cg, S...]
    Value grad = splitAxis(rewriter, loc, op.getGrad(), 1, groups); // [N, G, Fg, O...]
    SmallVector<int64_t> shape = {groups, fg, cg};
    llvm::append_range(shape, out.getShape().drop_front(2));
    auto groupedOut = RankedTensorType::get(shape, et);
    Value init = zeroFilled(rewriter, loc, RankedTensorType::get(shape, et));
    // Loops: g, f, c, k_0.., n, o_0..
    int64_t numLoops = 3 + spatial + 1 + spatial;
    auto d = [&](int64_t i) { return getAffineDimExpr(i, ctx); };
    AffineExpr n = d(3 + spatial);
    SmallVector<AffineExpr> inE = {n, d(0), d(2)}, gE = {n, d(0), d(1)}, oE = {d(0), d(1), d(2)};
    for (int64_t j = 0; j < spatial; ++j) {
      AffineExpr k = d(3 + j), o = d(4 + spatial + j);
      inE.push_back(o * op.getStride()[j] + k * op.getDilation()[j]);
      gE.push_back(o);
      oE.push_back(k);
    }
    SmallVector<AffineMap> maps = {AffineMap::get(numLoops, 0, inE, ctx),
                                   AffineMap::get(numLoops, 0, gE, ctx),
                                   AffineMap::get(numLoops, 0, oE, ctx)};
    SmallVector<utils::IteratorType> iterators(3 + spatial, utils::IteratorType::parallel);
    iterators.append(1 + spatial, utils::IteratorType::reduction);
    Value result =
        linalg::GenericOp::create(rewriter, loc, TypeRange{groupedOut}, ValueRange{input, grad},
                                  init, maps, iterators, yieldMultiplyAdd)
            .getResult(0);
    rewriter.replaceOp(op, mergeAxes(rewriter, loc, result, 0, out));
    return success();
  }
};

/// Non-overlapping 2-D windows (stride == kernel, no padding, unit dilation,
/// static sizes the kernel divides): the shape [lead..., OH, KH, OW, KW] in
/// which a tensor [lead..., H, W] is viewed, so that a window is a slice of a
/// projected permutation and pooling vectorizes along the output columns.
/// None otherwise.
static std::optional<SmallVector<int64_t>>
windowViewShape(RankedTensorType t, ArrayRef<int64_t> kernel, ArrayRef<int64_t> stride,
                ArrayRef<int64_t> padding, ArrayRef<int64_t> dilation) {
  int64_t lead = t.getRank() - 2;
  if (kernel.size() != 2 || lead < 0 || !t.hasStaticShape() ||
      llvm::any_of(padding, [](int64_t p) { return p != 0; }) ||
      llvm::any_of(dilation, [](int64_t d) { return d != 1; }) ||
      !isa<FloatType>(t.getElementType()))
    return std::nullopt;
  SmallVector<int64_t> shape(t.getShape().take_front(lead));
  for (int64_t j = 0; j < 2; ++j) {
    int64_t size = t.getDimSize(lead + j);
    if (stride[j] != kernel[j] || kernel[j] < 1 || size % kernel[j] != 0)
      return std::nullopt;
    shape.append({size / kernel[j], kernel[j]});
  }
  return shape;
}

/// The grouping of [lead..., OH, KH, OW, KW] into [lead..., H, W].
static SmallVector<ReassociationIndices> windowGrouping(int64_t lead) {
  SmallVector<ReassociationIndices> groups;
  for (int64_t i = 0; i < lead; ++i)
    groups.push_back({i});
  groups.push_back({lead, lead + 1});
  groups.push_back({lead + 2, lead + 3});
  return groups;
}

static Value windowView(OpBuilder &b, Location loc, Value input, ArrayRef<int64_t> shape) {
  RankedTensorType t = tensorType(input);
  return tensor::ExpandShapeOp::create(b, loc, RankedTensorType::get(shape, t.getElementType()),
                                       input, windowGrouping(t.getRank() - 2));
}

/// Max or average pooling over non-overlapping windows (see windowView):
/// loops lead..., oh, ow, kh, kw.
static Value lowerWindowPool(OpBuilder &b, Location loc, Value view, RankedTensorType out,
                             bool isMax, Value identity) {
  MLIRContext *ctx = b.getContext();
  int64_t lead = out.getRank() - 2, loops = lead + 4;
  Value filled = linalg::FillOp::create(b, loc, identity, emptyTensor(b, loc, out, {}))
                     .getResult(0);
  auto d = [&](int64_t i) { return getAffineDimExpr(i, ctx); };
  SmallVector<AffineExpr> inE, outE;
  for (int64_t i = 0; i < lead; ++i) {
    inE.push_back(d(i));
    outE.push_back(d(i));
  }
  inE.append({d(lead), d(lead + 2), d(lead + 1), d(lead + 3)});
  outE.append({d(lead), d(lead + 1)});
  SmallVector<utils::IteratorType> iterators(lead + 2, utils::IteratorType::parallel);
  iterators.append(2, utils::IteratorType::reduction);
  auto generic = linalg::GenericOp::create(
      b, loc, TypeRange{out}, ValueRange{view}, ValueRange{filled},
      SmallVector<AffineMap>{AffineMap::get(loops, 0, inE, ctx),
                             AffineMap::get(loops, 0, outE, ctx)},
      iterators, [&](OpBuilder &nb, Location l, ValueRange a) {
        Value r = isMax ? arith::MaximumFOp::create(nb, l, a[0], a[1]).getResult()
                        : arith::AddFOp::create(nb, l, a[0], a[1]).getResult();
        linalg::YieldOp::create(nb, l, r);
      });
  generic->setAttr(kPoolWindowAttr,
                   b.getDenseI64ArrayAttr({lead + 1, lead + 2, lead + 3}));
  return generic.getResult(0);
}

/// The gradient of pooling over non-overlapping windows, written through the
/// window view of the input's shape: each element gets its window's output
/// gradient where it equals the window's maximum (max pooling, every tie
/// included as in the gather form), or the gradient over the window size.
/// Loops lead..., oh, kh, ow, kw, all parallel.
static Value lowerWindowPoolGrad(OpBuilder &b, Location loc, RankedTensorType out, Value grad,
                                 ArrayRef<int64_t> viewShape, Value inputView, Value pooled,
                                 int64_t count) {
  MLIRContext *ctx = b.getContext();
  int64_t lead = out.getRank() - 2, loops = lead + 4;
  Type et = out.getElementType();
  auto viewType = RankedTensorType::get(viewShape, et);
  auto d = [&](int64_t i) { return getAffineDimExpr(i, ctx); };
  SmallVector<AffineExpr> all, windowE;
  for (int64_t i = 0; i < loops; ++i)
    all.push_back(d(i));
  for (int64_t i = 0; i < lead; ++i)
    windowE.push_back(d(i));
  windowE.append({d(lead), d(lead + 2)});
  AffineMap identity = AffineMap::get(loops, 0, all, ctx),
            perWindow = AffineMap::get(loops, 0, windowE, ctx);
  SmallVector<Value> ins = {grad};
  SmallVector<AffineMap> maps = {perWindow};
  if (inputView) {
    ins.append({inputView, pooled});
    maps.append({identity, perWindow});
  }
  maps.push_back(identity);
  SmallVector<utils::IteratorType> iterators(loops, utils::IteratorType::parallel);
  auto generic = linalg::GenericOp::create(
      b, loc, TypeRange{viewType}, ins, ValueRange{emptyTensor(b, loc, viewType, {})}, maps,
      iterators, [&](OpBuilder &nb, Location l, ValueRange a) {
        Value r;
        if (inputView) {
          Value hit = arith::CmpFOp::create(nb, l, arith::CmpFPredicate::OEQ, a[1], a[2]);
          r = arith::SelectOp::create(nb, l, hit, a[0], floatConst(nb, l, et, 0.0));
        } else {
          r = arith::DivFOp::create(nb, l, a[0], floatConst(nb, l, et, count));
        }
        linalg::YieldOp::create(nb, l, r);
      });
  generic->setAttr(kPoolWindowAttr,
                   b.getDenseI64ArrayAttr({lead + 1, lead + 2, lead + 3}));
  return tensor::CollapseShapeOp::create(b, loc, out, generic.getResult(0),
                                         windowGrouping(lead));
}

/// Gradients of max and average pooling in gather form over (lead..., i...,
/// k...).
template <typename OpT>
struct PoolGradPattern : OpRewritePattern<OpT> {
  using OpRewritePattern<OpT>::OpRewritePattern;
  LogicalResult matchAndRewrite(OpT op, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    constexpr bool isMax = std::is_same_v<OpT, MaxPoolGradOp>;
    RankedTensorType out = op.getType(), gt = op.getGrad().getType();
    if (!out.hasStaticShape() || !gt.hasStaticShape())
      return rewriter.notifyMatchFailure(op, "dynamic shapes");
    ArrayRef<int64_t> kernel = op.getKernelSize();
    int64_t spatial = kernel.size(), lead = out.getRank() - spatial;
    Type et = out.getElementType();
    // Non-overlapping windows: a vectorizable elementwise form.
    if (auto viewShape = windowViewShape(out, kernel, op.getStride(), op.getPadding(),
                                         op.getDilation())) {
      int64_t count = 1;
      for (int64_t k : kernel)
        count *= k;
      Value inputView, pooled;
      if constexpr (isMax) {
        inputView = windowView(rewriter, loc, op.getInput(), *viewShape);
        pooled = op.getOutput();
      }
      rewriter.replaceOp(op, lowerWindowPoolGrad(rewriter, loc, out, op.getGrad(), *viewShape,
                                                 inputView, pooled, count));
      return success();
    }
    Value init = zeroFilled(rewriter, loc, out);
    Value window = tensor::EmptyOp::create(rewriter, loc, kernel, et);
    int64_t numLoops = lead + 2 * spatial;
    auto d = [&](int64_t i) { return getAffineDimExpr(i, ctx); };
    SmallVector<AffineExpr> wE, oE;
    for (int64_t i = 0; i < lead + spatial; ++i)
      oE.push_back(d(i));
    for (int64_t j = 0; j < spatial; ++j)
      wE.push_back(d(lead + spatial + j));
    SmallVector<Value> ins = {window};
    SmallVector<AffineMap> maps = {AffineMap::get(numLoops, 0, wE, ctx)};
    Value pooled, grad = op.getGrad();
    if constexpr (isMax) {
      ins.push_back(op.getInput());
      maps.push_back(AffineMap::get(numLoops, 0, oE, ctx));
      pooled = op.getOutput();
    }
    maps.push_back(AffineMap::get(numLoops, 0, oE, ctx));
    SmallVector<utils::IteratorType> iterators(lead + spatial, utils::IteratorType::parallel);
    iterators.append(spatial, utils::IteratorType::reduction);
    int64_t count = 1;
    for (int64_t k : kernel)
      count *= k;
    Value result =
        linalg::GenericOp::create(
            rewriter, loc, TypeRange{out}, ins, init, maps, iterators,
            [&](OpBuilder &b, Location l, ValueRange a) {
              SmallVector<Value> gIdx;
              for (int64_t i = 0; i < lead; ++i)
                gIdx.push_back(linalg::IndexOp::create(b, l, i));
              Value valid = arith::ConstantIntOp::create(b, l, 1, 1);
              for (int64_t j = 0; j < spatial; ++j) {
                auto [o, ok] = windowSource(b, l, linalg::IndexOp::create(b, l, lead + j),
                                            linalg::IndexOp::create(b, l, lead + spatial + j),
                                            op.getStride()[j], op.getPadding()[2 * j],
                                            op.getDilation()[j], gt.getDimSize(lead + j));
                gIdx.push_back(o);
                valid = arith::AndIOp::create(b, l, valid, ok);
              }
              Value gv = tensor::ExtractOp::create(b, l, grad, gIdx);
              Value contrib;
              if constexpr (isMax) {
                Value y = tensor::ExtractOp::create(b, l, pooled, gIdx);
                Value hit = arith::CmpFOp::create(b, l, arith::CmpFPredicate::OEQ, a[1], y);
                valid = arith::AndIOp::create(b, l, valid, hit);
                contrib = gv;
              } else {
                contrib = arith::DivFOp::create(b, l, gv, floatConst(b, l, et, count));
              }
              contrib = arith::SelectOp::create(b, l, valid, contrib, floatConst(b, l, et, 0.0));
              linalg::YieldOp::create(b, l, arith::AddFOp::create(b, l, a.back(), contrib).getResult());
            })
            .getResult(0);
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// Embedding gradient over (v, d, idx...): row v sums the gradients of the
/// lookups of v.
struct EmbeddingGradPattern : OpRewritePattern<EmbeddingGradOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(EmbeddingGradOp op, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    RankedTensorType out = op.getType(), it = op.getIndices().getType();
    if (!out.hasStaticShape() || !it.hasStaticShape())
      return rewriter.notifyMatchFailure(op, "dynamic shapes");
    Type et = out.getElementType();
    Value init = zeroFilled(rewriter, loc, out);
    int64_t r = it.getRank(), numLoops = 2 + r;
    auto d = [&](int64_t i) { return getAffineDimExpr(i, ctx); };
    SmallVector<AffineExpr> iE, gE;
    for (int64_t i = 0; i < r; ++i) {
      iE.push_back(d(2 + i));
      gE.push_back(d(2 + i));
    }
    gE.push_back(d(1));
    SmallVector<AffineMap> maps = {AffineMap::get(numLoops, 0, iE, ctx),
                                   AffineMap::get(numLoops, 0, gE, ctx),
                                   AffineMap::get(numLoops, 0, {d(0), d(1)}, ctx)};
    SmallVector<utils::IteratorType> iterators(2, utils::IteratorType::parallel);
    iterators.append(r, utils::IteratorType::reduction);
    Value result =
        linalg::GenericOp::create(
            rewriter, loc, TypeRange{out}, ValueRange{op.getIndices(), op.getGrad()}, init, maps,
            iterators,
            [&](OpBuilder &b, Location l, ValueRange a) {
              Value row = arith::IndexCastOp::create(b, l, a[0].getType(),
                                                     linalg::IndexOp::create(b, l, 0));
              Value hit = arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq, row, a[0]);
              Value contrib = arith::SelectOp::create(b, l, hit, a[1], floatConst(b, l, et, 0.0));
              linalg::YieldOp::create(b, l, arith::AddFOp::create(b, l, a[2], contrib).getResult());
            })
            .getResult(0);
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// Slice gradient in gather form: each input position takes the gradient of
/// the slice element it became, or zero. (A strided tensor.insert_slice
/// would do, but vector-transfer folding mishandles its strides.)
struct SliceGradPattern : OpRewritePattern<SliceGradOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(SliceGradOp op, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    RankedTensorType out = op.getType(), gt = op.getGrad().getType();
    if (!out.hasStaticShape() || !gt.hasStaticShape())
      return rewriter.notifyMatchFailure(op, "dynamic shapes");
    // An empty slice passes no gradient (and has no element to read).
    if (llvm::is_contained(gt.getShape(), 0)) {
      rewriter.replaceOp(op, zeroFilled(rewriter, loc, out));
      return success();
    }
    int64_t rank = out.getRank();
    Type et = out.getElementType();
    SmallVector<int64_t> start(rank, 0), step(rank, 1);
    for (auto [i, axis] : llvm::enumerate(*normalizeAxes(op.getAxes(), rank))) {
      int64_t dim = out.getDimSize(axis);
      int64_t s = op.getStart()[i];
      start[axis] = std::clamp<int64_t>(s < 0 ? s + dim : s, 0, dim);
      step[axis] = op.getStep()[i];
    }
    Value init = tensor::EmptyOp::create(rewriter, loc, out.getShape(), et);
    SmallVector<AffineMap> maps = {rewriter.getMultiDimIdentityMap(rank)};
    SmallVector<utils::IteratorType> iterators(rank, utils::IteratorType::parallel);
    Value grad = op.getGrad();
    Value result =
        linalg::GenericOp::create(
            rewriter, loc, TypeRange{out}, ValueRange{}, init, maps, iterators,
            [&](OpBuilder &b, Location l, ValueRange) {
              auto idx = [&](int64_t v) { return arith::ConstantIndexOp::create(b, l, v).getResult(); };
              Value valid = arith::ConstantIntOp::create(b, l, 1, 1);
              SmallVector<Value> src;
              for (int64_t d = 0; d < rank; ++d) {
                Value i = linalg::IndexOp::create(b, l, d);
                Value t = arith::SubIOp::create(b, l, i, idx(start[d]));
                Value nonNeg = arith::CmpIOp::create(b, l, arith::CmpIPredicate::sge, t, idx(0));
                Value tc = arith::SelectOp::create(b, l, nonNeg, t, idx(0));
                Value q = arith::DivUIOp::create(b, l, tc, idx(step[d]));
                Value exact = arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq,
                                                    arith::RemUIOp::create(b, l, tc, idx(step[d])),
                                                    idx(0));
                Value inRange = arith::CmpIOp::create(b, l, arith::CmpIPredicate::slt, q,
                                                      idx(gt.getDimSize(d)));
                Value ok = arith::AndIOp::create(b, l, nonNeg,
                                                 arith::AndIOp::create(b, l, exact, inRange));
                valid = arith::AndIOp::create(b, l, valid, ok);
                src.push_back(arith::SelectOp::create(b, l, ok, q, idx(0)));
              }
              Value v = tensor::ExtractOp::create(b, l, grad, src);
              Value zero = arith::ConstantOp::create(b, l, b.getZeroAttr(et));
              linalg::YieldOp::create(b, l, arith::SelectOp::create(b, l, valid, v, zero).getResult());
            })
            .getResult(0);
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// Max and average pooling of any spatial rank, batched or not.
template <typename OpT>
struct PoolPattern : OpRewritePattern<OpT> {
  using OpRewritePattern<OpT>::OpRewritePattern;
  LogicalResult matchAndRewrite(OpT op, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    bool isMax = !isa<AvgPool2DOp>(op.getOperation());
    RankedTensorType out = op.getType();
    ArrayRef<int64_t> kernel = op.getKernelSize();
    int64_t spatial = kernel.size();
    int64_t lead = out.getRank() - spatial;
    Type et = out.getElementType();
    auto ft = cast<FloatType>(et);
    Value padValue =
        isMax ? arith::ConstantOp::create(
                    rewriter, loc,
                    rewriter.getFloatAttr(et, APFloat::getInf(ft.getFloatSemantics(), true)))
                    .getResult()
              : floatConst(rewriter, loc, et, 0.0);
    if (auto viewShape = windowViewShape(op.getInput().getType(), kernel, op.getStride(),
                                         op.getPadding(), op.getDilation())) {
      // The pad value is also the reduction's identity (-inf or 0).
      Value view = windowView(rewriter, loc, op.getInput(), *viewShape);
      Value result = lowerWindowPool(rewriter, loc, view, out, isMax, padValue);
      if (!isMax)
        result = divideByScalar(rewriter, loc, result,
                                floatConst(rewriter, loc, et, kernel[0] * kernel[1]));
      rewriter.replaceOp(op, result);
      return success();
    }
    Value input = padSpatial(rewriter, loc, op.getInput(), lead, op.getPadding(), padValue);
    SmallVector<OpFoldResult> sizes;
    for (int64_t i = 0; i < lead; ++i)
      sizes.push_back(dimOf(rewriter, loc, op.getInput(), i));
    for (int64_t i = 0; i < spatial; ++i) {
      if (!out.isDynamicDim(lead + i)) {
        sizes.push_back(rewriter.getIndexAttr(out.getDimSize(lead + i)));
        continue;
      }
      // A size known at run time only: (padded - span) / stride + 1, the
      // shape rule having checked the window fits wherever it is static.
      Value padded = getValueOrCreateConstantIndexOp(rewriter, loc,
                                                     dimOf(rewriter, loc, input, lead + i));
      int64_t span = op.getDilation()[i] * (kernel[i] - 1) + 1;
      auto idx = [&](int64_t v) { return arith::ConstantIndexOp::create(rewriter, loc, v); };
      Value room = arith::MaxSIOp::create(
          rewriter, loc, arith::SubIOp::create(rewriter, loc, padded, idx(span - 1)), idx(0));
      Value count = arith::CeilDivSIOp::create(rewriter, loc, room, idx(op.getStride()[i]));
      sizes.push_back(count.getDefiningOp()->getResult(0));
    }
    Value init = linalg::FillOp::create(rewriter, loc, padValue,
                                        emptyTensor(rewriter, loc, out, sizes))
                     .getResult(0);
    Value window = tensor::EmptyOp::create(rewriter, loc, kernel, et);
    int64_t numLoops = lead + 2 * spatial;
    auto d = [&](int64_t i) { return getAffineDimExpr(i, ctx); };
    SmallVector<AffineExpr> inE, wE, oE;
    for (int64_t i = 0; i < lead; ++i) {
      inE.push_back(d(i));
      oE.push_back(d(i));
    }
    for (int64_t i = 0; i < spatial; ++i) {
      AffineExpr o = d(lead + i), k = d(lead + spatial + i);
      inE.push_back(o * op.getStride()[i] + k * op.getDilation()[i]);
      wE.push_back(k);
      oE.push_back(o);
    }
    SmallVector<AffineMap> maps = {AffineMap::get(numLoops, 0, inE, ctx),
                                   AffineMap::get(numLoops, 0, wE, ctx),
                                   AffineMap::get(numLoops, 0, oE, ctx)};
    SmallVector<utils::IteratorType> iterators(lead + spatial, utils::IteratorType::parallel);
    iterators.append(spatial, utils::IteratorType::reduction);
    Value result =
        linalg::GenericOp::create(
            rewriter, loc, TypeRange{out}, ValueRange{input, window}, init, maps, iterators,
            [&](OpBuilder &b, Location l, ValueRange a) {
              Value r = isMax ? arith::MaximumFOp::create(b, l, a[0], a[2]).getResult()
                              : arith::AddFOp::create(b, l, a[0], a[2]).getResult();
              linalg::YieldOp::create(b, l, r);
            })
            .getResult(0);
    if (!isMax) {
      int64_t count = 1;
      for (int64_t k : kernel)
        count *= k;
      // Average pooling counts padding as zeros (torch's count_include_pad=True).
      result = divideByScalar(rewriter, loc, result, floatConst(rewriter, loc, et, count));
      // The fill value of the average is zero, not the pad value.
    }
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// Where an index tensor comes from, for messages: the terminal it is (a
/// converted model is a func whose arguments keep their terminal names), or
/// the op that computes it.
static std::string describeIndices(Value indices) {
  if (auto arg = dyn_cast<BlockArgument>(indices))
    if (auto func = dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp()))
      if (auto name = func.getArgAttrOfType<StringAttr>(arg.getArgNumber(), kTerminalNameAttr))
        return "terminal '" + name.str() + "'";
  return describeValue(indices);
}

/// The op's name in the model (its location's name), or its mnemonic.
static std::string describeSite(Operation *op) {
  std::string site = op->getName().getStringRef().str();
  Location loc = op->getLoc();
  if (auto fused = dyn_cast<FusedLoc>(loc))
    for (Location inner : fused.getLocations())
      if (isa<NameLoc>(inner))
        loc = inner;
  if (auto name = dyn_cast<NameLoc>(loc))
    site += " '" + name.getName().str() + "'";
  return site;
}

/// A pointer (as i64) to `text`, NUL-terminated, in a private constant global
/// of the module.
static Value messagePointer(PatternRewriter &rewriter, Location loc, Operation *op,
                            StringRef text) {
  auto module = op->getParentOfType<ModuleOp>();
  SmallVector<int8_t> bytes(text.begin(), text.end());
  bytes.push_back(0);
  auto type = MemRefType::get({static_cast<int64_t>(bytes.size())}, rewriter.getI8Type());
  auto data = DenseElementsAttr::get(
      RankedTensorType::get(type.getShape(), rewriter.getI8Type()), ArrayRef<int8_t>(bytes));
  std::string name;
  for (unsigned n = 0;; ++n) {
    name = "__mithril_index_message_" + std::to_string(n);
    if (!SymbolTable::lookupSymbolIn(module, name))
      break;
  }
  {
    OpBuilder::InsertionGuard guard(rewriter);
    rewriter.setInsertionPointToStart(module.getBody());
    memref::GlobalOp::create(rewriter, loc, name, rewriter.getStringAttr("private"), type, data,
                             /*constant=*/true, /*alignment=*/nullptr);
  }
  Value global = memref::GetGlobalOp::create(rewriter, loc, type, name);
  Value address = memref::ExtractAlignedPointerAsIndexOp::create(rewriter, loc, global);
  return arith::IndexCastOp::create(rewriter, loc, rewriter.getI64Type(), address);
}

/// Checks at run time that every element of the integer tensor `indices` lies
/// in [0, bound), and reports the smallest (if negative) or else the largest
/// one out of range through kIndexErrorFunction, naming `op` and where the
/// indices come from. One pass over the indices: their min and max.
static void reportIndicesOutOfRange(PatternRewriter &rewriter, Location loc, Operation *op,
                                    Value indices, OpFoldResult bound) {
  MLIRContext *ctx = rewriter.getContext();
  RankedTensorType it = tensorType(indices);
  Type i64 = rewriter.getI64Type();
  auto scalar = RankedTensorType::get({}, i64);
  auto filled = [&](int64_t v) {
    Value init = tensor::EmptyOp::create(rewriter, loc, scalar.getShape(), i64);
    Value c = arith::ConstantOp::create(rewriter, loc, rewriter.getI64IntegerAttr(v));
    return linalg::FillOp::create(rewriter, loc, c, init).getResult(0);
  };
  Value minInit = filled(std::numeric_limits<int64_t>::max());
  Value maxInit = filled(std::numeric_limits<int64_t>::min());
  int64_t rank = it.getRank();
  AffineMap toScalar = AffineMap::get(rank, 0, {}, ctx);
  SmallVector<AffineMap> maps = {rewriter.getMultiDimIdentityMap(rank), toScalar, toScalar};
  SmallVector<utils::IteratorType> iterators(rank, utils::IteratorType::reduction);
  auto range = linalg::GenericOp::create(
      rewriter, loc, TypeRange{scalar, scalar}, indices, ValueRange{minInit, maxInit}, maps,
      iterators, [&](OpBuilder &b, Location l, ValueRange a) {
        Value x = a[0];
        if (x.getType() != i64)
          x = arith::ExtSIOp::create(b, l, i64, x);
        linalg::YieldOp::create(b, l,
                                ValueRange{arith::MinSIOp::create(b, l, x, a[1]).getResult(),
                                           arith::MaxSIOp::create(b, l, x, a[2]).getResult()});
      });
  Value lowest = tensor::ExtractOp::create(rewriter, loc, range.getResult(0), ValueRange{});
  Value highest = tensor::ExtractOp::create(rewriter, loc, range.getResult(1), ValueRange{});
  Value limit = arith::IndexCastOp::create(rewriter, loc, i64,
                                           getValueOrCreateConstantIndexOp(rewriter, loc, bound));
  Value zero = arith::ConstantOp::create(rewriter, loc, rewriter.getI64IntegerAttr(0));
  Value negative = arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::slt, lowest, zero);
  Value tooLarge = arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::sge, highest, limit);
  Value bad = arith::OrIOp::create(rewriter, loc, negative, tooLarge);

  auto module = op->getParentOfType<ModuleOp>();
  if (!SymbolTable::lookupSymbolIn(module, kIndexErrorFunction)) {
    OpBuilder::InsertionGuard guard(rewriter);
    rewriter.setInsertionPointToStart(module.getBody());
    auto decl = func::FuncOp::create(rewriter, loc, kIndexErrorFunction,
                                     rewriter.getFunctionType({i64, i64, i64}, {}));
    decl.setPrivate();
  }
  std::string text = describeSite(op) + ": an index of " + describeIndices(indices);
  auto check = scf::IfOp::create(rewriter, loc, bad, /*withElseRegion=*/false);
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPointToStart(check.thenBlock());
  Value value = arith::SelectOp::create(rewriter, loc, negative, lowest, highest);
  Value message = messagePointer(rewriter, loc, op, text);
  func::CallOp::create(rewriter, loc, kIndexErrorFunction, TypeRange{},
                       ValueRange{value, limit, message});
}

/// `index` (an integer of any width, as an index) clamped into [0, bound - 1]:
/// an index out of range reads the nearest row instead of memory outside the
/// tensor (and is reported where the code reports such indices).
static Value clampIndex(OpBuilder &b, Location loc, Value index, Value bound) {
  Value i = arith::IndexCastOp::create(b, loc, b.getIndexType(), index);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value last = arith::SubIOp::create(b, loc, bound, one);
  Value below = arith::MinSIOp::create(b, loc, i, last);
  return arith::MaxSIOp::create(b, loc, below, zero);
}

struct EmbeddingPattern : OpRewritePattern<EmbeddingOp> {
  EmbeddingPattern(MLIRContext *ctx, bool indexErrors)
      : OpRewritePattern(ctx), indexErrors(indexErrors) {}
  bool indexErrors;
  LogicalResult matchAndRewrite(EmbeddingOp op, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    OpFoldResult rows = dimOf(rewriter, loc, op.getWeight(), 0);
    if (indexErrors)
      reportIndicesOutOfRange(rewriter, loc, op, op.getIndices(), rows);
    Value rowCount = getValueOrCreateConstantIndexOp(rewriter, loc, rows);
    RankedTensorType out = op.getType(), idx = op.getIndices().getType();
    int64_t rank = out.getRank();
    SmallVector<OpFoldResult> sizes;
    for (int64_t i = 0; i < idx.getRank(); ++i)
      sizes.push_back(dimOf(rewriter, loc, op.getIndices(), i));
    sizes.push_back(dimOf(rewriter, loc, op.getWeight(), 1));
    Value init = emptyTensor(rewriter, loc, out, sizes);
    MLIRContext *ctx = rewriter.getContext();
    SmallVector<AffineExpr> ie;
    for (int64_t i = 0; i < idx.getRank(); ++i)
      ie.push_back(getAffineDimExpr(i, ctx));
    SmallVector<AffineMap> maps = {AffineMap::get(rank, 0, ie, ctx),
                                   rewriter.getMultiDimIdentityMap(rank)};
    SmallVector<utils::IteratorType> iterators(rank, utils::IteratorType::parallel);
    Value weight = op.getWeight();
    Value result =
        linalg::GenericOp::create(
            rewriter, loc, TypeRange{out}, ValueRange{op.getIndices()}, init, maps, iterators,
            [&](OpBuilder &b, Location l, ValueRange a) {
              Value row = clampIndex(b, l, a[0], rowCount);
              Value col = linalg::IndexOp::create(b, l, rank - 1);
              linalg::YieldOp::create(
                  b, l, tensor::ExtractOp::create(b, l, weight, ValueRange{row, col}).getResult());
            })
            .getResult(0);
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// 1 where `cond` holds and 0 elsewhere, in `et` (float or integer).
static Value oneWhere(OpBuilder &b, Location loc, Value cond, Type et) {
  Value one = isFloat(et) ? floatConst(b, loc, et, 1.0)
                          : arith::ConstantOp::create(b, loc, b.getIntegerAttr(et, 1)).getResult();
  Value zero = isFloat(et) ? floatConst(b, loc, et, 0.0) : zeroOf(b, loc, et);
  return arith::SelectOp::create(b, loc, cond, one, zero);
}

/// one_hot: compare the index with the position along the new axis.
struct OneHotPattern : OpRewritePattern<OneHotOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(OneHotOp op, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    RankedTensorType out = op.getType();
    int64_t rank = out.getRank();
    int64_t axis = normalizeAxis(op.getAxis(), rank);
    SmallVector<OpFoldResult> sizes;
    SmallVector<AffineExpr> idxExprs;
    for (int64_t i = 0, j = 0; i < rank; ++i) {
      if (i == axis) {
        sizes.push_back(rewriter.getIndexAttr(op.getNumClasses()));
        continue;
      }
      sizes.push_back(dimOf(rewriter, loc, op.getIndices(), j++));
      idxExprs.push_back(getAffineDimExpr(i, ctx));
    }
    Value init = emptyTensor(rewriter, loc, out, sizes);
    SmallVector<AffineMap> maps = {AffineMap::get(rank, 0, idxExprs, ctx),
                                   rewriter.getMultiDimIdentityMap(rank)};
    SmallVector<utils::IteratorType> iterators(rank, utils::IteratorType::parallel);
    Type et = out.getElementType();
    Value result =
        linalg::GenericOp::create(
            rewriter, loc, TypeRange{out}, ValueRange{op.getIndices()}, init, maps, iterators,
            [&](OpBuilder &b, Location l, ValueRange a) {
              Value pos = arith::IndexCastOp::create(b, l, a[0].getType(),
                                                     linalg::IndexOp::create(b, l, axis));
              Value hit = arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq, pos, a[0]);
              linalg::YieldOp::create(b, l, oneWhere(b, l, hit, et));
            })
            .getResult(0);
    rewriter.replaceOp(op, result);
    return success();
  }
};


/// reverse: each element gathers input[..., n - 1 - i, ...]. A gather
/// rather than an indexing map with a negated dimension, which tiling would
/// turn into wrong slice sizes.
struct ReversePattern : OpRewritePattern<ReverseOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ReverseOp op, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    RankedTensorType t = op.getType();
    int64_t rank = t.getRank();
    SmallVector<int64_t> axes = *normalizeAxes(op.getAxes(), rank);
    Value input = op.getInput();
    auto gather = [&](OpBuilder &b, Location l) {
      SmallVector<Value> indices;
      for (int64_t i = 0; i < rank; ++i) {
        Value index = linalg::IndexOp::create(b, l, i);
        if (llvm::is_contained(axes, i))
          index = arith::SubIOp::create(
              b, l, arith::ConstantIndexOp::create(b, l, t.getDimSize(i) - 1), index);
        indices.push_back(index);
      }
      return tensor::ExtractOp::create(b, l, input, indices).getResult();
    };
    rewriter.replaceOp(op, generateElements(rewriter, loc, t, input, gather));
    return success();
  }
};

/// eye_like: 1 where the row index equals the column index.
struct EyeLikePattern : OpRewritePattern<EyeLikeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(EyeLikeOp op, PatternRewriter &rewriter) const override {
    Type et = op.getType().getElementType();
    auto diagonal = [&](OpBuilder &b, Location l) {
      Value row = linalg::IndexOp::create(b, l, 0);
      Value column = linalg::IndexOp::create(b, l, 1);
      Value onDiagonal = arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq, row, column);
      return oneWhere(b, l, onDiagonal, et);
    };
    rewriter.replaceOp(op, generateElements(rewriter, op.getLoc(), op.getType(), op.getInput(),
                                            diagonal));
    return success();
  }
};

/// Cross entropy from log-probabilities (mithril-decompose turns logits and
/// probabilities into log-probabilities first).
struct CrossEntropyPattern : OpRewritePattern<CrossEntropyOp> {
  CrossEntropyPattern(MLIRContext *ctx, bool indexErrors)
      : OpRewritePattern(ctx), indexErrors(indexErrors) {}
  bool indexErrors;
  LogicalResult matchAndRewrite(CrossEntropyOp op, PatternRewriter &rewriter) const override {
    if (!op.getFromLogProbs())
      return rewriter.notifyMatchFailure(op, "run mithril-decompose first");
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    Value logp = op.getInput();
    RankedTensorType in = tensorType(logp), out = op.getType();
    Type et = out.getElementType();
    int64_t classAxis = in.getRank() == 1 ? 0 : 1;
    if (isa<FloatType>(op.getTarget().getType().getElementType())) {
      // -sum(target * logp) over the class axis.
      Value prod = buildElementwise(rewriter, loc, in, ValueRange{op.getTarget(), logp},
                                    [](OpBuilder &b, Location l, ValueRange a, Type) {
                                      return arith::MulFOp::create(b, l, a[0], a[1]).getResult();
                                    });
      Reducer add{rewriter.getZeroAttr(et),
                  [](OpBuilder &b, Location l, Value x, Value acc) {
                    return arith::SubFOp::create(b, l, acc, x).getResult();
                  },
                  /*additive=*/true};
      rewriter.replaceOp(op, buildReduction(rewriter, loc, prod, {classAxis}, add));
      return success();
    }
    // Class indices: -logp[n, target[n, ...], ...]
    OpFoldResult classes = dimOf(rewriter, loc, logp, classAxis);
    if (indexErrors)
      reportIndicesOutOfRange(rewriter, loc, op, op.getTarget(), classes);
    Value classCount = getValueOrCreateConstantIndexOp(rewriter, loc, classes);
    SmallVector<OpFoldResult> sizes;
    for (int64_t i = 0; i < out.getRank(); ++i)
      sizes.push_back(dimOf(rewriter, loc, op.getTarget(), i));
    Value init = emptyTensor(rewriter, loc, out, sizes);
    int64_t rank = out.getRank();
    SmallVector<AffineMap> maps = {rewriter.getMultiDimIdentityMap(rank),
                                   rewriter.getMultiDimIdentityMap(rank)};
    SmallVector<utils::IteratorType> iterators(rank, utils::IteratorType::parallel);
    (void)ctx;
    Value result =
        linalg::GenericOp::create(
            rewriter, loc, TypeRange{out}, ValueRange{op.getTarget()}, init, maps, iterators,
            [&](OpBuilder &b, Location l, ValueRange a) {
              SmallVector<Value> indices;
              for (int64_t i = 0; i < rank; ++i)
                indices.push_back(linalg::IndexOp::create(b, l, i));
              indices.insert(indices.begin() + classAxis, clampIndex(b, l, a[0], classCount));
              Value v = tensor::ExtractOp::create(b, l, logp, indices);
              linalg::YieldOp::create(b, l, arith::NegFOp::create(b, l, v).getResult());
            })
            .getResult(0);
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// Converts a flattened model into a func.func.
static LogicalResult convertModel(ModelOp model) {
  if (!model.getBodyBlock().getOps<InstanceOp>().empty())
    return model.emitOpError("still contains instances; run mithril-flatten first");
  OpBuilder b(model);
  auto func = func::FuncOp::create(b, model.getLoc(), model.getSymName(), model.getFunctionType());
  if (auto argAttrs = model.getArgAttrsAttr())
    func.setArgAttrsAttr(argAttrs);
  if (auto resAttrs = model.getResAttrsAttr())
    func.setResAttrsAttr(resAttrs);
  if (auto vis = model.getSymVisibility())
    func.setSymVisibility(*vis);
  // Models are entry points: give them the C interface the runtime calls.
  func->setAttr("llvm.emit_c_interface", b.getUnitAttr());
  func.getBody().takeBody(model.getBody());
  OutputOp out = cast<OutputOp>(func.getBody().front().getTerminator());
  b.setInsertionPoint(out);
  func::ReturnOp::create(b, out.getLoc(), out.getValues());
  out.erase();
  model.erase();
  return success();
}

/// Gives every returned value its own tensor (see mithril-unique-results).
static void copyRepeatedResults(func::FuncOp func) {
  func.walk([](func::ReturnOp ret) {
    llvm::SmallPtrSet<Value, 8> seen;
    OpBuilder b(ret);
    for (OpOperand &operand : ret->getOpOperands()) {
      Value v = operand.get();
      if (seen.insert(v).second)
        continue;
      auto type = cast<RankedTensorType>(v.getType());
      SmallVector<OpFoldResult> sizes;
      for (int64_t i = 0; i < type.getRank(); ++i)
        sizes.push_back(dimOf(b, ret.getLoc(), v, i));
      Value init = emptyTensor(b, ret.getLoc(), type, sizes);
      operand.set(linalg::CopyOp::create(b, ret.getLoc(), v, init).getResult(0));
    }
  });
}

struct ConvertMithrilToLinalgPass
    : public mithril::impl::ConvertMithrilToLinalgBase<ConvertMithrilToLinalgPass> {
  using ConvertMithrilToLinalgBase::ConvertMithrilToLinalgBase;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    for (ModelOp model : llvm::make_early_inc_range(module.getOps<ModelOp>()))
      if (failed(convertModel(model)))
        return signalPassFailure();

    MLIRContext *ctx = &getContext();
    ConversionTarget target(*ctx);
    target.addLegalDialect<arith::ArithDialect, func::FuncDialect, linalg::LinalgDialect,
                           math::MathDialect, memref::MemRefDialect, scf::SCFDialect,
                           tensor::TensorDialect>();
    target.addIllegalDialect<MithrilDialect>();
    RewritePatternSet patterns(ctx);
    populateMithrilToLinalgPatterns(patterns, indexErrors);
    if (failed(applyPartialConversion(module, target, std::move(patterns))))
      signalPassFailure();
  }
};
struct UniqueResultsPass : public mithril::impl::MithrilUniqueResultsBase<UniqueResultsPass> {
  void runOnOperation() override { copyRepeatedResults(getOperation()); }
};
} // namespace

void mithril::populateMithrilToLinalgPatterns(RewritePatternSet &patterns, bool indexErrors) {
  MLIRContext *ctx = patterns.getContext();
  patterns.add<EmbeddingPattern, CrossEntropyPattern>(ctx, indexErrors);
  patterns.add<ElementwisePattern, BroadcastToPattern, ConstantPattern, ReducePattern<SumOp>,
               ReducePattern<MeanOp>, ReducePattern<MaxOp>, ReducePattern<MinOp>,
               ReducePattern<ProdOp>, VariancePattern, ArgReducePattern<ArgMaxOp>,
               ArgReducePattern<ArgMinOp>, MatmulPattern, TransposePattern, ReshapeLikePattern,
               ConcatPattern, SlicePattern, ShapePattern, ConvPattern<Conv1DOp>,
               ConvPattern<Conv2DOp>, PoolPattern<MaxPool1DOp>, PoolPattern<MaxPool2DOp>,
               PoolPattern<AvgPool2DOp>, OneHotPattern, EyeLikePattern, ReversePattern,
               ConvGradInputPattern, ConvGradWeightPattern, PoolGradPattern<MaxPoolGradOp>,
               PoolGradPattern<AvgPoolGradOp>, EmbeddingGradPattern, SliceGradPattern>(ctx);
}
