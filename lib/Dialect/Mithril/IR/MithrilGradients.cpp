//===- MithrilGradients.cpp - vector-Jacobian products of the ops ---------===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
// Each differentiable op's GradientOpInterface::buildGradient: given the
// adjoint of the op's result, it adds its operands' adjoints. The rules build
// mithril ops, which then go through the same shape rules, fusion and code
// generation as the forward model and reuse its values instead of
// recomputing them. mithril-autodiff is the driver that walks the model and
// asks each op.
//
//===----------------------------------------------------------------------===//

#include "mithril/Dialect/Mithril/IR/GradientBuilder.h"

#include <cmath>

using namespace mlir;
using namespace mithril;

#include "mithril/Dialect/Mithril/IR/MithrilInterfaces.cpp.inc"

static RankedTensorType typeOf(Value v) { return cast<RankedTensorType>(v.getType()); }

static bool isFloatTensor(Value v) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  return t && isa<FloatType>(t.getElementType());
}

//===----------------------------------------------------------------------===//
// Arithmetic
//===----------------------------------------------------------------------===//

LogicalResult AddOp::buildGradient(GradientBuilder &g, Value grad) {
  g.accumulateUnbroadcast(getLhs(), grad);
  g.accumulateUnbroadcast(getRhs(), grad);
  return success();
}

LogicalResult SubtractOp::buildGradient(GradientBuilder &g, Value grad) {
  g.accumulateUnbroadcast(getLhs(), grad);
  g.accumulateUnbroadcast(getRhs(), g.neg(grad));
  return success();
}

LogicalResult MultiplyOp::buildGradient(GradientBuilder &g, Value grad) {
  g.accumulateUnbroadcast(getLhs(), g.mul(grad, getRhs()));
  g.accumulateUnbroadcast(getRhs(), g.mul(grad, getLhs()));
  return success();
}

LogicalResult DivideOp::buildGradient(GradientBuilder &g, Value grad) {
  g.accumulateUnbroadcast(getLhs(), g.div(grad, getRhs()));
  g.accumulateUnbroadcast(getRhs(), g.neg(g.div(g.mul(grad, getResult()), getRhs())));
  return success();
}

LogicalResult PowerOp::buildGradient(GradientBuilder &g, Value grad) {
  // d/da a^b = b a^(b-1); d/db a^b = a^b log(a)
  Value a = getLhs(), b = getRhs(), y = getResult();
  Value bm1 = g.sub(b, g.cstLike(b, 1.0));
  g.accumulateUnbroadcast(a, g.mul(grad, g.mul(b, PowerOp::create(g.b, g.loc, a, bm1))));
  // a^b log(a), taken as 0 where a^b is 0 (a = 0 < b, or underflow) rather
  // than 0 * -inf.
  if (g.isActive(b)) {
    Value isZero = g.eq(y, g.cstLike(y, 0.0));
    g.accumulateUnbroadcast(b, g.mul(grad, g.where(isZero, g.cstLike(y, 0.0), g.mul(y, g.log(a)))));
  }
  return success();
}

/// Minimum and maximum: ties share the gradient equally.
static LogicalResult extremumGradient(GradientBuilder &g, Value grad, Value lhs, Value rhs,
                                      bool isMax) {
  Value first = g.mask(isMax ? g.gt(lhs, rhs) : g.lt(lhs, rhs), grad);
  Value tie = g.mul(g.mask(g.eq(lhs, rhs), grad), g.cstLike(grad, 0.5));
  Value w0 = g.add(first, tie);
  Value w1 = g.sub(g.cstLike(grad, 1.0), w0);
  g.accumulateUnbroadcast(lhs, g.mul(grad, w0));
  g.accumulateUnbroadcast(rhs, g.mul(grad, w1));
  return success();
}

LogicalResult MinimumOp::buildGradient(GradientBuilder &g, Value grad) {
  return extremumGradient(g, grad, getLhs(), getRhs(), /*isMax=*/false);
}

LogicalResult MaximumOp::buildGradient(GradientBuilder &g, Value grad) {
  return extremumGradient(g, grad, getLhs(), getRhs(), /*isMax=*/true);
}

LogicalResult AllReduceOp::buildGradient(GradientBuilder &g, Value grad) {
  // Only a tensor group's sum is differentiated (the data group's sums come
  // after autodiff): its cotangent is the same on every rank of the group,
  // and each rank's partial product gets all of it.
  if (getGroup() != "tensor")
    return emitOpError("a sum over the data group is not differentiable; "
                       "mithril-all-reduce-gradients runs after mithril-autodiff");
  g.accumulate(getInput(), grad);
  return success();
}

LogicalResult ReplicateOp::buildGradient(GradientBuilder &g, Value grad) {
  auto sum = AllReduceOp::create(g.b, g.loc, grad, g.b.getStringAttr(getGroup()));
  g.accumulate(getInput(), sum.getResult());
  return success();
}

LogicalResult NegateOp::buildGradient(GradientBuilder &g, Value grad) {
  g.accumulate(getInput(), g.neg(grad));
  return success();
}

LogicalResult AbsOp::buildGradient(GradientBuilder &g, Value grad) {
  g.accumulate(getInput(), g.mul(grad, g.sign(getInput())));
  return success();
}

LogicalResult SquareOp::buildGradient(GradientBuilder &g, Value grad) {
  g.accumulate(getInput(), g.mul(grad, g.mul(getInput(), g.cstLike(grad, 2.0))));
  return success();
}

LogicalResult ExpOp::buildGradient(GradientBuilder &g, Value grad) {
  g.accumulate(getInput(), g.mul(grad, getResult()));
  return success();
}

LogicalResult LogOp::buildGradient(GradientBuilder &g, Value grad) {
  g.accumulate(getInput(), g.div(grad, getInput()));
  return success();
}

LogicalResult SqrtOp::buildGradient(GradientBuilder &g, Value grad) {
  g.accumulate(getInput(), g.div(grad, g.mul(getResult(), g.cstLike(grad, 2.0))));
  return success();
}

LogicalResult SinOp::buildGradient(GradientBuilder &g, Value grad) {
  g.accumulate(getInput(), g.mul(grad, CosOp::create(g.b, g.loc, getInput())));
  return success();
}

LogicalResult CosOp::buildGradient(GradientBuilder &g, Value grad) {
  g.accumulate(getInput(), g.neg(g.mul(grad, SinOp::create(g.b, g.loc, getInput()))));
  return success();
}

LogicalResult ReciprocalOp::buildGradient(GradientBuilder &g, Value grad) {
  Value y = getResult();
  g.accumulate(getInput(), g.neg(g.mul(grad, g.mul(y, y))));
  return success();
}

LogicalResult ErfOp::buildGradient(GradientBuilder &g, Value grad) {
  // 2/sqrt(pi) exp(-x^2)
  Value x = getInput();
  Value e = g.exp(g.neg(g.mul(x, x)));
  g.accumulate(x, g.mul(grad, g.mul(e, g.cstLike(grad, 2.0 / std::sqrt(M_PI)))));
  return success();
}

LogicalResult CastOp::buildGradient(GradientBuilder &g, Value grad) {
  if (isFloatTensor(getInput()))
    g.accumulate(getInput(), g.cast(grad, typeOf(getInput()).getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// Activations
//===----------------------------------------------------------------------===//

LogicalResult ReluOp::buildGradient(GradientBuilder &g, Value grad) {
  Value x = getInput();
  g.accumulate(x, g.mul(grad, g.mask(g.gt(x, g.cstLike(x, 0.0)), grad)));
  return success();
}

LogicalResult LeakyReluOp::buildGradient(GradientBuilder &g, Value grad) {
  Value x = getInput();
  Value slope = g.cstLike(grad, getSlope().convertToDouble());
  Value pos = g.gt(x, g.cstLike(x, 0.0));
  g.accumulate(x, g.mul(grad, g.where(pos, g.cstLike(grad, 1.0), slope)));
  return success();
}

LogicalResult SigmoidOp::buildGradient(GradientBuilder &g, Value grad) {
  Value y = getResult();
  g.accumulate(getInput(), g.mul(grad, g.mul(y, g.sub(g.cstLike(y, 1.0), y))));
  return success();
}

LogicalResult TanhOp::buildGradient(GradientBuilder &g, Value grad) {
  Value y = getResult();
  g.accumulate(getInput(), g.mul(grad, g.sub(g.cstLike(y, 1.0), g.mul(y, y))));
  return success();
}

LogicalResult SoftplusOp::buildGradient(GradientBuilder &g, Value grad) {
  g.accumulate(getInput(), g.mul(grad, SigmoidOp::create(g.b, g.loc, getInput())));
  return success();
}

LogicalResult GeluOp::buildGradient(GradientBuilder &g, Value grad) {
  Value a = getInput();
  Value d;
  if (getApproximate()) {
    // 0.5 (1 + t) + 0.5 a (1 - t^2) c (1 + 3k a^2), t = tanh(c (a + k a^3))
    double c = std::sqrt(2.0 / M_PI), k = 0.044715;
    Value a2 = g.mul(a, a);
    Value inner = g.mul(g.add(a, g.mul(g.mul(a2, a), g.cstLike(a, k))), g.cstLike(a, c));
    Value t = TanhOp::create(g.b, g.loc, inner);
    Value dInner = g.mul(g.add(g.cstLike(a, 1.0), g.mul(a2, g.cstLike(a, 3 * k))), g.cstLike(a, c));
    Value left = g.mul(g.add(g.cstLike(a, 1.0), t), g.cstLike(a, 0.5));
    Value right =
        g.mul(g.mul(g.mul(a, g.cstLike(a, 0.5)), g.sub(g.cstLike(a, 1.0), g.mul(t, t))), dInner);
    d = g.add(left, right);
  } else {
    // Phi(a) + a phi(a)
    Value phi = g.mul(g.exp(g.mul(g.mul(a, a), g.cstLike(a, -0.5))),
                      g.cstLike(a, 1.0 / std::sqrt(2.0 * M_PI)));
    Value cdf = g.mul(
        g.add(g.cstLike(a, 1.0), ErfOp::create(g.b, g.loc, g.mul(a, g.cstLike(a, M_SQRT1_2)))),
        g.cstLike(a, 0.5));
    d = g.add(cdf, g.mul(a, phi));
  }
  g.accumulate(a, g.mul(grad, d));
  return success();
}

LogicalResult WhereOp::buildGradient(GradientBuilder &g, Value grad) {
  Value zero = g.cstLike(grad, 0.0);
  g.accumulateUnbroadcast(getLhs(), g.where(getCond(), grad, zero));
  g.accumulateUnbroadcast(getRhs(), g.where(getCond(), zero, grad));
  return success();
}

//===----------------------------------------------------------------------===//
// Linear algebra and reductions
//===----------------------------------------------------------------------===//

LogicalResult MatmulOp::buildGradient(GradientBuilder &g, Value grad) {
  // Promote vectors to matrices as numpy.matmul does, differentiate the
  // matrix product, and drop the promoted axes again.
  Value a = getLhs(), bv = getRhs();
  RankedTensorType at = typeOf(a), bt = typeOf(bv);
  bool aVec = at.getRank() == 1, bVec = bt.getRank() == 1;
  Value a2 = aVec ? g.reshape(a, {1, at.getDimSize(0)}) : a;
  Value b2 = bVec ? g.reshape(bv, {bt.getDimSize(0), 1}) : bv;
  SmallVector<int64_t> gShape(typeOf(grad).getShape());
  if (aVec)
    gShape.insert(gShape.end() - (bVec ? 0 : 1), 1);
  if (bVec)
    gShape.push_back(1);
  Value g2 = g.reshape(grad, gShape);
  if (g.isActive(a)) {
    Value da = g.matmul(g2, g.transposeLast2(b2));
    da = g.unbroadcast(da, typeOf(a2));
    g.accumulate(a, g.reshape(da, at.getShape()));
  }
  if (g.isActive(bv)) {
    RankedTensorType a2t = typeOf(a2), b2t = typeOf(b2);
    bool bHasBatch = llvm::any_of(b2t.getShape().drop_back(2), [](int64_t d) { return d != 1; });
    if (a2t.getRank() > 2 && !bHasBatch) {
      // A matrix (a Linear's weight) applied to every matrix of a batch:
      // its gradient sums a^T g over the batch, which is one product of the
      // batch's rows stacked, a^T [K, B*N] by g [B*N, M]: deep, where the
      // batch's own products are each only N deep and their [B, K, M]
      // results, summed after, are B times the weight's size.
      int64_t k = a2t.getShape().back(), m = typeOf(g2).getShape().back();
      int64_t rows = a2t.getNumElements() / k;
      Value db = g.matmul(g.transposeLast2(g.reshape(a2, {rows, k})), g.reshape(g2, {rows, m}));
      g.accumulate(bv, g.reshape(db, bt.getShape()));
      return success();
    }
    Value db = g.matmul(g.transposeLast2(a2), g2);
    db = g.unbroadcast(db, typeOf(b2));
    g.accumulate(bv, g.reshape(db, bt.getShape()));
  }
  return success();
}

LogicalResult SumOp::buildGradient(GradientBuilder &g, Value grad) {
  auto in = typeOf(getInput());
  auto axes = reductionAxes(getAxes(), in.getRank());
  g.accumulate(getInput(), g.broadcastTo(g.keepAxes(grad, in, axes, getKeepdim()), in.getShape()));
  return success();
}

LogicalResult MeanOp::buildGradient(GradientBuilder &g, Value grad) {
  auto in = typeOf(getInput());
  auto axes = reductionAxes(getAxes(), in.getRank());
  int64_t count = 1;
  for (int64_t a : axes)
    count *= in.getDimSize(a);
  Value scaled = g.div(grad, g.cstLike(grad, count));
  g.accumulate(getInput(),
               g.broadcastTo(g.keepAxes(scaled, in, axes, getKeepdim()), in.getShape()));
  return success();
}

/// Max and min reductions: the gradient goes to the extreme elements, shared
/// among ties.
static LogicalResult extremeReductionGradient(GradientBuilder &g, Value grad, Value x, Value y,
                                              std::optional<ArrayRef<int64_t>> axesAttr,
                                              bool keepdim) {
  auto in = typeOf(x);
  auto axes = reductionAxes(axesAttr, in.getRank());
  Value yk = g.keepAxes(y, in, axes, keepdim);
  Value hit = g.mask(g.eq(x, yk), grad);
  Value count = g.sum(hit, axes, /*keepdim=*/true);
  Value gk = g.keepAxes(grad, in, axes, keepdim);
  g.accumulate(x, g.div(g.mul(hit, gk), count));
  return success();
}

LogicalResult MaxOp::buildGradient(GradientBuilder &g, Value grad) {
  return extremeReductionGradient(g, grad, getInput(), getResult(), getAxes(), getKeepdim());
}

LogicalResult MinOp::buildGradient(GradientBuilder &g, Value grad) {
  return extremeReductionGradient(g, grad, getInput(), getResult(), getAxes(), getKeepdim());
}

LogicalResult ProdOp::buildGradient(GradientBuilder &g, Value grad) {
  Value x = getInput();
  auto in = typeOf(x);
  auto axes = reductionAxes(getAxes(), in.getRank());
  // d prod / d x_i is the product of the others: prod / x_i without zeros;
  // with one zero, the product of the nonzero elements at the zero and 0
  // elsewhere; with two or more, 0 everywhere.
  Value zero = g.eq(x, g.cstLike(x, 0.0));
  Value nonzero = g.where(zero, g.cstLike(x, 1.0), x);
  Value prodNonzero =
      ProdOp::create(g.b, g.loc, nonzero, g.b.getDenseI64ArrayAttr(axes), g.b.getBoolAttr(true));
  Value zeros = g.sum(g.mask(zero, x), axes, /*keepdim=*/true);
  Value none = g.eq(zeros, g.cstLike(zeros, 0.0));
  Value one = g.eq(zeros, g.cstLike(zeros, 1.0));
  Value others =
      g.where(none, g.div(prodNonzero, nonzero),
              g.where(zero, g.where(one, prodNonzero, g.cstLike(x, 0.0)), g.cstLike(x, 0.0)));
  Value gk = g.keepAxes(grad, in, axes, getKeepdim());
  g.accumulate(x, g.mul(gk, others));
  return success();
}

LogicalResult VarianceOp::buildGradient(GradientBuilder &g, Value grad) {
  Value x = getInput();
  auto in = typeOf(x);
  auto axes = reductionAxes(getAxes(), in.getRank());
  int64_t count = 1;
  for (int64_t a : axes)
    count *= in.getDimSize(a);
  Value mean = g.mean(x, axes, /*keepdim=*/true);
  double scale = 2.0 / (count - getCorrection().convertToDouble());
  Value gk = g.keepAxes(grad, in, axes, getKeepdim());
  g.accumulate(x, g.mul(g.mul(gk, g.sub(x, mean)), g.cstLike(grad, scale)));
  return success();
}

LogicalResult LayerNormOp::buildGradient(GradientBuilder &g, Value grad) {
  // One expression, as torch's: (g - mean(g) - xhat mean(g xhat)) / stddev,
  // g the gradient times the weight. Differentiating the decomposition
  // instead adds up contributions that cancel (all of them over one
  // normalized element) in an order that leaves their rounding behind,
  // amplified by 1 / stddev.
  Value x = getInput();
  SmallVector<int64_t> axes = getNormalizedAxes();
  auto mean = [&](Value v) { return g.mean(v, axes, /*keepdim=*/true); };
  Value centered = buildCentered(g.b, g.loc);
  Value var = mean(SquareOp::create(g.b, g.loc, centered));
  Value stddev = SqrtOp::create(g.b, g.loc, g.add(var, g.cstLike(x, getEps().convertToDouble())));
  Value xhat = g.div(centered, stddev);
  ValueRange affine = getAffine();
  Value gw = getScaled() ? g.mul(grad, affine.front()) : grad;
  Value inner = g.sub(g.sub(gw, mean(gw)), g.mul(xhat, mean(g.mul(gw, xhat))));
  g.accumulate(x, g.div(inner, stddev));
  if (getScaled())
    g.accumulateUnbroadcast(affine.front(), g.mul(grad, xhat));
  if (getShifted())
    g.accumulateUnbroadcast(affine.back(), grad);
  return success();
}

static Value tril(GradientBuilder &g, Value m, int64_t diagonal) {
  return TrilOp::create(g.b, g.loc, m, g.b.getI64IntegerAttr(diagonal));
}

/// The triangle of the matrix `m` that a triangular operand is read from:
/// the lower one, or the upper one (`m` less its strict lower triangle).
static Value readTriangle(GradientBuilder &g, Value m, bool lower) {
  return lower ? tril(g, m, 0) : g.sub(m, tril(g, m, -1));
}

LogicalResult TriangularSolveOp::buildGradient(GradientBuilder &g, Value grad) {
  // X = op(A)^-1 B. B's adjoint is op(A)^-T dX, the solve with the other
  // transposition; op(A)'s is -dB X^T, so A's is that or its transpose, on
  // the triangle of A the solve reads (the other one is not an input).
  bool lower = getLower(), transposed = getTranspose();
  Value dB = TriangularSolveOp::create(g.b, g.loc, getMatrix(), grad, g.b.getBoolAttr(lower),
                                       g.b.getBoolAttr(!transposed));
  g.accumulate(getRhs(), dB);
  if (g.isActive(getMatrix())) {
    Value x = getResult();
    Value dA = transposed ? g.matmul(x, g.transposeLast2(dB)) : g.matmul(dB, g.transposeLast2(x));
    g.accumulate(getMatrix(), g.neg(readTriangle(g, dA, lower)));
  }
  return success();
}

LogicalResult CholeskyOp::buildGradient(GradientBuilder &g, Value grad) {
  // A = L L^T: dA = sym(L^-T Phi(L^T dL) L^-1), Phi taking the lower
  // triangle and halving the diagonal (torch's rule, which treats A as
  // symmetric). Entries of dL above the diagonal do not reach Phi's triangle.
  Value l = getResult();
  Value p = g.matmul(g.transposeLast2(l), grad);
  Value halfDiagonal = g.mul(g.mul(p, EyeLikeOp::create(g.b, g.loc, p)), g.cstLike(p, 0.5));
  Value phi = g.sub(tril(g, p, 0), halfDiagonal);
  // Two solves with L^T give L^-T (L^-T Phi)^T = (L^-T Phi L^-1)^T, whose
  // symmetric part is the same.
  BoolAttr yes = g.b.getBoolAttr(true);
  Value left = TriangularSolveOp::create(g.b, g.loc, l, phi, yes, yes);
  Value both = TriangularSolveOp::create(g.b, g.loc, l, g.transposeLast2(left), yes, yes);
  g.accumulate(getInput(), g.mul(g.add(both, g.transposeLast2(both)), g.cstLike(both, 0.5)));
  return success();
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

LogicalResult TrilOp::buildGradient(GradientBuilder &g, Value grad) {
  g.accumulate(getInput(), tril(g, grad, static_cast<int64_t>(getDiagonal())));
  return success();
}

/// Ops that only change the shape: the gradient is reshaped back.
static LogicalResult reshapeGradient(GradientBuilder &g, Value grad, Value input) {
  g.accumulate(input, g.reshape(grad, typeOf(input).getShape()));
  return success();
}

LogicalResult ReshapeOp::buildGradient(GradientBuilder &g, Value grad) {
  return reshapeGradient(g, grad, getInput());
}
LogicalResult FlattenOp::buildGradient(GradientBuilder &g, Value grad) {
  return reshapeGradient(g, grad, getInput());
}
LogicalResult SqueezeOp::buildGradient(GradientBuilder &g, Value grad) {
  return reshapeGradient(g, grad, getInput());
}
LogicalResult UnsqueezeOp::buildGradient(GradientBuilder &g, Value grad) {
  return reshapeGradient(g, grad, getInput());
}

LogicalResult TransposeOp::buildGradient(GradientBuilder &g, Value grad) {
  SmallVector<int64_t> perm = getPermutationOrDefault(), inverse(perm.size());
  for (auto [i, p] : llvm::enumerate(perm))
    inverse[p] = i;
  g.accumulate(getInput(), g.transpose(grad, inverse));
  return success();
}

LogicalResult BroadcastToOp::buildGradient(GradientBuilder &g, Value grad) {
  g.accumulateUnbroadcast(getInput(), grad);
  return success();
}

LogicalResult ConcatOp::buildGradient(GradientBuilder &g, Value grad) {
  int64_t rank = typeOf(getResult()).getRank();
  int64_t axis = normalizeAxis(getAxis(), rank);
  int64_t offset = 0;
  for (Value in : getInputs()) {
    int64_t size = typeOf(in).getDimSize(axis);
    int64_t axes[] = {axis}, start[] = {offset}, stop[] = {offset + size}, step[] = {1};
    g.accumulate(in,
                 SliceOp::create(g.b, g.loc, grad, g.b.getDenseI64ArrayAttr(axes),
                                 g.b.getDenseI64ArrayAttr(start), g.b.getDenseI64ArrayAttr(stop),
                                 g.b.getDenseI64ArrayAttr(step)));
    offset += size;
  }
  return success();
}

LogicalResult ReverseOp::buildGradient(GradientBuilder &g, Value grad) {
  g.accumulate(getInput(), ReverseOp::create(g.b, g.loc, grad, getAxesAttr()));
  return success();
}

LogicalResult SliceOp::buildGradient(GradientBuilder &g, Value grad) {
  g.accumulate(getInput(),
               SliceGradOp::create(g.b, g.loc, grad,
                                   g.b.getDenseI64ArrayAttr(typeOf(getInput()).getShape()),
                                   getAxesAttr(), getStartAttr(), getStopAttr(), getStepAttr()));
  return success();
}

LogicalResult PadOp::buildGradient(GradientBuilder &g, Value grad) {
  // The input's elements are the slice [before, before + size) of each axis.
  ArrayRef<int64_t> shape = typeOf(getInput()).getShape(), width = getPadWidth();
  SmallVector<int64_t> axes, start, stop, step;
  for (int64_t axis = 0, rank = shape.size(); axis < rank; ++axis) {
    if (width[2 * axis] == 0 && width[2 * axis + 1] == 0)
      continue;
    if (ShapedType::isDynamic(shape[axis]))
      return emitOpError("needs a static size along padded axis ") << axis << " for its gradient";
    axes.push_back(axis);
    start.push_back(width[2 * axis]);
    stop.push_back(width[2 * axis] + shape[axis]);
    step.push_back(1);
  }
  g.accumulate(getInput(),
               SliceOp::create(g.b, g.loc, grad, g.b.getDenseI64ArrayAttr(axes),
                               g.b.getDenseI64ArrayAttr(start), g.b.getDenseI64ArrayAttr(stop),
                               g.b.getDenseI64ArrayAttr(step)));
  return success();
}

LogicalResult EmbeddingOp::buildGradient(GradientBuilder &g, Value grad) {
  g.accumulate(getWeight(),
               EmbeddingGradOp::create(g.b, g.loc, getIndices(), grad,
                                       g.b.getI64IntegerAttr(typeOf(getWeight()).getDimSize(0))));
  return success();
}

//===----------------------------------------------------------------------===//
// Convolution and pooling: dedicated gradient primitives, or convolutions
// where the gradient is one.
//===----------------------------------------------------------------------===//

namespace {
/// The operands and attributes Conv1DOp and Conv2DOp share.
struct Convolution {
  template <typename OpTy>
  explicit Convolution(OpTy op)
      : op(op), input(op.getInput()), weight(op.getWeight()), bias(op.getBias()),
        stride(op.getStrideAttr()), padding(op.getPaddingAttr()), dilation(op.getDilationAttr()),
        groups(Builder(op.getContext()).getI64IntegerAttr(op.getGroups())) {}

  /// Whether it has unit stride and dilation, one group and static,
  /// non-empty shapes: its gradients are then convolutions too.
  bool isPlain() const {
    auto isOne = [](int64_t v) { return v == 1; };
    // Empty tensors keep the gradient ops, which know them; as a convolution
    // the window could be longer than the padded gradient.
    auto nonEmpty = [](Type t) {
      auto type = cast<RankedTensorType>(t);
      return type.hasStaticShape() && type.getNumElements() > 0;
    };
    return groups.getInt() == 1 && llvm::all_of(stride.asArrayRef(), isOne) &&
           llvm::all_of(dilation.asArrayRef(), isOne) &&
           llvm::all_of(op->getOperandTypes(), nonEmpty) &&
           typeOf(op->getResult(0)).getNumElements() > 0;
  }

  Operation *op;
  Value input, weight, bias;
  DenseI64ArrayAttr stride, padding, dilation;
  IntegerAttr groups;
};
} // namespace

/// A unit-stride, one-group convolution of the same rank as `like`.
static Value convolve(const Convolution &like, GradientBuilder &g, Value input, Value weight,
                      ArrayRef<int64_t> padding) {
  SmallVector<int64_t> ones(padding.size() / 2, 1);
  auto unit = g.b.getDenseI64ArrayAttr(ones), pads = g.b.getDenseI64ArrayAttr(padding);
  auto groups = g.b.getI64IntegerAttr(1);
  if (isa<Conv1DOp>(like.op))
    return Conv1DOp::create(g.b, g.loc, input, weight, Value(), unit, pads, unit, groups);
  return Conv2DOp::create(g.b, g.loc, input, weight, Value(), unit, pads, unit, groups);
}

/// Swaps the first two axes (batch and channels, or the kernel's output and
/// input channels).
static Value swapLeadingAxes(GradientBuilder &g, Value v) {
  SmallVector<int64_t> perm = {1, 0};
  for (int64_t i = 2, e = typeOf(v).getRank(); i < e; ++i)
    perm.push_back(i);
  return g.transpose(v, perm);
}

/// The weight gradient of a plain convolution is a convolution of the input,
/// channels and batch swapped, by the output gradient, likewise swapped, with
/// the forward padding: dW[f, c, k] = sum_{n, o} x[n, c, o + k] g[n, f, o].
/// Null when it does not qualify.
static Value weightGradientAsConvolution(const Convolution &conv, Value grad, GradientBuilder &g) {
  // A plain 2-D convolution keeps conv_grad_weight, whose lowering sums over
  // flat rows (a 3x3 "output" would not fill a register tile).
  if (!conv.isPlain() || isa<Conv2DOp>(conv.op))
    return Value();
  Value perChannel = convolve(conv, g, swapLeadingAxes(g, conv.input), swapLeadingAxes(g, grad),
                              conv.padding.asArrayRef());
  return swapLeadingAxes(g, perChannel);
}

/// The input gradient of a plain convolution is itself a convolution: of the
/// output gradient, padded by kernel - 1 - padding, with the kernel flipped
/// and its channels swapped. It then gets the forward convolution's
/// schedule, where the general conv_grad_input (a gather per element) does
/// not vectorize. Null when the convolution does not qualify.
static Value inputGradientAsConvolution(const Convolution &conv, Value grad, GradientBuilder &g) {
  if (!conv.isPlain())
    return Value();
  RankedTensorType weight = typeOf(conv.weight);
  ArrayRef<int64_t> forward = conv.padding.asArrayRef();
  int64_t spatial = weight.getRank() - 2;
  SmallVector<int64_t> padding, axes;
  for (int64_t i = 0; i < 2 * spatial; ++i) {
    int64_t pad = weight.getDimSize(2 + i / 2) - 1 - forward[i];
    if (pad < 0)
      return Value();
    padding.push_back(pad);
  }
  for (int64_t i = 2; i < weight.getRank(); ++i)
    axes.push_back(i);
  Value flipped = ReverseOp::create(g.b, g.loc, swapLeadingAxes(g, conv.weight),
                                    g.b.getDenseI64ArrayAttr(axes));
  return convolve(conv, g, grad, flipped, padding);
}

static LogicalResult convolutionGradient(const Convolution &conv, GradientBuilder &g, Value grad) {
  RankedTensorType in = typeOf(conv.input), w = typeOf(conv.weight);
  if (g.isActive(conv.input)) {
    if (Value viaConv = inputGradientAsConvolution(conv, grad, g))
      g.accumulate(conv.input, viaConv);
    else
      g.accumulate(conv.input,
                   ConvGradInputOp::create(g.b, g.loc, grad, conv.weight,
                                           g.b.getDenseI64ArrayAttr(in.getShape().drop_front(2)),
                                           conv.stride, conv.padding, conv.dilation, conv.groups));
  }
  if (g.isActive(conv.weight)) {
    if (Value viaConv = weightGradientAsConvolution(conv, grad, g))
      g.accumulate(conv.weight, viaConv);
    else
      g.accumulate(conv.weight,
                   ConvGradWeightOp::create(g.b, g.loc, conv.input, grad,
                                            g.b.getDenseI64ArrayAttr(w.getShape().drop_front(2)),
                                            conv.stride, conv.padding, conv.dilation, conv.groups));
  }
  if (conv.bias && g.isActive(conv.bias)) {
    SmallVector<int64_t> axes = {0};
    for (int64_t i = 2; i < typeOf(grad).getRank(); ++i)
      axes.push_back(i);
    g.accumulate(conv.bias, g.sum(grad, axes, /*keepdim=*/false));
  }
  return success();
}

LogicalResult Conv1DOp::buildGradient(GradientBuilder &g, Value grad) {
  return convolutionGradient(Convolution(*this), g, grad);
}

LogicalResult Conv2DOp::buildGradient(GradientBuilder &g, Value grad) {
  return convolutionGradient(Convolution(*this), g, grad);
}

template <typename OpTy>
static LogicalResult maxPoolGradient(OpTy op, GradientBuilder &g, Value grad) {
  g.accumulate(op.getInput(), MaxPoolGradOp::create(g.b, g.loc, op.getInput(), op.getResult(), grad,
                                                    op.getKernelSizeAttr(), op.getStrideAttr(),
                                                    op.getPaddingAttr(), op.getDilationAttr()));
  return success();
}

LogicalResult MaxPool1DOp::buildGradient(GradientBuilder &g, Value grad) {
  return maxPoolGradient(*this, g, grad);
}

LogicalResult MaxPool2DOp::buildGradient(GradientBuilder &g, Value grad) {
  return maxPoolGradient(*this, g, grad);
}

LogicalResult AvgPool2DOp::buildGradient(GradientBuilder &g, Value grad) {
  RankedTensorType in = typeOf(getInput());
  int64_t spatial = getKernelSize().size();
  g.accumulate(getInput(),
               AvgPoolGradOp::create(
                   g.b, g.loc, grad, g.b.getDenseI64ArrayAttr(in.getShape().take_back(spatial)),
                   getKernelSizeAttr(), getStrideAttr(), getPaddingAttr(), getDilationAttr()));
  return success();
}

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

LogicalResult SquaredErrorOp::buildGradient(GradientBuilder &g, Value grad) {
  Value d = g.mul(g.mul(grad, g.sub(getInput(), getTarget())), g.cstLike(grad, 2.0));
  g.accumulateUnbroadcast(getInput(), d);
  g.accumulateUnbroadcast(getTarget(), g.neg(d));
  return success();
}

LogicalResult AbsoluteErrorOp::buildGradient(GradientBuilder &g, Value grad) {
  Value d = g.mul(grad, g.sign(g.sub(getInput(), getTarget())));
  g.accumulateUnbroadcast(getInput(), d);
  g.accumulateUnbroadcast(getTarget(), g.neg(d));
  return success();
}

/// Hinge and its square. At the kink (margin 0) the subgradient is the
/// average of the two sides, as Mithril's backends compute it.
static LogicalResult hingeGradient(GradientBuilder &g, Value grad, Value input, Value target,
                                   bool squared) {
  Value margin = g.sub(g.cstLike(grad, 1.0), g.mul(input, target));
  Value on = g.add(g.mask(g.gt(margin, g.cstLike(margin, 0.0)), grad),
                   g.mul(g.mask(g.eq(margin, g.cstLike(margin, 0.0)), grad), g.cstLike(grad, 0.5)));
  Value factor = squared ? g.mul(g.mul(on, margin), g.cstLike(grad, 2.0)) : on;
  g.accumulateUnbroadcast(input, g.neg(g.mul(grad, g.mul(factor, target))));
  g.accumulateUnbroadcast(target, g.neg(g.mul(grad, g.mul(factor, input))));
  return success();
}

LogicalResult HingeOp::buildGradient(GradientBuilder &g, Value grad) {
  return hingeGradient(g, grad, getInput(), getTarget(), /*squared=*/false);
}

LogicalResult QuadHingeOp::buildGradient(GradientBuilder &g, Value grad) {
  return hingeGradient(g, grad, getInput(), getTarget(), /*squared=*/true);
}

LogicalResult KLDivergenceOp::buildGradient(GradientBuilder &g, Value grad) {
  Value input = getInput(), target = getTarget();
  // -target / input, 0 where the target is 0 (whatever the input).
  Value positive = g.gt(target, g.cstLike(target, 0.0));
  Value safeInput = g.where(positive, input, g.cstLike(input, 1.0));
  g.accumulateUnbroadcast(
      input, g.neg(g.mul(grad, g.where(positive, g.div(target, safeInput), g.cstLike(grad, 0.0)))));
  Value dt = g.add(g.sub(g.log(target), g.log(input)), g.cstLike(grad, 1.0));
  g.accumulateUnbroadcast(
      target, g.mul(grad, g.where(g.gt(target, g.cstLike(target, 0.0)), dt, g.cstLike(grad, 0.0))));
  return success();
}

LogicalResult QuantileOp::buildGradient(GradientBuilder &g, Value grad) {
  double qv = getQuantile().convertToDouble();
  Value d = g.sub(getTarget(), getInput());
  // d/dinput max(q d, (q-1) d) = -q where d > 0, 1 - q elsewhere. At d == 0
  // the subgradient is the average of the two sides.
  Value w = g.where(
      g.gt(d, g.cstLike(d, 0.0)), g.cstLike(grad, -qv),
      g.where(g.eq(d, g.cstLike(d, 0.0)), g.cstLike(grad, 0.5 - qv), g.cstLike(grad, 1.0 - qv)));
  g.accumulateUnbroadcast(getInput(), g.mul(grad, w));
  g.accumulateUnbroadcast(getTarget(), g.neg(g.mul(grad, w)));
  return success();
}

LogicalResult BinaryCrossEntropyOp::buildGradient(GradientBuilder &g, Value grad) {
  Value p = getInput(), t = getTarget();
  if (getFromLogits()) {
    Value s = SigmoidOp::create(g.b, g.loc, p);
    g.accumulateUnbroadcast(p, g.mul(grad, g.sub(s, t)));
    g.accumulateUnbroadcast(t, g.neg(g.mul(grad, p)));
  } else {
    Value one = g.cstLike(p, 1.0);
    Value denom = g.mul(p, g.sub(one, p));
    g.accumulateUnbroadcast(p, g.mul(grad, g.div(g.sub(p, t), denom)));
    g.accumulateUnbroadcast(t, g.neg(g.mul(grad, g.sub(g.log(p), g.log(g.sub(one, p))))));
  }
  return success();
}

LogicalResult CrossEntropyOp::buildGradient(GradientBuilder &g, Value grad) {
  // mithril-autodiff decomposes the other forms into log-probabilities first.
  if (!getFromLogProbs())
    return emitOpError("must be decomposed into log-probabilities before differentiation");
  Value logp = getInput(), target = getTarget();
  RankedTensorType in = typeOf(logp);
  int64_t classAxis = in.getRank() == 1 ? 0 : 1;
  // Per-sample seeds broadcast over the class axis.
  Value gk = UnsqueezeOp::create(g.b, g.loc, grad, g.b.getI64IntegerAttr(classAxis));
  Value weights;
  if (isa<IntegerType>(typeOf(target).getElementType())) {
    weights =
        OneHotOp::create(g.b, g.loc, target, g.b.getI64IntegerAttr(in.getDimSize(classAxis)),
                         g.b.getI64IntegerAttr(classAxis), TypeAttr::get(in.getElementType()));
  } else {
    weights = target;
    g.accumulate(target, g.neg(g.mul(gk, logp)));
  }
  g.accumulate(logp, g.neg(g.mul(gk, weights)));
  return success();
}

LogicalResult CustomCallOp::buildGradient(GradientBuilder &g, Value grad) {
  // Operand i's adjoint is the gradient function's answer for index i, from
  // the operands, the result and the result's adjoint.
  SmallVector<Value> operands(getOperands());
  operands.push_back(getResult());
  operands.push_back(grad);
  for (auto [i, operand] : llvm::enumerate(getOperands())) {
    if (!g.isActive(operand))
      continue;
    if (!getGradCallee())
      return emitOpError("@") << getCallee() << " has no gradient function, and its operand " << i
                              << " is differentiated: register one with the primitive";
    auto call = CustomCallOp::create(
        g.b, g.loc, operand.getType(), operands, g.b.getStringAttr(*getGradCallee()),
        /*grad_callee=*/nullptr, /*result_shape=*/nullptr, g.b.getI64IntegerAttr(i),
        /*element_type=*/nullptr, g.b.getI64IntegerAttr(i));
    g.accumulate(operand, call.getResult());
  }
  return success();
}
