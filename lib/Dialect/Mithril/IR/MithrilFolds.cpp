//===- MithrilFolds.cpp - folders of the mithril primitives ---------------===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//

#include "mithril/Dialect/Mithril/IR/MithrilOps.h"

#include "mlir/Dialect/CommonFolders.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include <cmath>

using namespace mlir;
using namespace mithril;

/// Is `attr` a float splat equal to `value`?
static bool isFloatSplat(Attribute attr, double value) {
  auto splat = dyn_cast_or_null<SplatElementsAttr>(attr);
  if (!splat || !isa<FloatType>(splat.getElementType()))
    return false;
  return splat.getSplatValue<APFloat>().convertToDouble() == value;
}

/// Folds `op(x, c)` to `x` when `c` is the identity splat and the result has
/// the type of `x` (so broadcasting does not change the shape).
static OpFoldResult foldRightIdentity(Operation *op, Value lhs, Attribute rhs,
                                      double identity) {
  if (isFloatSplat(rhs, identity) && lhs.getType() == op->getResult(0).getType())
    return lhs;
  return {};
}

/// Elementwise folding of two float constants of the result's shape (or
/// splats), kept small so folding never bloats the IR.
static Attribute foldFloatBinary(Attribute lhs, Attribute rhs, Type resultType,
                                 function_ref<APFloat(APFloat, APFloat)> fn) {
  auto l = dyn_cast_or_null<DenseElementsAttr>(lhs);
  auto r = dyn_cast_or_null<DenseElementsAttr>(rhs);
  auto type = dyn_cast<RankedTensorType>(resultType);
  if (!l || !r || !type || !type.hasStaticShape() ||
      !isa<FloatType>(type.getElementType()) || type.getNumElements() > 4096)
    return {};
  auto fits = [&](DenseElementsAttr a) {
    return a.isSplat() || a.getType().getShape() == type.getShape();
  };
  if (!fits(l) || !fits(r) || l.getElementType() != type.getElementType() ||
      r.getElementType() != type.getElementType())
    return {};
  SmallVector<APFloat> values;
  int64_t n = type.getNumElements();
  auto lv = l.getValues<APFloat>(), rv = r.getValues<APFloat>();
  for (int64_t i = 0; i < n; ++i)
    values.push_back(fn(l.isSplat() ? lv[0] : lv[i], r.isSplat() ? rv[0] : rv[i]));
  return DenseElementsAttr::get(type, values);
}

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValue(); }

OpFoldResult AddOp::fold(FoldAdaptor adaptor) {
  if (OpFoldResult r = foldRightIdentity(*this, getLhs(), adaptor.getRhs(), 0.0))
    return r;
  if (OpFoldResult r = foldRightIdentity(*this, getRhs(), adaptor.getLhs(), 0.0))
    return r;
  return foldFloatBinary(adaptor.getLhs(), adaptor.getRhs(), getType(),
                         [](APFloat a, APFloat b) { return a + b; });
}

OpFoldResult SubtractOp::fold(FoldAdaptor adaptor) {
  if (OpFoldResult r = foldRightIdentity(*this, getLhs(), adaptor.getRhs(), 0.0))
    return r;
  return foldFloatBinary(adaptor.getLhs(), adaptor.getRhs(), getType(),
                         [](APFloat a, APFloat b) { return a - b; });
}

OpFoldResult MultiplyOp::fold(FoldAdaptor adaptor) {
  if (OpFoldResult r = foldRightIdentity(*this, getLhs(), adaptor.getRhs(), 1.0))
    return r;
  if (OpFoldResult r = foldRightIdentity(*this, getRhs(), adaptor.getLhs(), 1.0))
    return r;
  return foldFloatBinary(adaptor.getLhs(), adaptor.getRhs(), getType(),
                         [](APFloat a, APFloat b) { return a * b; });
}

OpFoldResult DivideOp::fold(FoldAdaptor adaptor) {
  if (OpFoldResult r = foldRightIdentity(*this, getLhs(), adaptor.getRhs(), 1.0))
    return r;
  return foldFloatBinary(adaptor.getLhs(), adaptor.getRhs(), getType(),
                         [](APFloat a, APFloat b) { return a / b; });
}

OpFoldResult PowerOp::fold(FoldAdaptor adaptor) {
  return foldRightIdentity(*this, getLhs(), adaptor.getRhs(), 1.0);
}

OpFoldResult NegateOp::fold(FoldAdaptor) {
  // -(-x) == x
  if (auto inner = getInput().getDefiningOp<NegateOp>())
    return inner.getInput();
  return {};
}

OpFoldResult ReshapeOp::fold(FoldAdaptor adaptor) {
  if (getInput().getType() == getType() && getType().hasStaticShape())
    return getInput();
  // reshape(reshape(x)) == reshape(x): only the final shape matters.
  if (auto inner = getInput().getDefiningOp<ReshapeOp>()) {
    getInputMutable().assign(inner.getInput());
    return getResult();
  }
  if (auto dense = dyn_cast_or_null<DenseElementsAttr>(adaptor.getInput()))
    if (getType().hasStaticShape())
      return dense.reshape(getType());
  return {};
}

OpFoldResult TransposeOp::fold(FoldAdaptor) {
  SmallVector<int64_t> perm = getPermutationOrDefault();
  auto isIdentity = [](ArrayRef<int64_t> p) {
    for (auto [i, v] : llvm::enumerate(p))
      if ((int64_t)i != v)
        return false;
    return true;
  };
  if (isIdentity(perm))
    return getInput();
  // transpose(transpose(x, p), q) == transpose(x, p o q).
  if (auto inner = getInput().getDefiningOp<TransposeOp>()) {
    SmallVector<int64_t> innerPerm = inner.getPermutationOrDefault();
    SmallVector<int64_t> composed;
    for (int64_t p : perm)
      composed.push_back(innerPerm[p]);
    if (isIdentity(composed))
      return inner.getInput();
    getInputMutable().assign(inner.getInput());
    setPermutation(composed);
    return getResult();
  }
  return {};
}

namespace {
/// A 2-D transpose that swaps the two axes.
bool isMatrixTranspose(TransposeOp op) {
  return op.getType().getRank() == 2 && op.getPermutationOrDefault() == SmallVector<int64_t>{1, 0};
}

/// transpose(A B) -> transpose(B) transpose(A), for 2-D static products one
/// of whose operands is itself a transpose (which then folds away), when the
/// transposes left move fewer elements than the product's: the weight
/// gradient of a Linear layer, (x^T dy)^T, becomes dy^T x, and a 64 x 784
/// input and a 784 x 512 gradient are no longer transposed, only 64 x 512
/// output gradient.
struct TransposeOfMatmul : OpRewritePattern<TransposeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(TransposeOp op, PatternRewriter &rewriter) const override {
    auto product = op.getInput().getDefiningOp<MatmulOp>();
    if (!isMatrixTranspose(op) || !product || !product->hasOneUse())
      return failure();
    Value a = product.getLhs(), b = product.getRhs();
    auto at = cast<RankedTensorType>(a.getType()), bt = cast<RankedTensorType>(b.getType());
    auto ct = cast<RankedTensorType>(product.getType());
    if (at.getRank() != 2 || bt.getRank() != 2 || !at.hasStaticShape() || !bt.hasStaticShape() ||
        !ct.hasStaticShape())
      return failure();
    auto folds = [](Value v) {
      auto transpose = v.getDefiningOp<TransposeOp>();
      return transpose && isMatrixTranspose(transpose);
    };
    if (!folds(a) && !folds(b))
      return failure();
    int64_t moved = (folds(a) ? 0 : at.getNumElements()) + (folds(b) ? 0 : bt.getNumElements());
    if (moved >= ct.getNumElements())
      return failure();
    auto swapped = [&](Value v) -> Value {
      auto t = cast<RankedTensorType>(v.getType());
      auto type = RankedTensorType::get({t.getDimSize(1), t.getDimSize(0)}, t.getElementType());
      return TransposeOp::create(rewriter, op.getLoc(), type, v,
                                 rewriter.getDenseI64ArrayAttr({1, 0}));
    };
    Value lhs = swapped(b), rhs = swapped(a);
    // Named after both (a profile shows the product as what it computes).
    Location loc = rewriter.getFusedLoc({product.getLoc(), op.getLoc()});
    rewriter.replaceOp(op, MatmulOp::create(rewriter, loc, op.getType(), lhs, rhs).getResult());
    return success();
  }
};
} // namespace

void TransposeOp::getCanonicalizationPatterns(RewritePatternSet &patterns, MLIRContext *context) {
  patterns.add<TransposeOfMatmul>(context);
}

OpFoldResult CastOp::fold(FoldAdaptor) {
  if (getInput().getType() == getType())
    return getInput();
  return {};
}

OpFoldResult ShapeOp::fold(FoldAdaptor) {
  auto type = getInput().getType();
  if (!type.hasStaticShape())
    return {};
  return DenseElementsAttr::get(cast<ShapedType>(getType()),
                                llvm::ArrayRef<int64_t>(type.getShape()));
}
