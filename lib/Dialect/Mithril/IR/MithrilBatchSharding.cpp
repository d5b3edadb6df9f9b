//===- MithrilBatchSharding.cpp - ops on batch shards ---------------------===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
// Each op's BatchShardingOpInterface rule: how it computes when the batch is
// split across ranks (see BatchSharding.h). The rules run on a model whose
// batch sizes are dynamic, so a sharded value's split axis is its one
// dynamic dimension and the rules read it off the result type; what they
// check is that the op keeps the batch rows apart (or, for a sum or a mean
// over the batch, that the ranks' results add up to the global one).
//
//===----------------------------------------------------------------------===//

#include "mithril/Dialect/Mithril/IR/MithrilOps.h"

#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace mithril;

std::string BatchSharding::str() const {
  switch (kind) {
  case Kind::Replicated:
    return "replicated";
  case Kind::Sharded:
    return "sharded<" + std::to_string(axis) + ">";
  case Kind::PartialSum:
    return "partial_sum";
  case Kind::PartialMean:
    return "partial_mean";
  }
  return "?";
}

/// The one dynamic dimension of a ranked tensor type; -1 when there is none,
/// -2 when there are several.
static int64_t dynamicAxis(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor)
    return -1;
  int64_t found = -1;
  for (auto [i, size] : llvm::enumerate(tensor.getShape())) {
    if (!ShapedType::isDynamic(size))
      continue;
    if (found >= 0)
      return -2;
    found = static_cast<int64_t>(i);
  }
  return found;
}

static int64_t rankOf(Value value) { return cast<RankedTensorType>(value.getType()).getRank(); }

/// The result's split axis: its one dynamic dimension.
static FailureOr<BatchSharding> shardedResult(Operation *op, std::string &reason) {
  int64_t axis = dynamicAxis(op->getResult(0).getType());
  if (axis == -1) {
    reason = "its result does not keep the batch axis (it mixes the rows of the batch)";
    return failure();
  }
  if (axis == -2) {
    reason = "its result has more than one dynamic size; data parallelism needs static "
             "sizes except the batch";
    return failure();
  }
  return BatchSharding::sharded(axis);
}

static bool anyPartial(ArrayRef<BatchSharding> operands) {
  return llvm::any_of(operands, [](const BatchSharding &s) { return s.isPartial(); });
}

static bool allReplicated(ArrayRef<BatchSharding> operands) {
  return llvm::all_of(operands, [](const BatchSharding &s) { return s.isReplicated(); });
}

static LogicalResult refusePartial(ArrayRef<BatchSharding> operands, std::string &reason) {
  if (!anyPartial(operands))
    return success();
  reason = "it needs the whole value of a sum or mean over the batch, which is split across "
           "ranks until the end of the step";
  return failure();
}

FailureOr<BatchSharding> mithril::elementwiseBatchSharding(Operation *op,
                                                           ArrayRef<BatchSharding> operands,
                                                           std::string &reason) {
  if (failed(refusePartial(operands, reason)))
    return failure();
  if (allReplicated(operands))
    return BatchSharding::replicated();
  FailureOr<BatchSharding> result = shardedResult(op, reason);
  if (failed(result))
    return failure();
  int64_t resultRank = rankOf(op->getResult(0));
  for (auto [value, sharding] : llvm::zip(op->getOperands(), operands)) {
    int64_t rank = rankOf(value);
    int64_t aligned = result->axis - (resultRank - rank);
    if (sharding.isSharded()) {
      if (aligned != sharding.axis) {
        reason = "operands split along different axes meet";
        return failure();
      }
      continue;
    }
    // A replicated operand broadcasts along the split axis, or it would pair
    // every rank's rows with the same rows of its own.
    if (aligned >= 0 && cast<RankedTensorType>(value.getType()).getDimSize(aligned) != 1) {
      reason = "a replicated operand of size " +
               std::to_string(cast<RankedTensorType>(value.getType()).getDimSize(aligned)) +
               " meets the batch axis (only size 1 broadcasts along it)";
      return failure();
    }
  }
  return result;
}

FailureOr<BatchSharding> mithril::rowwiseBatchSharding(Operation *op,
                                                       ArrayRef<BatchSharding> operands,
                                                       ArrayRef<int64_t> acrossAxes,
                                                       std::string &reason) {
  if (failed(refusePartial(operands, reason)))
    return failure();
  if (allReplicated(operands))
    return BatchSharding::replicated();
  if (operands[0].isSharded()) {
    int64_t rank = rankOf(op->getOperand(0));
    for (int64_t axis : acrossAxes) {
      if (normalizeAxis(axis, rank) == operands[0].axis) {
        reason = "it works across axis " + std::to_string(operands[0].axis) +
                 ", the batch axis split across ranks";
        return failure();
      }
    }
  }
  return shardedResult(op, reason);
}

//===----------------------------------------------------------------------===//
// Elementwise ops that are linear in a partial operand
//===----------------------------------------------------------------------===//

/// add and subtract: partial values of one kind add up; a replicated term
/// joins a partial mean (whose weights sum to one) but not a partial sum.
static FailureOr<BatchSharding> additiveSharding(Operation *op, ArrayRef<BatchSharding> operands,
                                                 std::string &reason) {
  if (!anyPartial(operands))
    return elementwiseBatchSharding(op, operands, reason);
  const BatchSharding &lhs = operands[0], &rhs = operands[1];
  if (lhs.isPartial() && rhs.isPartial() && lhs.kind == rhs.kind)
    return lhs;
  const BatchSharding &partial = lhs.isPartial() ? lhs : rhs;
  const BatchSharding &other = lhs.isPartial() ? rhs : lhs;
  if (other.isReplicated() && partial.kind == BatchSharding::Kind::PartialMean)
    return partial;
  reason = "it adds a " + partial.str() + " to a " + other.str() + " value";
  return failure();
}

/// multiply and divide: a partial value scaled by a replicated one.
static FailureOr<BatchSharding> scalingSharding(Operation *op, ArrayRef<BatchSharding> operands,
                                                bool divides, std::string &reason) {
  if (!anyPartial(operands))
    return elementwiseBatchSharding(op, operands, reason);
  const BatchSharding &lhs = operands[0], &rhs = operands[1];
  if (lhs.isPartial() && rhs.isReplicated())
    return lhs;
  if (!divides && rhs.isPartial() && lhs.isReplicated())
    return rhs;
  reason = "it is not linear in the " + (lhs.isPartial() ? lhs : rhs).str() + " operand";
  return failure();
}

FailureOr<BatchSharding> AddOp::inferBatchSharding(ArrayRef<BatchSharding> operands,
                                                   std::string &reason) {
  return additiveSharding(*this, operands, reason);
}

FailureOr<BatchSharding> SubtractOp::inferBatchSharding(ArrayRef<BatchSharding> operands,
                                                        std::string &reason) {
  return additiveSharding(*this, operands, reason);
}

FailureOr<BatchSharding> MultiplyOp::inferBatchSharding(ArrayRef<BatchSharding> operands,
                                                        std::string &reason) {
  return scalingSharding(*this, operands, /*divides=*/false, reason);
}

FailureOr<BatchSharding> DivideOp::inferBatchSharding(ArrayRef<BatchSharding> operands,
                                                      std::string &reason) {
  return scalingSharding(*this, operands, /*divides=*/true, reason);
}

/// Ops that pass a partial value through linearly.
static FailureOr<BatchSharding> linearUnarySharding(Operation *op, ArrayRef<BatchSharding> operands,
                                                    std::string &reason) {
  if (operands[0].isPartial())
    return operands[0];
  return elementwiseBatchSharding(op, operands, reason);
}

FailureOr<BatchSharding> NegateOp::inferBatchSharding(ArrayRef<BatchSharding> operands,
                                                      std::string &reason) {
  return linearUnarySharding(*this, operands, reason);
}

FailureOr<BatchSharding> StopGradientOp::inferBatchSharding(ArrayRef<BatchSharding> operands,
                                                            std::string &reason) {
  return linearUnarySharding(*this, operands, reason);
}

FailureOr<BatchSharding> CastOp::inferBatchSharding(ArrayRef<BatchSharding> operands,
                                                    std::string &reason) {
  // Between float types a cast is linear up to rounding; to an integer type
  // it is not.
  if (operands[0].isPartial() && !isa<FloatType>(getElementTypeOrSelf(getType()))) {
    reason = "it casts a " + operands[0].str() + " value to an integer type";
    return failure();
  }
  return linearUnarySharding(*this, operands, reason);
}

/// Collectives over the tensor group leave the batch split as it is.
FailureOr<BatchSharding> AllReduceOp::inferBatchSharding(ArrayRef<BatchSharding> operands,
                                                         std::string &reason) {
  return operands[0];
}

FailureOr<BatchSharding> ReplicateOp::inferBatchSharding(ArrayRef<BatchSharding> operands,
                                                         std::string &reason) {
  return operands[0];
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

/// A reduction of `input` over `axes` (all when absent): the split axis
/// moves when it is kept, and a sum or mean over it becomes partial.
static FailureOr<BatchSharding> reductionSharding(Operation *op, ArrayRef<BatchSharding> operands,
                                                  std::optional<ArrayRef<int64_t>> axes,
                                                  bool keepdim,
                                                  std::optional<BatchSharding::Kind> overBatch,
                                                  std::string &reason) {
  const BatchSharding &input = operands[0];
  if (input.isReplicated())
    return input;
  if (input.isPartial()) {
    if (overBatch)
      return input; // sums and means are linear
    reason = "it is not linear in its " + input.str() + " operand";
    return failure();
  }
  int64_t rank = rankOf(op->getOperand(0));
  SmallVector<int64_t> reduced = reductionAxes(axes, rank);
  if (llvm::is_contained(reduced, input.axis)) {
    if (overBatch)
      return BatchSharding{*overBatch, -1};
    reason = "it reduces over the batch axis, which is split across ranks (only sums and "
             "means over it combine)";
    return failure();
  }
  if (keepdim)
    return input;
  int64_t before = llvm::count_if(reduced, [&](int64_t a) { return a < input.axis; });
  return BatchSharding::sharded(input.axis - before);
}

#define MITHRIL_REDUCTION_SHARDING(OP, OVER_BATCH)                                                 \
  FailureOr<BatchSharding> OP::inferBatchSharding(ArrayRef<BatchSharding> operands,                \
                                                  std::string &reason) {                           \
    return reductionSharding(*this, operands, getAxes(), getKeepdim(), OVER_BATCH, reason);        \
  }
MITHRIL_REDUCTION_SHARDING(SumOp, BatchSharding::Kind::PartialSum)
MITHRIL_REDUCTION_SHARDING(MeanOp, BatchSharding::Kind::PartialMean)
MITHRIL_REDUCTION_SHARDING(MaxOp, std::nullopt)
MITHRIL_REDUCTION_SHARDING(MinOp, std::nullopt)
MITHRIL_REDUCTION_SHARDING(ProdOp, std::nullopt)
MITHRIL_REDUCTION_SHARDING(VarianceOp, std::nullopt)
#undef MITHRIL_REDUCTION_SHARDING

/// argmax and argmin: a reduction over `axis` (every axis when absent) that
/// never combines across ranks.
static FailureOr<BatchSharding> argReductionSharding(Operation *op,
                                                     ArrayRef<BatchSharding> operands,
                                                     std::optional<int64_t> axis, bool keepdim,
                                                     std::string &reason) {
  int64_t one[] = {axis.value_or(0)};
  std::optional<ArrayRef<int64_t>> axes;
  if (axis)
    axes = ArrayRef<int64_t>(one);
  return reductionSharding(op, operands, axes, keepdim, std::nullopt, reason);
}

FailureOr<BatchSharding> ArgMaxOp::inferBatchSharding(ArrayRef<BatchSharding> operands,
                                                      std::string &reason) {
  return argReductionSharding(*this, operands, getAxis(), getKeepdim(), reason);
}

FailureOr<BatchSharding> ArgMinOp::inferBatchSharding(ArrayRef<BatchSharding> operands,
                                                      std::string &reason) {
  return argReductionSharding(*this, operands, getAxis(), getKeepdim(), reason);
}

//===----------------------------------------------------------------------===//
// Contractions
//===----------------------------------------------------------------------===//

FailureOr<BatchSharding> MatmulOp::inferBatchSharding(ArrayRef<BatchSharding> operands,
                                                      std::string &reason) {
  const BatchSharding &lhs = operands[0], &rhs = operands[1];
  // A product is linear in each operand.
  if (lhs.isPartial() && rhs.isReplicated())
    return lhs;
  if (rhs.isPartial() && lhs.isReplicated())
    return rhs;
  if (failed(refusePartial(operands, reason)))
    return failure();
  int64_t lhsRank = rankOf(getLhs()), rhsRank = rankOf(getRhs());
  // The contracted axes: lhs's last, rhs's second to last (its only one
  // when it is a vector).
  bool lhsContracted = lhs.isSharded() && lhs.axis == lhsRank - 1;
  bool rhsContracted = rhs.isSharded() && rhs.axis == std::max<int64_t>(rhsRank - 2, 0);
  if (lhsContracted && rhsContracted)
    return BatchSharding::partialSum(); // X^T dY over the batch
  if (lhsContracted || rhsContracted) {
    reason = "it contracts the batch axis of one operand with a replicated one";
    return failure();
  }
  return shardedResult(*this, reason);
}

FailureOr<BatchSharding> CholeskyOp::inferBatchSharding(ArrayRef<BatchSharding> operands,
                                                        std::string &reason) {
  reason = "it factors the whole matrix, whose rows are split across ranks";
  return failure();
}

FailureOr<BatchSharding> TriangularSolveOp::inferBatchSharding(ArrayRef<BatchSharding> operands,
                                                               std::string &reason) {
  if (failed(refusePartial(operands, reason)))
    return failure();
  if (!operands[0].isReplicated()) {
    reason = "its triangular matrix is split across ranks";
    return failure();
  }
  // Substitution runs down the rows of the right-hand side; its columns
  // are solved independently.
  if (operands[1].isSharded() && operands[1].axis == 0) {
    reason = "it solves across the rows of its right-hand side, the batch axis split across ranks";
    return failure();
  }
  return shardedResult(*this, reason);
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

/// Reshapes keep the batch split when the rows above the split axis are the
/// same in the operand and the result: each rank's block of elements then
/// lands in one block of the result's split axis.
static FailureOr<BatchSharding> reshapeSharding(Operation *op, ArrayRef<BatchSharding> operands,
                                                std::string &reason) {
  if (failed(refusePartial(operands, reason)))
    return failure();
  if (operands[0].isReplicated())
    return operands[0];
  FailureOr<BatchSharding> result = shardedResult(op, reason);
  if (failed(result))
    return failure();
  auto product = [](ArrayRef<int64_t> dims) {
    int64_t p = 1;
    for (int64_t d : dims)
      p *= d;
    return p;
  };
  ArrayRef<int64_t> in = cast<RankedTensorType>(op->getOperand(0).getType()).getShape();
  ArrayRef<int64_t> out = cast<RankedTensorType>(op->getResult(0).getType()).getShape();
  if (product(in.take_front(operands[0].axis)) != product(out.take_front(result->axis))) {
    reason = "it moves the batch axis across other axes";
    return failure();
  }
  return result;
}

FailureOr<BatchSharding> ReshapeOp::inferBatchSharding(ArrayRef<BatchSharding> operands,
                                                       std::string &reason) {
  return reshapeSharding(*this, operands, reason);
}

FailureOr<BatchSharding> FlattenOp::inferBatchSharding(ArrayRef<BatchSharding> operands,
                                                       std::string &reason) {
  return reshapeSharding(*this, operands, reason);
}

FailureOr<BatchSharding> SqueezeOp::inferBatchSharding(ArrayRef<BatchSharding> operands,
                                                       std::string &reason) {
  return reshapeSharding(*this, operands, reason);
}

FailureOr<BatchSharding> UnsqueezeOp::inferBatchSharding(ArrayRef<BatchSharding> operands,
                                                         std::string &reason) {
  return reshapeSharding(*this, operands, reason);
}

FailureOr<BatchSharding> TransposeOp::inferBatchSharding(ArrayRef<BatchSharding> operands,
                                                         std::string &reason) {
  return rowwiseBatchSharding(*this, operands, {}, reason);
}

FailureOr<BatchSharding> BroadcastToOp::inferBatchSharding(ArrayRef<BatchSharding> operands,
                                                           std::string &reason) {
  return elementwiseBatchSharding(*this, operands, reason);
}

FailureOr<BatchSharding> ConcatOp::inferBatchSharding(ArrayRef<BatchSharding> operands,
                                                      std::string &reason) {
  FailureOr<BatchSharding> result = rowwiseBatchSharding(*this, operands, {}, reason);
  if (failed(result) || result->isReplicated())
    return result;
  if (normalizeAxis(getAxis(), rankOf(getResult())) == result->axis) {
    reason = "it concatenates along the batch axis, which is split across ranks";
    return failure();
  }
  // Every piece must bring its rows of the batch.
  if (!llvm::all_of(operands, [&](const BatchSharding &s) { return s == *result; })) {
    reason = "it joins batch-split values with replicated ones";
    return failure();
  }
  return result;
}

FailureOr<BatchSharding> SliceOp::inferBatchSharding(ArrayRef<BatchSharding> operands,
                                                     std::string &reason) {
  return rowwiseBatchSharding(*this, operands, getAxes(), reason);
}

FailureOr<BatchSharding> PadOp::inferBatchSharding(ArrayRef<BatchSharding> operands,
                                                   std::string &reason) {
  // Rows are independent unless the batch axis itself is padded.
  SmallVector<int64_t> padded;
  ArrayRef<int64_t> width = getPadWidth();
  for (int64_t axis = 0, e = width.size() / 2; axis < e; ++axis)
    if (width[2 * axis] != 0 || width[2 * axis + 1] != 0)
      padded.push_back(axis);
  return rowwiseBatchSharding(*this, operands, padded, reason);
}

FailureOr<BatchSharding> ReverseOp::inferBatchSharding(ArrayRef<BatchSharding> operands,
                                                       std::string &reason) {
  return rowwiseBatchSharding(*this, operands, getAxes(), reason);
}

FailureOr<BatchSharding> EmbeddingOp::inferBatchSharding(ArrayRef<BatchSharding> operands,
                                                         std::string &reason) {
  if (operands[1].isSharded()) {
    reason = "its table is split across ranks";
    return failure();
  }
  return rowwiseBatchSharding(*this, operands, {}, reason);
}

FailureOr<BatchSharding> OneHotOp::inferBatchSharding(ArrayRef<BatchSharding> operands,
                                                      std::string &reason) {
  return rowwiseBatchSharding(*this, operands, {}, reason);
}

FailureOr<BatchSharding> ShapeOp::inferBatchSharding(ArrayRef<BatchSharding> operands,
                                                     std::string &reason) {
  reason = "it reads the size of a batch-split value, which differs between ranks";
  return failure();
}

FailureOr<BatchSharding> EyeLikeOp::inferBatchSharding(ArrayRef<BatchSharding> operands,
                                                       std::string &reason) {
  reason = "its result's size follows the batch in more than one axis";
  return failure();
}

FailureOr<BatchSharding> TrilOp::inferBatchSharding(ArrayRef<BatchSharding> operands,
                                                    std::string &reason) {
  // Which elements stay depends on their row and column in the whole matrix.
  int64_t rank = rankOf(getInput());
  return rowwiseBatchSharding(*this, operands, {rank - 2, rank - 1}, reason);
}

//===----------------------------------------------------------------------===//
// Neural-network ops
//===----------------------------------------------------------------------===//

FailureOr<BatchSharding> SoftmaxOp::inferBatchSharding(ArrayRef<BatchSharding> operands,
                                                       std::string &reason) {
  return rowwiseBatchSharding(*this, operands, {static_cast<int64_t>(getAxis())}, reason);
}

FailureOr<BatchSharding> LogSoftmaxOp::inferBatchSharding(ArrayRef<BatchSharding> operands,
                                                          std::string &reason) {
  return rowwiseBatchSharding(*this, operands, {static_cast<int64_t>(getAxis())}, reason);
}

FailureOr<BatchSharding> PolynomialFeaturesOp::inferBatchSharding(ArrayRef<BatchSharding> operands,
                                                                  std::string &reason) {
  return rowwiseBatchSharding(*this, operands, {-1}, reason);
}

FailureOr<BatchSharding> LayerNormOp::inferBatchSharding(ArrayRef<BatchSharding> operands,
                                                         std::string &reason) {
  int64_t rank = rankOf(getInput());
  SmallVector<int64_t> normalized;
  for (int64_t i = std::max<int64_t>(rank - getNumAxes(), 0); i < rank; ++i)
    normalized.push_back(i);
  return rowwiseBatchSharding(*this, operands, normalized, reason);
}

FailureOr<BatchSharding> BatchNormOp::inferBatchSharding(ArrayRef<BatchSharding> operands,
                                                         std::string &reason) {
  // With running statistics (replicated) each sample is normalized on its
  // own; statistics of the batch are means over it, refused as partial.
  if (llvm::any_of(operands.drop_front(), [](const BatchSharding &s) { return s.isSharded(); })) {
    reason = "its statistics or scales are split across ranks";
    return failure();
  }
  return rowwiseBatchSharding(*this, operands, {}, reason);
}

FailureOr<BatchSharding> CrossEntropyOp::inferBatchSharding(ArrayRef<BatchSharding> operands,
                                                            std::string &reason) {
  return rowwiseBatchSharding(*this, operands, {1}, reason);
}

/// Convolutions and pooling keep the samples (axis 0 of `[N, C, spatial...]`)
/// apart and mix everything else.
static FailureOr<BatchSharding> samplewiseSharding(Operation *op, ArrayRef<BatchSharding> operands,
                                                   int64_t spatialRank, std::string &reason) {
  int64_t rank = rankOf(op->getOperand(0));
  SmallVector<int64_t> mixed;
  for (int64_t i = rank - spatialRank - 1; i < rank; ++i)
    mixed.push_back(i);
  if (rank != spatialRank + 2 && operands[0].isSharded()) {
    reason = "its input has no sample axis to split";
    return failure();
  }
  for (size_t i = 1; i < operands.size(); ++i) {
    if (operands[i].isSharded()) {
      reason = "its weights are split across ranks";
      return failure();
    }
  }
  return rowwiseBatchSharding(op, operands, mixed, reason);
}

FailureOr<BatchSharding> Conv1DOp::inferBatchSharding(ArrayRef<BatchSharding> operands,
                                                      std::string &reason) {
  return samplewiseSharding(*this, operands, 1, reason);
}

FailureOr<BatchSharding> Conv2DOp::inferBatchSharding(ArrayRef<BatchSharding> operands,
                                                      std::string &reason) {
  return samplewiseSharding(*this, operands, 2, reason);
}

FailureOr<BatchSharding> MaxPool1DOp::inferBatchSharding(ArrayRef<BatchSharding> operands,
                                                         std::string &reason) {
  return samplewiseSharding(*this, operands, 1, reason);
}

FailureOr<BatchSharding> MaxPool2DOp::inferBatchSharding(ArrayRef<BatchSharding> operands,
                                                         std::string &reason) {
  return samplewiseSharding(*this, operands, 2, reason);
}

FailureOr<BatchSharding> AvgPool2DOp::inferBatchSharding(ArrayRef<BatchSharding> operands,
                                                         std::string &reason) {
  return samplewiseSharding(*this, operands, 2, reason);
}
