//===- Pooling.cpp - pooling to linalg ------------------------------------===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//

#include "Utils.h"

#include "mithril/Conversion/MithrilToLinalg/MithrilToLinalg.h"
#include "mithril/Dialect/Mithril/IR/LoweringConfig.h"
#include "mithril/Dialect/Mithril/IR/MithrilOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StructuredOpsUtils.h"
#include "mlir/IR/AffineMap.h"

using namespace mlir;
using namespace mithril;
using namespace mithril::linalg_lowering;

namespace {

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
  Value filled =
      linalg::FillOp::create(b, loc, identity, emptyTensor(b, loc, out, {})).getResult(0);
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
  setLoweringConfig(generic, LoweringConfigAttr::get(b.getContext(), CpuKernel::PoolWindow)
                                 .withWindow({lead + 1, lead + 2, lead + 3}));
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
  setLoweringConfig(generic, LoweringConfigAttr::get(b.getContext(), CpuKernel::PoolWindow)
                                 .withWindow({lead + 1, lead + 2, lead + 3}));
  return tensor::CollapseShapeOp::create(b, loc, out, generic.getResult(0), windowGrouping(lead));
}

/// Gradients of max and average pooling in gather form over (lead..., i...,
/// k...).
template <typename OpT> struct PoolGradPattern : OpRewritePattern<OpT> {
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
    if (auto viewShape =
            windowViewShape(out, kernel, op.getStride(), op.getPadding(), op.getDilation())) {
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
              linalg::YieldOp::create(b, l,
                                      arith::AddFOp::create(b, l, a.back(), contrib).getResult());
            })
            .getResult(0);
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// Max and average pooling of any spatial rank, batched or not.
template <typename OpT> struct PoolPattern : OpRewritePattern<OpT> {
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
      Value padded =
          getValueOrCreateConstantIndexOp(rewriter, loc, dimOf(rewriter, loc, input, lead + i));
      int64_t span = op.getDilation()[i] * (kernel[i] - 1) + 1;
      auto idx = [&](int64_t v) { return arith::ConstantIndexOp::create(rewriter, loc, v); };
      Value room = arith::MaxSIOp::create(
          rewriter, loc, arith::SubIOp::create(rewriter, loc, padded, idx(span - 1)), idx(0));
      Value count = arith::CeilDivSIOp::create(rewriter, loc, room, idx(op.getStride()[i]));
      sizes.push_back(count.getDefiningOp()->getResult(0));
    }
    Value init =
        linalg::FillOp::create(rewriter, loc, padValue, emptyTensor(rewriter, loc, out, sizes))
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

} // namespace

void linalg_lowering::populatePoolingPatterns(RewritePatternSet &patterns) {
  MLIRContext *ctx = patterns.getContext();
  patterns.add<PoolPattern<MaxPool1DOp>, PoolPattern<MaxPool2DOp>, PoolPattern<AvgPool2DOp>,
               PoolGradPattern<MaxPoolGradOp>, PoolGradPattern<AvgPoolGradOp>>(ctx);
}
