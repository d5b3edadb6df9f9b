//===- DataMovement.cpp - reshapes, slices and copies to linalg -----------===//
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
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/Utils/StructuredOpsUtils.h"
#include "mlir/IR/AffineMap.h"

using namespace mlir;
using namespace mithril;
using namespace mithril::linalg_lowering;

namespace {

struct TransposePattern : OpRewritePattern<TransposeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(TransposeOp op, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    SmallVector<int64_t> perm = op.getPermutationOrDefault();
    SmallVector<OpFoldResult> sizes;
    for (int64_t p : perm)
      sizes.push_back(dimOf(rewriter, loc, op.getInput(), p));
    Value init = emptyTensor(rewriter, loc, op.getType(), sizes);
    rewriter.replaceOp(
        op, linalg::TransposeOp::create(rewriter, loc, op.getInput(), init, perm).getResult()[0]);
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
          sizes.push_back(
              arith::DivUIOp::create(rewriter, loc, totalSize(),
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
        auto [offset, length] =
            runtimeSlice(rewriter, loc, getValueOrCreateConstantIndexOp(rewriter, loc, sizes[axis]),
                         start, stop, step);
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

/// tensor.pad with the op's constant.
struct PadPattern : OpRewritePattern<PadOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(PadOp op, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Type element = op.getType().getElementType();
    TypedAttr fill;
    if (auto floatType = dyn_cast<FloatType>(element))
      fill = rewriter.getFloatAttr(floatType, op.getValue().convertToDouble());
    else
      fill =
          rewriter.getIntegerAttr(element, static_cast<int64_t>(op.getValue().convertToDouble()));
    Value value = arith::ConstantOp::create(rewriter, loc, fill);
    ArrayRef<int64_t> width = op.getPadWidth();
    SmallVector<OpFoldResult> low, high;
    for (size_t axis = 0; axis < width.size() / 2; ++axis) {
      low.push_back(rewriter.getIndexAttr(width[2 * axis]));
      high.push_back(rewriter.getIndexAttr(width[2 * axis + 1]));
    }
    rewriter.replaceOpWithNewOp<tensor::PadOp>(op, op.getType(), op.getInput(), low, high, value);
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
              auto idx = [&](int64_t v) {
                return arith::ConstantIndexOp::create(b, l, v).getResult();
              };
              Value valid = arith::ConstantIntOp::create(b, l, 1, 1);
              SmallVector<Value> src;
              for (int64_t d = 0; d < rank; ++d) {
                Value i = linalg::IndexOp::create(b, l, d);
                Value t = arith::SubIOp::create(b, l, i, idx(start[d]));
                Value nonNeg = arith::CmpIOp::create(b, l, arith::CmpIPredicate::sge, t, idx(0));
                Value tc = arith::SelectOp::create(b, l, nonNeg, t, idx(0));
                Value q = arith::DivUIOp::create(b, l, tc, idx(step[d]));
                Value exact =
                    arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq,
                                          arith::RemUIOp::create(b, l, tc, idx(step[d])), idx(0));
                Value inRange = arith::CmpIOp::create(b, l, arith::CmpIPredicate::slt, q,
                                                      idx(gt.getDimSize(d)));
                Value ok = arith::AndIOp::create(b, l, nonNeg,
                                                 arith::AndIOp::create(b, l, exact, inRange));
                valid = arith::AndIOp::create(b, l, valid, ok);
                src.push_back(arith::SelectOp::create(b, l, ok, q, idx(0)));
              }
              Value v = tensor::ExtractOp::create(b, l, grad, src);
              Value zero = arith::ConstantOp::create(b, l, b.getZeroAttr(et));
              linalg::YieldOp::create(b, l,
                                      arith::SelectOp::create(b, l, valid, v, zero).getResult());
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
    rewriter.replaceOp(
        op, generateElements(rewriter, op.getLoc(), op.getType(), op.getInput(), diagonal));
    return success();
  }
};

/// tril: the element where its column is at most `diagonal` past its row,
/// zero elsewhere.
struct TrilPattern : OpRewritePattern<TrilOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(TrilOp op, PatternRewriter &rewriter) const override {
    int64_t rank = op.getType().getRank();
    auto diagonal = static_cast<int64_t>(op.getDiagonal());
    auto keepLower = [&](OpBuilder &b, Location l, ValueRange args, Type et) -> Value {
      Value row = linalg::IndexOp::create(b, l, rank - 2);
      Value column = linalg::IndexOp::create(b, l, rank - 1);
      Value last = arith::AddIOp::create(b, l, row, arith::ConstantIndexOp::create(b, l, diagonal));
      Value keep = arith::CmpIOp::create(b, l, arith::CmpIPredicate::sle, column, last);
      return arith::SelectOp::create(b, l, keep, args[0], zeroOf(b, l, et));
    };
    rewriter.replaceOp(op, buildElementwise(rewriter, op.getLoc(), op.getType(),
                                            ValueRange{op.getInput()}, keepLower));
    return success();
  }
};

} // namespace

void linalg_lowering::populateDataMovementPatterns(RewritePatternSet &patterns) {
  MLIRContext *ctx = patterns.getContext();
  patterns.add<TransposePattern, ReshapeLikePattern, ConcatPattern, SlicePattern, PadPattern,
               ShapePattern, EyeLikePattern, ReversePattern, SliceGradPattern, TrilPattern>(ctx);
}
