//===- Losses.cpp - losses to linalg --------------------------------------===//
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
#include "mlir/Dialect/Utils/StructuredOpsUtils.h"
#include "mlir/IR/AffineMap.h"

using namespace mlir;
using namespace mithril;
using namespace mithril::linalg_lowering;

namespace {

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

} // namespace

void linalg_lowering::populateLossPatterns(RewritePatternSet &patterns, bool indexErrors) {
  MLIRContext *ctx = patterns.getContext();
  patterns.add<CrossEntropyPattern>(ctx, indexErrors);
}
