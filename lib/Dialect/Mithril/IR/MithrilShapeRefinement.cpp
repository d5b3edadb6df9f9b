//===- MithrilShapeRefinement.cpp - backward shape rules ------------------===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
// The backward direction of shape inference: what an op's result and its
// other operands say of an operand's unknown sizes (ShapeRefinementOpInterface
// and the elementwise traits), and re-inference of result types.
//
//===----------------------------------------------------------------------===//

#include "mithril/Dialect/Mithril/IR/MithrilOps.h"
#include "mithril/Dialect/Mithril/IR/ShapeRefiner.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/Sequence.h"
#include "llvm/ADT/SmallSet.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mithril;

static constexpr int64_t kDyn = ShapedType::kDynamic;

//===----------------------------------------------------------------------===//
// Backward rules: operands' sizes from the result and the other operands
//===----------------------------------------------------------------------===//

LogicalResult ShapeRefiner::refine(Value value, int64_t dim, int64_t size) {
  auto type = cast<RankedTensorType>(value.getType());
  if (ShapedType::isDynamic(size) || dim < 0 || dim >= type.getRank())
    return success();
  if (!type.isDynamicDim(dim)) {
    if (type.getDimSize(dim) == size)
      return success();
    return op->emitOpError("needs dimension ")
           << dim << " of " << describeValue(value) << " (" << formatShape(type.getShape())
           << ") to be " << size;
  }
  SmallVector<int64_t> shape(type.getShape());
  shape[dim] = size;
  value.setType(RankedTensorType::get(shape, type.getElementType()));
  anyChange = true;
  return success();
}

int64_t ShapeRefiner::dimOf(Value v, int64_t d) {
  auto t = cast<RankedTensorType>(v.getType());
  return d >= 0 && d < t.getRank() ? t.getDimSize(d) : kDyn;
}

LogicalResult mithril::refineOperandShapesByTraits(ShapeRefiner &refiner) {
  Operation *op = refiner.getOp();
  if (op->hasTrait<traits::BroadcastingElementwise>()) {
    // An operand's unknown dimension must equal the result's when the other
    // operand cannot supply it (its dimension is 1 or missing). When both
    // could, the unknown dimension is taken to be the full size: unknown
    // sizes come from parameters whose shapes are not given, and those are
    // not stored broadcast. Were it really 1, the forward rules would report
    // the conflict instead of computing wrongly.
    auto rt = cast<RankedTensorType>(op->getResult(0).getType());
    for (unsigned i = 0; i < 2; ++i) {
      Value self = op->getOperand(i);
      if (refiner.keepsDynamic(self))
        continue;
      auto st = cast<RankedTensorType>(self.getType());
      for (int64_t d = 0; d < st.getRank(); ++d)
        if (st.isDynamicDim(d) &&
            failed(refiner.refine(self, d, rt.getDimSize(d + rt.getRank() - st.getRank()))))
          return failure();
    }
    return success();
  }
  if (op->hasTrait<OpTrait::SameOperandsAndResultShape>() ||
      (op->hasTrait<traits::Elementwise>() && op->getNumOperands() == 1)) {
    Value in = op->getOperand(0), out = op->getResult(0);
    for (int64_t d = 0; d < cast<RankedTensorType>(in.getType()).getRank(); ++d)
      if (failed(refiner.refine(in, d, ShapeRefiner::dimOf(out, d))))
        return failure();
  }
  return success();
}

LogicalResult MatmulOp::refineOperandShapes(ShapeRefiner &refiner) {
  auto dimOf = ShapeRefiner::dimOf;
  RankedTensorType lt = getLhs().getType(), rt = getRhs().getType();
  // The contraction dimension, both ways.
  int64_t lk = lt.getRank() - 1, rk = rt.getRank() == 1 ? 0 : rt.getRank() - 2;
  if (failed(refiner.refine(getLhs(), lk, dimOf(getRhs(), rk))) ||
      failed(refiner.refine(getRhs(), rk, dimOf(getLhs(), lk))))
    return failure();
  // The result's rows come from the lhs and its columns from the rhs.
  RankedTensorType out = getType();
  int64_t outRank = out.getRank();
  if (lt.getRank() >= 2 && rt.getRank() >= 2 &&
      (failed(refiner.refine(getLhs(), lt.getRank() - 2, out.getDimSize(outRank - 2))) ||
       failed(refiner.refine(getRhs(), rt.getRank() - 1, out.getDimSize(outRank - 1)))))
    return failure();
  return success();
}

LogicalResult CustomCallOp::refineOperandShapes(ShapeRefiner &refiner) {
  // The result's sizes are the operand dimensions its shape rule names.
  Value result = getResult();
  if (std::optional<ArrayRef<int64_t>> spec = getResultShape()) {
    for (size_t i = 0; i + 1 < spec->size(); i += 2)
      if ((*spec)[i] >= 0 && (*spec)[i] < int64_t(getOperands().size()) &&
          failed(refiner.refine(getOperands()[(*spec)[i]], (*spec)[i + 1],
                                ShapeRefiner::dimOf(result, i / 2))))
        return failure();
    return success();
  }
  int64_t like = getShapeOf();
  if (like < 0 || like >= int64_t(getOperands().size()))
    return success();
  for (int64_t d = 0, e = cast<RankedTensorType>(result.getType()).getRank(); d < e; ++d)
    if (failed(refiner.refine(getOperands()[like], d, ShapeRefiner::dimOf(result, d))))
      return failure();
  return success();
}

LogicalResult TriangularSolveOp::refineOperandShapes(ShapeRefiner &refiner) {
  auto dimOf = ShapeRefiner::dimOf;
  Value matrix = getMatrix(), rhs = getRhs(), result = getResult();
  // One size n for both axes of the matrix and the rows of the right-hand
  // side and of the result; the result's columns are the right-hand side's.
  int64_t n = kDyn;
  for (auto [value, dim] : {std::pair{matrix, 0}, {matrix, 1}, {rhs, 0}, {result, 0}})
    if (ShapedType::isDynamic(n))
      n = dimOf(value, dim);
  if (failed(refiner.refine(matrix, 0, n)) || failed(refiner.refine(matrix, 1, n)) ||
      failed(refiner.refine(rhs, 0, n)) || failed(refiner.refine(rhs, 1, dimOf(result, 1))))
    return failure();
  return success();
}

LogicalResult TransposeOp::refineOperandShapes(ShapeRefiner &refiner) {
  for (auto [i, p] : llvm::enumerate(getPermutationOrDefault()))
    if (failed(refiner.refine(getInput(), p, ShapeRefiner::dimOf(getResult(), i))))
      return failure();
  return success();
}

/// The weight's input channels come from the input's, the bias's size from
/// the weight's output channels.
static LogicalResult refineConvolutionOperands(ShapeRefiner &refiner, Value input, Value weight,
                                               Value bias, int64_t groups) {
  int64_t cin = ShapeRefiner::dimOf(input, 1);
  if (!ShapedType::isDynamic(cin) && groups > 0 && cin % groups == 0 &&
      failed(refiner.refine(weight, 1, cin / groups)))
    return failure();
  if (bias && failed(refiner.refine(bias, 0, ShapeRefiner::dimOf(weight, 0))))
    return failure();
  return success();
}

LogicalResult Conv1DOp::refineOperandShapes(ShapeRefiner &refiner) {
  return refineConvolutionOperands(refiner, getInput(), getWeight(), getBias(), getGroups());
}

LogicalResult Conv2DOp::refineOperandShapes(ShapeRefiner &refiner) {
  return refineConvolutionOperands(refiner, getInput(), getWeight(), getBias(), getGroups());
}

LogicalResult LayerNormOp::refineOperandShapes(ShapeRefiner &refiner) {
  auto dimOf = ShapeRefiner::dimOf;
  // Weight and bias have the normalized axes' shape, both ways.
  RankedTensorType in = getInput().getType();
  int64_t n = getNumAxes(), first = in.getRank() - n;
  for (Value param : getAffine())
    for (int64_t i = 0; i < n && first >= 0; ++i)
      if (failed(refiner.refine(param, i, dimOf(getInput(), first + i))) ||
          failed(refiner.refine(getInput(), first + i, dimOf(param, i))))
        return failure();
  for (int64_t d = 0; d < in.getRank(); ++d)
    if (failed(refiner.refine(getInput(), d, dimOf(getResult(), d))))
      return failure();
  return success();
}

LogicalResult mithril::inferResultTypes(Operation *op, SmallVectorImpl<Type> &types) {
  auto infer = dyn_cast<InferTypeOpInterface>(op);
  if (!infer)
    return op->emitOpError("has no shape rule to infer its result types");
  return infer.inferReturnTypes(op->getContext(), op->getLoc(), op->getOperands(),
                                op->getRawDictionaryAttrs(), op->getPropertiesStorage(),
                                op->getRegions(), types);
}

LogicalResult mithril::reinferElementTypes(Operation *op) {
  if (!isa<InferTypeOpInterface>(op))
    return success();
  SmallVector<Type> types;
  if (failed(inferResultTypes(op, types)))
    return failure();
  for (auto [result, type] : llvm::zip(op->getResults(), types)) {
    auto sized = dyn_cast<RankedTensorType>(result.getType());
    auto inferred = dyn_cast<RankedTensorType>(type);
    result.setType(sized && inferred ? sized.clone(inferred.getElementType()) : type);
  }
  return success();
}
