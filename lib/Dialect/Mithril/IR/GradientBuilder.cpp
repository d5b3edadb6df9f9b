//===- GradientBuilder.cpp - what gradient rules build with ---------------===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//

#include "mithril/Dialect/Mithril/IR/GradientBuilder.h"

using namespace mlir;
using namespace mithril;

static RankedTensorType typeOf(Value v) { return cast<RankedTensorType>(v.getType()); }

void GradientBuilder::accumulateUnbroadcast(Value operand, Value grad) {
  accumulate(operand, unbroadcast(grad, typeOf(operand)));
}

Value GradientBuilder::cst(Type elementType, double v) {
  return scalarConstant(b, loc, elementType, v);
}

Value GradientBuilder::cstLike(Value like, double v) {
  return cst(typeOf(like).getElementType(), v);
}

Value GradientBuilder::zerosLike(Value like) {
  RankedTensorType t = typeOf(like);
  if (t.hasStaticShape())
    return ConstantOp::create(b, loc,
                              DenseElementsAttr::get(t, b.getFloatAttr(t.getElementType(), 0.0)));
  return mul(like, cstLike(like, 0.0));
}

Value GradientBuilder::add(Value x, Value y) { return AddOp::create(b, loc, x, y); }
Value GradientBuilder::sub(Value x, Value y) { return SubtractOp::create(b, loc, x, y); }
Value GradientBuilder::mul(Value x, Value y) { return MultiplyOp::create(b, loc, x, y); }
Value GradientBuilder::div(Value x, Value y) { return DivideOp::create(b, loc, x, y); }
Value GradientBuilder::neg(Value x) { return NegateOp::create(b, loc, x); }
Value GradientBuilder::exp(Value x) { return ExpOp::create(b, loc, x); }
Value GradientBuilder::log(Value x) { return LogOp::create(b, loc, x); }
Value GradientBuilder::sign(Value x) { return SignOp::create(b, loc, x); }

Value GradientBuilder::cast(Value x, Type elementType) {
  return CastOp::create(b, loc, x, TypeAttr::get(elementType));
}

Value GradientBuilder::mask(Value predicate, Value like) {
  return cast(predicate, typeOf(like).getElementType());
}

Value GradientBuilder::where(Value c, Value x, Value y) { return WhereOp::create(b, loc, c, x, y); }
Value GradientBuilder::gt(Value x, Value y) { return GreaterOp::create(b, loc, x, y); }
Value GradientBuilder::lt(Value x, Value y) { return LessOp::create(b, loc, x, y); }
Value GradientBuilder::eq(Value x, Value y) { return EqualOp::create(b, loc, x, y); }

Value GradientBuilder::reshape(Value x, ArrayRef<int64_t> shape) {
  if (typeOf(x).getShape() == shape)
    return x;
  return ReshapeOp::create(b, loc, x, b.getDenseI64ArrayAttr(shape));
}

Value GradientBuilder::transpose(Value x, ArrayRef<int64_t> perm) {
  return TransposeOp::create(b, loc, x, b.getDenseI64ArrayAttr(perm));
}

Value GradientBuilder::transposeLast2(Value x) {
  int64_t r = typeOf(x).getRank();
  SmallVector<int64_t> perm;
  for (int64_t i = 0; i < r; ++i)
    perm.push_back(i);
  std::swap(perm[r - 1], perm[r - 2]);
  return transpose(x, perm);
}

Value GradientBuilder::sum(Value x, ArrayRef<int64_t> axes, bool keepdim) {
  return SumOp::create(b, loc, x, b.getDenseI64ArrayAttr(axes), b.getBoolAttr(keepdim));
}

Value GradientBuilder::mean(Value x, ArrayRef<int64_t> axes, bool keepdim) {
  return MeanOp::create(b, loc, x, b.getDenseI64ArrayAttr(axes), b.getBoolAttr(keepdim));
}

Value GradientBuilder::matmul(Value x, Value y) { return MatmulOp::create(b, loc, x, y); }

Value GradientBuilder::broadcastTo(Value x, ArrayRef<int64_t> shape) {
  if (typeOf(x).getShape() == shape)
    return x;
  return BroadcastToOp::create(b, loc, x, b.getDenseI64ArrayAttr(shape));
}

Value GradientBuilder::unbroadcast(Value g, RankedTensorType target) {
  RankedTensorType gt = typeOf(g);
  if (gt.getShape() == target.getShape())
    return g;
  int64_t lead = gt.getRank() - target.getRank();
  SmallVector<int64_t> axes;
  for (int64_t i = 0; i < gt.getRank(); ++i)
    if (i < lead || (target.getDimSize(i - lead) == 1 && gt.getDimSize(i) != 1))
      axes.push_back(i);
  Value r = axes.empty() ? g : sum(g, axes, /*keepdim=*/true);
  return reshape(r, target.getShape());
}

Value GradientBuilder::keepAxes(Value reduced, RankedTensorType input, ArrayRef<int64_t> axes,
                                bool keepdim) {
  if (keepdim)
    return reduced;
  SmallVector<int64_t> shape(input.getShape());
  for (int64_t a : axes)
    shape[a] = 1;
  return reshape(reduced, shape);
}
