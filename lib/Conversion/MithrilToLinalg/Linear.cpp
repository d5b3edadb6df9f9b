//===- Linear.cpp - matmul to linalg --------------------------------------===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//

#include "Utils.h"

#include "mithril/Dialect/Mithril/IR/MithrilOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Utils/StructuredOpsUtils.h"
#include "mlir/IR/AffineMap.h"

using namespace mlir;
using namespace mithril;
using namespace mithril::linalg_lowering;

namespace {

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

void linalg_lowering::populateLinearPatterns(RewritePatternSet &patterns) {
  MLIRContext *ctx = patterns.getContext();
  patterns.add<MatmulPattern>(ctx);
}
