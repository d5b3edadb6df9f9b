//===- Linear.cpp - matmul and triangular factorizations ------------------===//
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
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StructuredOpsUtils.h"
#include "mlir/IR/AffineMap.h"

using namespace mlir;
using namespace mithril;
using namespace mithril::linalg_lowering;

/// The reassociation of a rank `rank` tensor that merges its first `merged`
/// axes into one and keeps the others.
static SmallVector<ReassociationIndices> mergeLeading(int64_t merged, int64_t rank) {
  SmallVector<ReassociationIndices> groups(1);
  for (int64_t i = 0; i < merged; ++i)
    groups[0].push_back(i);
  for (int64_t i = merged; i < rank; ++i)
    groups.push_back({i});
  return groups;
}

/// A product of batches as one linalg.matmul or linalg.batch_matmul over
/// collapsed axes (free on tensors), expanded back to `out`: a matrix
/// applied to every matrix of a batch (a Linear on [B, T, D] inputs) is one
/// [B*T, K] x [K, N] product, and batches of equal shape (attention's
/// [B, H, T, D]) one batch_matmul of B*H. Either is the schedule's matrix
/// product; the 4-D contraction they replace was tiled as a generic loop
/// nest (a GPT's MLP product 5x slower). Null where neither applies:
/// vectors, a batched matrix multiplying from the right, or batches that
/// broadcast.
static Value collapsedProduct(PatternRewriter &rewriter, Location loc, Value lhs, Value rhs,
                              RankedTensorType out, Value zero) {
  RankedTensorType lt = tensorType(lhs), rt = tensorType(rhs);
  int64_t lr = lt.getRank(), rr = rt.getRank(), outRank = out.getRank();
  if (lr < 2 || rr < 2 || !out.hasStaticShape())
    return {};
  auto unitBatch = [](RankedTensorType t) {
    return llvm::all_of(t.getShape().drop_back(2), [](int64_t d) { return d == 1; });
  };
  auto collapse = [&](Value v, int64_t merged) -> Value {
    RankedTensorType t = tensorType(v);
    auto groups = mergeLeading(merged, t.getRank());
    return tensor::CollapseShapeOp::create(
        rewriter, loc, tensor::CollapseShapeOp::inferCollapsedType(t, groups), v, groups);
  };
  // The product `build` makes into the result's first `merged` axes merged
  // into one, expanded back. Its zero-filled init has the product's own
  // shape: the schedule fuses that fill into the product's tiles (a fill
  // seen through a collapse is not, and CSE shares it between products,
  // each then copying it whole).
  auto productInto = [&](int64_t merged,
                         function_ref<Value(RankedTensorType, Value)> build) -> Value {
    SmallVector<ReassociationIndices> groups = mergeLeading(merged, outRank);
    RankedTensorType type = tensor::CollapseShapeOp::inferCollapsedType(out, groups);
    Value empty = tensor::EmptyOp::create(rewriter, loc, type.getShape(), type.getElementType());
    Value init = linalg::FillOp::create(rewriter, loc, zero, empty).getResult(0);
    return tensor::ExpandShapeOp::create(rewriter, loc, out, build(type, init), groups);
  };
  if (lr > 2 && unitBatch(rt) && lt.hasStaticShape()) {
    // [..., M, K] x [K, N]: the rows of every matrix of the batch stacked.
    // The result's leading axes are lhs's (and any unit axes of rhs): all
    // but its last merge into the rows.
    Value a = collapse(lhs, lr - 1), b = rr == 2 ? rhs : collapse(rhs, rr - 1);
    return productInto(outRank - 1, [&](RankedTensorType type, Value init) -> Value {
      return linalg::MatmulOp::create(rewriter, loc, TypeRange{type}, ValueRange{a, b}, init)
          .getResult(0);
    });
  }
  if (lr > 3 && lr == rr && lt.getShape().drop_back(2) == rt.getShape().drop_back(2) &&
      lt.hasStaticShape() && rt.hasStaticShape()) {
    // [..., M, K] x [..., K, N] with equal batch axes: one batch axis.
    Value a = collapse(lhs, lr - 2), b = collapse(rhs, rr - 2);
    return productInto(outRank - 2, [&](RankedTensorType type, Value init) -> Value {
      return linalg::BatchMatmulOp::create(rewriter, loc, TypeRange{type}, ValueRange{a, b}, init)
          .getResult(0);
    });
  }
  return {};
}

namespace {

/// matmul: linalg.matmul for matrices and for a matrix applied to a batch,
/// linalg.batch_matmul for equal batches (collapsed to one batch axis), and a
/// linalg.generic contraction for vectors and broadcast batches.
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
    if (Value product = collapsedProduct(rewriter, loc, lhs, rhs, out, zero)) {
      rewriter.replaceOp(op, product);
      return success();
    }
    Value init = linalg::FillOp::create(rewriter, loc, zero, emptyTensor(rewriter, loc, out, sizes))
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

} // namespace

/// The loops below are sequential recurrences (each row or column of the
/// result needs the ones before it), built with forLoop and extract (Utils.h).

/// `start` minus the products of `lhs(k)` and `rhs(k)` for k in [from, to).
static Value subtractProducts(OpBuilder &b, Location loc, Value start, Value from, Value to,
                              function_ref<Value(OpBuilder &, Location, Value)> lhs,
                              function_ref<Value(OpBuilder &, Location, Value)> rhs) {
  return forLoop(b, loc, from, to, start,
                 [&](OpBuilder &nb, Location l, Value k, ValueRange acc) -> SmallVector<Value> {
                   Value product = arith::MulFOp::create(nb, l, lhs(nb, l, k), rhs(nb, l, k));
                   return {arith::SubFOp::create(nb, l, acc[0], product)};
                 })
      .getResult(0);
}

namespace {

/// cholesky: column by column, L[j][j] = sqrt(A[j][j] - sum_k<j L[j][k]^2)
/// and below it L[i][j] = (A[i][j] - sum_k<j L[i][k] L[j][k]) / L[j][j], on
/// a zero-filled result. Only A's lower triangle is read. A non-positive
/// pivot is the square root of a negative number or zero: NaN or infinity
/// then spread through the columns after it.
struct CholeskyPattern : OpRewritePattern<CholeskyOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(CholeskyOp op, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value a = op.getInput();
    RankedTensorType type = op.getType();
    OpFoldResult size = dimOf(rewriter, loc, a, 0);
    Value n = getValueOrCreateConstantIndexOp(rewriter, loc, size);
    Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
    Value one = arith::ConstantIndexOp::create(rewriter, loc, 1);
    Value init = linalg::FillOp::create(rewriter, loc, zeroOf(rewriter, loc, type.getElementType()),
                                        emptyTensor(rewriter, loc, type, {size, size}))
                     .getResult(0);
    auto columns =
        forLoop(rewriter, loc, zero, n, init,
                [&](OpBuilder &b, Location l, Value j, ValueRange carried) -> SmallVector<Value> {
                  Value factor = carried[0];
                  auto rowJ = [&](OpBuilder &nb, Location nl, Value k) {
                    return extract(nb, nl, factor, j, k);
                  };
                  Value pivot = math::SqrtOp::create(
                      b, l, subtractProducts(b, l, extract(b, l, a, j, j), zero, j, rowJ, rowJ));
                  factor = tensor::InsertOp::create(b, l, pivot, factor, ValueRange{j, j});
                  Value below = arith::AddIOp::create(b, l, j, one);
                  auto rows = forLoop(
                      b, l, below, n, factor,
                      [&](OpBuilder &rb, Location rl, Value i,
                          ValueRange rowCarried) -> SmallVector<Value> {
                        Value partial = rowCarried[0];
                        auto rowI = [&](OpBuilder &nb, Location nl, Value k) {
                          return extract(nb, nl, partial, i, k);
                        };
                        auto rowJ = [&](OpBuilder &nb, Location nl, Value k) {
                          return extract(nb, nl, partial, j, k);
                        };
                        Value dot =
                            subtractProducts(rb, rl, extract(rb, rl, a, i, j), zero, j, rowI, rowJ);
                        Value entry = arith::DivFOp::create(rb, rl, dot, pivot);
                        return {tensor::InsertOp::create(rb, rl, entry, partial, ValueRange{i, j})};
                      });
                  return {rows.getResult(0)};
                });
    rewriter.replaceOp(op, columns.getResult(0));
    return success();
  }
};

/// triangular_solve: substitution, one row of X at a time. op(A) is lower
/// triangular when exactly one of `lower` and `transpose` is set (forward
/// substitution from the first row), upper otherwise (back substitution
/// from the last); op(A)[i][k] reads A[k][i] when transposed.
struct TriangularSolvePattern : OpRewritePattern<TriangularSolveOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(TriangularSolveOp op, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value a = op.getMatrix(), rhs = op.getRhs();
    RankedTensorType type = op.getType();
    bool transposed = op.getTranspose();
    bool forward = op.getLower() != transposed;
    OpFoldResult rowSize = dimOf(rewriter, loc, rhs, 0), columnSize = dimOf(rewriter, loc, rhs, 1);
    Value n = getValueOrCreateConstantIndexOp(rewriter, loc, rowSize);
    Value columns = getValueOrCreateConstantIndexOp(rewriter, loc, columnSize);
    Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
    Value one = arith::ConstantIndexOp::create(rewriter, loc, 1);
    Value last = arith::SubIOp::create(rewriter, loc, n, one);
    auto opA = [&](OpBuilder &b, Location l, Value i, Value k) {
      return transposed ? extract(b, l, a, k, i) : extract(b, l, a, i, k);
    };
    Value init = emptyTensor(rewriter, loc, type, {rowSize, columnSize});
    auto rows = forLoop(
        rewriter, loc, zero, n, init,
        [&](OpBuilder &b, Location l, Value step, ValueRange carried) -> SmallVector<Value> {
          Value i = forward ? step : arith::SubIOp::create(b, l, last, step).getResult();
          // The rows of X already solved: before i going forward, after it
          // going back.
          Value from = forward ? zero : arith::AddIOp::create(b, l, i, one).getResult();
          Value to = forward ? i : n;
          Value diagonal = opA(b, l, i, i);
          auto each = forLoop(
              b, l, zero, columns, carried[0],
              [&](OpBuilder &cb, Location cl, Value c, ValueRange solved) -> SmallVector<Value> {
                Value x = solved[0];
                auto coefficient = [&](OpBuilder &nb, Location nl, Value k) {
                  return opA(nb, nl, i, k);
                };
                auto known = [&](OpBuilder &nb, Location nl, Value k) {
                  return extract(nb, nl, x, k, c);
                };
                Value rest = subtractProducts(cb, cl, extract(cb, cl, rhs, i, c), from, to,
                                              coefficient, known);
                Value entry = arith::DivFOp::create(cb, cl, rest, diagonal);
                return {tensor::InsertOp::create(cb, cl, entry, x, ValueRange{i, c})};
              });
          return {each.getResult(0)};
        });
    rewriter.replaceOp(op, rows.getResult(0));
    return success();
  }
};

} // namespace

void linalg_lowering::populateLinearPatterns(RewritePatternSet &patterns) {
  MLIRContext *ctx = patterns.getContext();
  patterns.add<MatmulPattern, CholeskyPattern, TriangularSolvePattern>(ctx);
}
