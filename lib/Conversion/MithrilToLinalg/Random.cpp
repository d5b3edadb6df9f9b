//===- Random.cpp - random samples to linalg ------------------------------===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//
//
// random_normal and random_uniform are counter-based: every element is computed from the key and
// its own index, so the samples are the same whatever the schedule, vector
// width or thread count, and the op needs no state.
//
//===----------------------------------------------------------------------===//

#include "Utils.h"

#include "mithril/Dialect/Mithril/IR/MithrilOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace mithril;
using namespace mithril::linalg_lowering;

namespace {

Value i64Constant(OpBuilder &b, Location loc, uint64_t value) {
  return arith::ConstantOp::create(b, loc, b.getI64IntegerAttr(static_cast<int64_t>(value)));
}

/// splitmix64's output function: a bijective mix of all 64 bits.
Value mix64(OpBuilder &b, Location loc, Value z) {
  auto xorShift = [&](Value v, uint64_t shift) {
    return arith::XOrIOp::create(b, loc, v,
                                 arith::ShRUIOp::create(b, loc, v, i64Constant(b, loc, shift)));
  };
  z = arith::MulIOp::create(b, loc, xorShift(z, 30), i64Constant(b, loc, 0xbf58476d1ce4e5b9ULL));
  z = arith::MulIOp::create(b, loc, xorShift(z, 27), i64Constant(b, loc, 0x94d049bb133111ebULL));
  return xorShift(z, 31);
}

constexpr uint64_t kGamma = 0x9e3779b97f4a7c15ULL; // splitmix64's increment

/// The uniform in [0, 1) (or (0, 1] with `open`) of the top 53 bits of the
/// stream `seed` at `position`.
Value uniformAt(OpBuilder &b, Location loc, Value seed, Value position, bool open) {
  Value state = arith::AddIOp::create(
      b, loc, seed,
      arith::MulIOp::create(b, loc, arith::AddIOp::create(b, loc, position, i64Constant(b, loc, 1)),
                            i64Constant(b, loc, kGamma)));
  Value bits = arith::ShRUIOp::create(b, loc, mix64(b, loc, state), i64Constant(b, loc, 11));
  Value u = arith::UIToFPOp::create(b, loc, b.getF64Type(), bits);
  if (open) // no zero: its logarithm is taken
    u = arith::AddFOp::create(b, loc, u, arith::ConstantOp::create(b, loc, b.getF64FloatAttr(1.0)));
  return arith::MulFOp::create(b, loc, u,
                               arith::ConstantOp::create(b, loc, b.getF64FloatAttr(0x1p-53)));
}

/// The row-major position of the element a linalg.generic over a static
/// `shape` computes.
Value linearPosition(OpBuilder &b, Location loc, ArrayRef<int64_t> shape) {
  Value linear = i64Constant(b, loc, 0);
  for (int64_t d = 0, rank = shape.size(); d < rank; ++d) {
    Value index =
        arith::IndexCastOp::create(b, loc, b.getI64Type(), linalg::IndexOp::create(b, loc, d));
    linear = arith::AddIOp::create(
        b, loc, arith::MulIOp::create(b, loc, linear, i64Constant(b, loc, shape[d])), index);
  }
  return linear;
}

Value roundTo(OpBuilder &b, Location loc, Type et, Value f64Value) {
  return et.isF64() ? f64Value : arith::TruncFOp::create(b, loc, et, f64Value).getResult();
}

/// Replaces a random op by the elements `sample` computes from the seed (the
/// key, mixed: nearby keys give unrelated streams) and the element's
/// position.
template <typename OpT>
LogicalResult generateSamples(OpT op, PatternRewriter &rewriter,
                              function_ref<Value(OpBuilder &, Location, Value, Value)> sample) {
  Location loc = op.getLoc();
  RankedTensorType type = op.getType();
  int64_t rank = type.getRank();
  // The key is an operand of the generic (read inside it, as a GPU kernel
  // must read it), broadcast to every element.
  SmallVector<AffineMap> maps = {AffineMap::get(rank, 0, {}, rewriter.getContext()),
                                 rewriter.getMultiDimIdentityMap(rank)};
  SmallVector<OpFoldResult> sizes;
  for (int64_t d : type.getShape())
    sizes.push_back(rewriter.getIndexAttr(d));
  SmallVector<utils::IteratorType> iterators(rank, utils::IteratorType::parallel);
  auto generic = linalg::GenericOp::create(
      rewriter, loc, TypeRange{type}, ValueRange{op.getKey()},
      ValueRange{emptyTensor(rewriter, loc, type, sizes)}, maps, iterators,
      [&](OpBuilder &b, Location l, ValueRange args) {
        Value seed = mix64(b, l, args[0]);
        Value z = sample(b, l, seed, linearPosition(b, l, type.getShape()));
        linalg::YieldOp::create(b, l, roundTo(b, l, type.getElementType(), z));
      });
  rewriter.replaceOp(op, generic.getResult(0));
  return success();
}

struct RandomNormalPattern : OpRewritePattern<RandomNormalOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(RandomNormalOp op, PatternRewriter &rewriter) const override {
    return generateSamples(op, rewriter, [](OpBuilder &b, Location l, Value seed, Value position) {
      Value first = arith::MulIOp::create(b, l, position, i64Constant(b, l, 2));
      Value second = arith::AddIOp::create(b, l, first, i64Constant(b, l, 1));
      Value u1 = uniformAt(b, l, seed, first, /*open=*/true);
      Value u2 = uniformAt(b, l, seed, second, /*open=*/false);
      // Box-Muller: sqrt(-2 ln u1) cos(2 pi u2).
      Value radius = math::SqrtOp::create(
          b, l,
          arith::MulFOp::create(b, l, arith::ConstantOp::create(b, l, b.getF64FloatAttr(-2.0)),
                                math::LogOp::create(b, l, u1)));
      Value angle = arith::MulFOp::create(
          b, l, arith::ConstantOp::create(b, l, b.getF64FloatAttr(6.283185307179586477)), u2);
      return arith::MulFOp::create(b, l, radius, math::CosOp::create(b, l, angle)).getResult();
    });
  }
};

struct RandomUniformPattern : OpRewritePattern<RandomUniformOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(RandomUniformOp op, PatternRewriter &rewriter) const override {
    return generateSamples(op, rewriter, [](OpBuilder &b, Location l, Value seed, Value position) {
      return uniformAt(b, l, seed, position, /*open=*/false);
    });
  }
};

} // namespace

void linalg_lowering::populateRandomPatterns(RewritePatternSet &patterns) {
  patterns.add<RandomNormalPattern, RandomUniformPattern>(patterns.getContext());
}
