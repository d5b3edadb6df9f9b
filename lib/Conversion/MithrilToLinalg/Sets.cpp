//===- Sets.cpp - mithril.unique to linalg --------------------------------===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//
//
// unique without a sort: every pair of elements is compared. An element is
// the first of its value when no earlier element equals it; its rank is the
// number of first elements smaller than it; result r is the first element of
// rank r. Three generics over (i, j), each vectorizable, and no scatter.
//
//===----------------------------------------------------------------------===//

#include "Utils.h"

#include "mithril/Dialect/Mithril/IR/MithrilOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace mithril;
using namespace mithril::linalg_lowering;

namespace {

/// x == y (`less` false) or x < y (`less` true) in numpy's order of unique
/// values: NaN after every number and equal to NaN (equal_nan). For floats,
/// the ordered comparison, or y is NaN and x is NaN (equal) or a number
/// (less).
Value compareNanLast(OpBuilder &b, Location l, Value x, Value y, bool less) {
  if (!isFloat(x.getType()))
    return arith::CmpIOp::create(b, l, less ? arith::CmpIPredicate::slt : arith::CmpIPredicate::eq,
                                 x, y);
  using P = arith::CmpFPredicate;
  Value ordered = arith::CmpFOp::create(b, l, less ? P::OLT : P::OEQ, x, y);
  Value xKind = arith::CmpFOp::create(b, l, less ? P::ORD : P::UNO, x, x);
  Value yNan = arith::CmpFOp::create(b, l, P::UNO, y, y);
  return arith::OrIOp::create(b, l, ordered, arith::AndIOp::create(b, l, xKind, yNan));
}

/// A generic over (i parallel, j reduction) of `ins` (each read at i or at
/// j, as `atJ` says) into the i-indexed accumulator `init`; its body is
/// `body(args, acc, i, j)`.
Value pairwise(OpBuilder &b, Location l, ValueRange ins, ArrayRef<bool> atJ, Value init,
               function_ref<Value(OpBuilder &, Location, ValueRange, Value, Value, Value)> body) {
  MLIRContext *ctx = b.getContext();
  AffineMap atI = AffineMap::get(2, 0, {getAffineDimExpr(0, ctx)}, ctx);
  AffineMap atJMap = AffineMap::get(2, 0, {getAffineDimExpr(1, ctx)}, ctx);
  SmallVector<AffineMap> maps;
  for (bool j : atJ)
    maps.push_back(j ? atJMap : atI);
  maps.push_back(atI);
  SmallVector<utils::IteratorType> iterators = {utils::IteratorType::parallel,
                                                utils::IteratorType::reduction};
  auto generic = linalg::GenericOp::create(b, l, init.getType(), ins, init, maps, iterators,
                                           [&](OpBuilder &nb, Location nl, ValueRange args) {
                                             Value i = linalg::IndexOp::create(nb, nl, 0);
                                             Value j = linalg::IndexOp::create(nb, nl, 1);
                                             Value result =
                                                 body(nb, nl, args.drop_back(), args.back(), i, j);
                                             linalg::YieldOp::create(nb, nl, result);
                                           });
  return generic.getResult(0);
}

struct UniquePattern : OpRewritePattern<UniqueOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(UniqueOp op, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    RankedTensorType valuesType = op.getValues().getType();
    Type et = valuesType.getElementType();
    Type i64 = rewriter.getI64Type();

    // The input as one row.
    Value input = op.getInput();
    RankedTensorType in = tensorType(input);
    SmallVector<OpFoldResult> sizes;
    if (valuesType.isDynamicDim(0)) {
      Value n = arith::ConstantIndexOp::create(rewriter, loc, 1);
      for (int64_t d = 0; d < in.getRank(); ++d)
        n = arith::MulIOp::create(
            rewriter, loc, n,
            getValueOrCreateConstantIndexOp(rewriter, loc, dimOf(rewriter, loc, input, d)));
      sizes.push_back(n);
    }
    Value x = in.getRank() == 1 && in == valuesType
                  ? input
                  : buildReshape(rewriter, loc, input, valuesType, sizes);
    auto counts = RankedTensorType::get(valuesType.getShape(), i64);
    Value zero = arith::ConstantIntOp::create(rewriter, loc, i64, 0);
    Value zeros = linalg::FillOp::create(rewriter, loc, ValueRange{zero},
                                         ValueRange{emptyTensor(rewriter, loc, counts, sizes)})
                      .getResult(0);
    Value one = arith::ConstantIntOp::create(rewriter, loc, i64, 1);

    // Earlier elements equal to each one: 0 for the first of its value.
    Value earlier = pairwise(
        rewriter, loc, ValueRange{x, x}, {false, true}, zeros,
        [&](OpBuilder &b, Location l, ValueRange args, Value acc, Value i, Value j) -> Value {
          Value counted =
              arith::AndIOp::create(b, l, compareNanLast(b, l, args[1], args[0], /*less=*/false),
                                    arith::CmpIOp::create(b, l, arith::CmpIPredicate::ult, j, i));
          return arith::AddIOp::create(
              b, l, acc, arith::SelectOp::create(b, l, counted, one, zeroOf(b, l, i64)));
        });
    // The rank of each element: the first elements smaller than it.
    Value rank = pairwise(
        rewriter, loc, ValueRange{x, x, earlier}, {false, true, true}, zeros,
        [&](OpBuilder &b, Location l, ValueRange args, Value acc, Value, Value) -> Value {
          Value first =
              arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq, args[2], zeroOf(b, l, i64));
          Value counted = arith::AndIOp::create(
              b, l, first, compareNanLast(b, l, args[1], args[0], /*less=*/true));
          return arith::AddIOp::create(
              b, l, acc, arith::SelectOp::create(b, l, counted, one, zeroOf(b, l, i64)));
        });
    // Result r: the first element of rank r (zero past the count).
    Value fill = linalg::FillOp::create(rewriter, loc, ValueRange{zeroOf(rewriter, loc, et)},
                                        ValueRange{emptyTensor(rewriter, loc, valuesType, sizes)})
                     .getResult(0);
    Value values = pairwise(
        rewriter, loc, ValueRange{x, earlier, rank}, {true, true, true}, fill,
        [&](OpBuilder &b, Location l, ValueRange args, Value acc, Value r, Value) -> Value {
          Value first =
              arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq, args[1], zeroOf(b, l, i64));
          Value atR = arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq, args[2],
                                            arith::IndexCastOp::create(b, l, i64, r));
          return arith::SelectOp::create(b, l, arith::AndIOp::create(b, l, first, atR), args[0],
                                         acc);
        });
    // The count: the first elements.
    auto scalar = RankedTensorType::get({}, i64);
    Value scalarEmpty = tensor::EmptyOp::create(rewriter, loc, scalar.getShape(), i64);
    Value countInit =
        linalg::FillOp::create(rewriter, loc, ValueRange{zero}, ValueRange{scalarEmpty})
            .getResult(0);
    MLIRContext *ctx = rewriter.getContext();
    auto count = linalg::GenericOp::create(
        rewriter, loc, scalar, ValueRange{earlier}, countInit,
        ArrayRef<AffineMap>{AffineMap::getMultiDimIdentityMap(1, ctx),
                            AffineMap::get(1, 0, {}, ctx)},
        ArrayRef<utils::IteratorType>{utils::IteratorType::reduction},
        [&](OpBuilder &b, Location l, ValueRange args) {
          Value first =
              arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq, args[0], zeroOf(b, l, i64));
          Value add = arith::AddIOp::create(
              b, l, args[1], arith::SelectOp::create(b, l, first, one, zeroOf(b, l, i64)));
          linalg::YieldOp::create(b, l, add);
        });
    rewriter.replaceOp(op, {values, count.getResult(0)});
    return success();
  }
};

} // namespace

void linalg_lowering::populateSetPatterns(RewritePatternSet &patterns) {
  patterns.add<UniquePattern>(patterns.getContext());
}
