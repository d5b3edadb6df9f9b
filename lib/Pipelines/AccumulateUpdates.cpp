//===- AccumulateUpdates.cpp - gradient steps into their matmuls ----------===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//

#include "mithril/Pipelines/Pipelines.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mithril {
#define GEN_PASS_DEF_MITHRILACCUMULATEUPDATES
#include "mithril/Pipelines/Passes.h.inc"
} // namespace mithril

using namespace mlir;

namespace {

/// The operands of an elementwise generic whose body is the single binary
/// op `Op` of its two inputs (in this order when `ordered`), every map an
/// identity or, for `scalarOperand`, a map to no dimensions; else nullopt.
template <typename Op>
std::optional<std::pair<Value, Value>> binaryOperands(linalg::GenericOp generic, int scalarOperand,
                                                      bool ordered) {
  if (generic.getNumDpsInputs() != 2 || generic.getNumDpsInits() != 1 ||
      generic.getNumReductionLoops() != 0 || generic->getNumResults() != 1)
    return std::nullopt;
  for (auto [i, map] : llvm::enumerate(generic.getIndexingMapsArray())) {
    bool scalar = static_cast<int>(i) == scalarOperand;
    if (scalar ? map.getNumResults() != 0 : !map.isIdentity())
      return std::nullopt;
  }
  Block &body = generic.getRegion().front();
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  auto op = yield.getValues().front().getDefiningOp<Op>();
  if (!op || op->getBlock() != &body || body.getOperations().size() != 2)
    return std::nullopt;
  Value lhs = op->getOperand(0), rhs = op->getOperand(1);
  Value in0 = body.getArgument(0), in1 = body.getArgument(1);
  if (lhs == in0 && rhs == in1)
    return std::make_pair(generic.getDpsInputOperand(0)->get(),
                          generic.getDpsInputOperand(1)->get());
  if (!ordered && lhs == in1 && rhs == in0)
    return std::make_pair(generic.getDpsInputOperand(0)->get(),
                          generic.getDpsInputOperand(1)->get());
  return std::nullopt;
}

/// w - lr * (A B)  ->  matmul(A', B) accumulated into w, A' = -lr A (or B
/// scaled, the smaller of the two).
struct FoldUpdateIntoMatmul : OpRewritePattern<linalg::GenericOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(linalg::GenericOp update,
                                PatternRewriter &rewriter) const override {
    auto difference = binaryOperands<arith::SubFOp>(update, -1, /*ordered=*/true);
    if (!difference)
      return failure();
    auto [weight, step] = *difference;
    auto scaling = step.getDefiningOp<linalg::GenericOp>();
    if (!scaling || !step.hasOneUse())
      return failure();
    auto scaled = binaryOperands<arith::MulFOp>(scaling, 1, /*ordered=*/false);
    if (!scaled)
      return failure();
    auto [gradient, rate] = *scaled;
    auto product = gradient.getDefiningOp<linalg::MatmulOp>();
    if (!product || !gradient.hasOneUse() || product.hasUserDefinedMaps())
      return failure();
    auto fill = product.getDpsInitOperand(0)->get().getDefiningOp<linalg::FillOp>();
    if (!fill || !matchPattern(fill.getInputs()[0], m_AnyZeroFloat()))
      return failure();
    auto type = dyn_cast<RankedTensorType>(update->getResult(0).getType());
    if (!type || type != weight.getType() || type != gradient.getType() ||
        !isa<FloatType>(type.getElementType()))
      return failure();
    Value lhs = product.getDpsInputOperand(0)->get();
    Value rhs = product.getDpsInputOperand(1)->get();
    auto lhsType = dyn_cast<RankedTensorType>(lhs.getType());
    auto rhsType = dyn_cast<RankedTensorType>(rhs.getType());
    if (!lhsType || !rhsType || !lhsType.hasStaticShape() || !rhsType.hasStaticShape() ||
        lhsType.getElementType() != type.getElementType() ||
        rhsType.getElementType() != type.getElementType())
      return failure();

    Location loc = update.getLoc();
    bool scaleLeft = lhsType.getNumElements() <= rhsType.getNumElements();
    Value operand = scaleLeft ? lhs : rhs;
    RankedTensorType operandType = scaleLeft ? lhsType : rhsType;
    MLIRContext *ctx = rewriter.getContext();
    AffineMap identity = AffineMap::getMultiDimIdentityMap(operandType.getRank(), ctx);
    AffineMap scalar = AffineMap::get(operandType.getRank(), 0, ctx);
    SmallVector<utils::IteratorType> parallel(operandType.getRank(), utils::IteratorType::parallel);
    Value init = tensor::EmptyOp::create(rewriter, loc, operandType.getShape(),
                                         operandType.getElementType());
    Value negated = linalg::GenericOp::create(
                        rewriter, loc, TypeRange{operandType}, ValueRange{operand, rate}, init,
                        SmallVector<AffineMap>{identity, scalar, identity}, parallel,
                        [](OpBuilder &b, Location l, ValueRange args) {
                          Value factor = arith::NegFOp::create(b, l, args[1]);
                          linalg::YieldOp::create(
                              b, l, arith::MulFOp::create(b, l, args[0], factor).getResult());
                        })
                        .getResult(0);
    Value accumulated =
        linalg::MatmulOp::create(rewriter, loc, TypeRange{type},
                                 scaleLeft ? ValueRange{negated, rhs} : ValueRange{lhs, negated},
                                 ValueRange{weight})
            .getResult(0);
    rewriter.replaceOp(update, accumulated);
    return success();
  }
};

struct AccumulateUpdatesPass
    : public mithril::impl::MithrilAccumulateUpdatesBase<AccumulateUpdatesPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<FoldUpdateIntoMatmul>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
