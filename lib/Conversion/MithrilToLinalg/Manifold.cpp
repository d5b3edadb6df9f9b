//===- Manifold.cpp - t-SNE's joint probabilities to loops ----------------===//
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
#include "llvm/ADT/APFloat.h"

#include <cmath>

using namespace mlir;
using namespace mithril;
using namespace mithril::linalg_lowering;

namespace {

/// The element of a tensor that holds one.
Value onlyElement(OpBuilder &b, Location loc, Value t) {
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  SmallVector<Value> indices(tensorType(t).getRank(), zero);
  return tensor::ExtractOp::create(b, loc, t, indices);
}

/// One row of the conditional probabilities at a bandwidth: the logits
/// x_j = -D[i][j] / (2 sigma^2) (0 where 2 sigma^2 is 0), their maximum
/// and the sum of exp(x_j - max) off the diagonal, as Mithril's
/// tsne_softmax computes them.
struct ConditionalRow {
  Value distances, row, twoSigmaSquared, max, sum;

  /// The logit of a squared distance `d`.
  Value logitOf(OpBuilder &b, Location l, Value d) const {
    Value zero = zeroOf(b, l, twoSigmaSquared.getType());
    Value scaled = arith::DivFOp::create(b, l, arith::NegFOp::create(b, l, d), twoSigmaSquared);
    Value degenerate =
        arith::CmpFOp::create(b, l, arith::CmpFPredicate::OEQ, twoSigmaSquared, zero);
    return arith::SelectOp::create(b, l, degenerate, zero, scaled);
  }

  Value logit(OpBuilder &b, Location l, Value j) const {
    return logitOf(b, l, extract(b, l, distances, row, j));
  }

  /// exp(x_j - max), 0 on the diagonal.
  Value weight(OpBuilder &b, Location l, Value j) const {
    Value e = math::ExpOp::create(b, l, arith::SubFOp::create(b, l, logit(b, l, j), max));
    Value diagonal = arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq, j, row);
    return arith::SelectOp::create(b, l, diagonal, zeroOf(b, l, e.getType()), e);
  }

  /// p_j|i.
  Value probability(OpBuilder &b, Location l, Value j) const {
    return arith::DivFOp::create(b, l, weight(b, l, j), sum);
  }
};

/// The smallest entry of row `row` of `distances`.
Value rowMinimum(OpBuilder &b, Location loc, Value distances, Value row, Value n) {
  Type t = cast<RankedTensorType>(distances.getType()).getElementType();
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  return forLoop(b, loc, zero, n, floatConst(b, loc, t, INFINITY),
                 [&](OpBuilder &nb, Location l, Value j, ValueRange acc) -> SmallVector<Value> {
                   return {
                       arith::MinimumFOp::create(nb, l, acc[0], extract(nb, l, distances, row, j))};
                 })
      .getResult(0);
}

/// Row `row` of the conditional probabilities at bandwidth `sigma`, given
/// the row's smallest squared distance `nearest`: dividing by the positive
/// 2 sigma^2 keeps the order of the rounded logits, so their maximum is the
/// logit of `nearest`, found once per row instead of once per bandwidth.
ConditionalRow conditionalRow(OpBuilder &b, Location loc, Value distances, Value row, Value sigma,
                              Value nearest, Value n) {
  Type t = sigma.getType();
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  ConditionalRow r;
  r.distances = distances;
  r.row = row;
  r.twoSigmaSquared = arith::MulFOp::create(b, loc, floatConst(b, loc, t, 2.0),
                                            arith::MulFOp::create(b, loc, sigma, sigma));
  r.max = r.logitOf(b, loc, nearest);
  r.sum = forLoop(b, loc, zero, n, zeroOf(b, loc, t),
                  [&](OpBuilder &nb, Location l, Value j, ValueRange acc) -> SmallVector<Value> {
                    return {arith::AddFOp::create(nb, l, acc[0], r.weight(nb, l, j))};
                  })
              .getResult(0);
  return r;
}

/// 2^H of a row's probabilities clipped to [threshold, 1 - threshold], H
/// their entropy in bits (Mithril's perplexity_fn).
Value perplexity(OpBuilder &b, Location loc, const ConditionalRow &r, Value threshold, Value n) {
  Type t = threshold.getType();
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value upper = arith::SubFOp::create(b, loc, floatConst(b, loc, t, 1.0), threshold);
  Value negEntropy =
      forLoop(b, loc, zero, n, zeroOf(b, loc, t),
              [&](OpBuilder &nb, Location l, Value j, ValueRange acc) -> SmallVector<Value> {
                Value p = arith::MinimumFOp::create(
                    nb, l, arith::MaximumFOp::create(nb, l, r.probability(nb, l, j), threshold),
                    upper);
                Value term = arith::MulFOp::create(nb, l, p, math::Log2Op::create(nb, l, p));
                return {arith::AddFOp::create(nb, l, acc[0], term)};
              })
          .getResult(0);
  return math::Exp2Op::create(b, loc, arith::NegFOp::create(b, loc, negEntropy));
}

/// The bandwidth of row `row` (Mithril's find_optimal_sigmas with its
/// binary_search on [0, 1001], at most 1001 steps): bisection until the
/// perplexity equals the target exactly, is NaN, or the interval stops
/// shrinking; the midpoint of the interval left. (Where the target is met
/// exactly, Mithril widens the interval to every point of that perplexity
/// before taking its midpoint: a difference of a few ulps of sigma.)
Value searchBandwidth(OpBuilder &b, Location loc, Value distances, Value row, Value nearest,
                      Value target, Value threshold, Value n) {
  Type t = target.getType();
  Value two = floatConst(b, loc, t, 2.0);
  Value limit = arith::ConstantIndexOp::create(b, loc, 1001);
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  Value running = arith::ConstantIntOp::create(b, loc, 1, 1);
  SmallVector<Value> init = {floatConst(b, loc, t, 0.0), floatConst(b, loc, t, 1001.0), zero,
                             running};
  SmallVector<Type> types = {t, t, b.getIndexType(), b.getI1Type()};
  auto loop = scf::WhileOp::create(
      b, loc, types, init,
      [&](OpBuilder &nb, Location l, ValueRange args) {
        Value more = arith::CmpIOp::create(nb, l, arith::CmpIPredicate::ult, args[2], limit);
        scf::ConditionOp::create(nb, l, arith::AndIOp::create(nb, l, more, args[3]), args);
      },
      [&](OpBuilder &nb, Location l, ValueRange args) {
        Value lo = args[0], hi = args[1];
        Value guess = arith::DivFOp::create(nb, l, arith::AddFOp::create(nb, l, lo, hi), two);
        Value value = perplexity(nb, l, conditionalRow(nb, l, distances, row, guess, nearest, n),
                                 threshold, n);
        auto cmp = [&](arith::CmpFPredicate p, Value x, Value y) -> Value {
          return arith::CmpFOp::create(nb, l, p, x, y);
        };
        Value stop = cmp(arith::CmpFPredicate::UEQ, value, target); // met, or NaN
        stop = arith::OrIOp::create(nb, l, stop, cmp(arith::CmpFPredicate::OEQ, guess, lo));
        stop = arith::OrIOp::create(nb, l, stop, cmp(arith::CmpFPredicate::OEQ, guess, hi));
        Value above = cmp(arith::CmpFPredicate::OGT, value, target);
        Value below = cmp(arith::CmpFPredicate::OLT, value, target);
        Value go = arith::XOrIOp::create(nb, l, stop, arith::ConstantIntOp::create(nb, l, 1, 1));
        Value newLo =
            arith::SelectOp::create(nb, l, arith::AndIOp::create(nb, l, go, below), guess, lo);
        Value newHi =
            arith::SelectOp::create(nb, l, arith::AndIOp::create(nb, l, go, above), guess, hi);
        Value next = arith::AddIOp::create(nb, l, args[2], one);
        scf::YieldOp::create(nb, l, ValueRange{newLo, newHi, next, go});
      });
  return arith::DivFOp::create(
      b, loc, arith::AddFOp::create(b, loc, loop.getResult(0), loop.getResult(1)), two);
}

/// tsne_p_joint: each row's bandwidth searched, its conditional
/// probabilities written, then (P + P^T) / (2 N).
struct TsnePJointPattern : OpRewritePattern<TsnePJointOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(TsnePJointOp op, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value distances = op.getSquaredDistances();
    RankedTensorType type = op.getType();
    Type t = type.getElementType();
    Value target = onlyElement(rewriter, loc, op.getTargetPerplexity());
    Value threshold;
    if (op.getThreshold()) {
      threshold = onlyElement(rewriter, loc, op.getThreshold());
    } else {
      // Machine epsilon: 2^-(mantissa bits), Mithril's Constant.EPSILON.
      int precision = llvm::APFloat::semanticsPrecision(cast<FloatType>(t).getFloatSemantics());
      threshold = floatConst(rewriter, loc, t, std::ldexp(1.0, 1 - precision));
    }
    OpFoldResult size = dimOf(rewriter, loc, distances, 0);
    Value n = getValueOrCreateConstantIndexOp(rewriter, loc, size);
    Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
    Value conditional = emptyTensor(rewriter, loc, type, {size, size});
    conditional =
        forLoop(rewriter, loc, zero, n, conditional,
                [&](OpBuilder &b, Location l, Value i, ValueRange carried) -> SmallVector<Value> {
                  Value nearest = rowMinimum(b, l, distances, i, n);
                  Value sigma = searchBandwidth(b, l, distances, i, nearest, target, threshold, n);
                  ConditionalRow r = conditionalRow(b, l, distances, i, sigma, nearest, n);
                  auto row =
                      forLoop(b, l, zero, n, carried[0],
                              [&](OpBuilder &rb, Location rl, Value j,
                                  ValueRange partial) -> SmallVector<Value> {
                                return {tensor::InsertOp::create(rb, rl, r.probability(rb, rl, j),
                                                                 partial[0], ValueRange{i, j})};
                              });
                  return {row.getResult(0)};
                })
            .getResult(0);
    Value count = arith::IndexCastOp::create(rewriter, loc, rewriter.getI64Type(), n);
    Value twiceN = arith::MulFOp::create(rewriter, loc, floatConst(rewriter, loc, t, 2.0),
                                         arith::SIToFPOp::create(rewriter, loc, t, count));
    MLIRContext *ctx = rewriter.getContext();
    AffineMap identity = AffineMap::getMultiDimIdentityMap(2, ctx);
    AffineMap transposed = AffineMap::getPermutationMap(ArrayRef<unsigned>{1, 0}, ctx);
    SmallVector<utils::IteratorType> iterators(2, utils::IteratorType::parallel);
    auto joint = linalg::GenericOp::create(
        rewriter, loc, TypeRange{type}, ValueRange{conditional, conditional},
        emptyTensor(rewriter, loc, type, {size, size}),
        SmallVector<AffineMap>{identity, transposed, identity}, iterators,
        [&](OpBuilder &b, Location l, ValueRange args) {
          Value sum = arith::AddFOp::create(b, l, args[0], args[1]);
          linalg::YieldOp::create(b, l, arith::DivFOp::create(b, l, sum, twiceN).getResult());
        });
    rewriter.replaceOp(op, joint.getResult(0));
    return success();
  }
};

} // namespace

void linalg_lowering::populateManifoldPatterns(RewritePatternSet &patterns) {
  patterns.add<TsnePJointPattern>(patterns.getContext());
}
