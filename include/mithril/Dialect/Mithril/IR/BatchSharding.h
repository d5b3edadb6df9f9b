//===- BatchSharding.h - how a value is spread over ranks -------*- C++ -*-===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//
//
// Data parallelism splits the batch across ranks. Each value of a model run
// on a rank's share of the batch is then one of: the same on every rank
// (replicated), the rank's slice of the global value along one axis
// (sharded), or a partial value that gives the global one summed over the
// ranks (a partial sum) or averaged with the ranks' batch shares as weights
// (a partial mean: the mean over the whole batch from each rank's mean).
//
//===----------------------------------------------------------------------===//

#ifndef MITHRIL_DIALECT_MITHRIL_IR_BATCHSHARDING_H
#define MITHRIL_DIALECT_MITHRIL_IR_BATCHSHARDING_H

#include "mlir/IR/Operation.h"
#include "mlir/Support/LLVM.h"

#include <string>

namespace mithril {

struct BatchSharding {
  enum class Kind { Replicated, Sharded, PartialSum, PartialMean };
  Kind kind = Kind::Replicated;
  /// The split axis of a sharded value.
  int64_t axis = -1;

  static BatchSharding replicated() { return {}; }
  static BatchSharding sharded(int64_t axis) { return {Kind::Sharded, axis}; }
  static BatchSharding partialSum() { return {Kind::PartialSum, -1}; }
  static BatchSharding partialMean() { return {Kind::PartialMean, -1}; }

  bool isReplicated() const { return kind == Kind::Replicated; }
  bool isSharded() const { return kind == Kind::Sharded; }
  bool isPartial() const { return kind == Kind::PartialSum || kind == Kind::PartialMean; }
  bool operator==(const BatchSharding &other) const {
    return kind == other.kind && axis == other.axis;
  }

  /// "replicated", "sharded<axis>", "partial_sum" or "partial_mean".
  std::string str() const;
};

/// The rule of the elementwise families (numpy broadcasting, operands aligned
/// on the right): sharded operands must split the result's dynamic axis,
/// replicated ones must broadcast along it; partial operands are refused.
mlir::FailureOr<BatchSharding> elementwiseBatchSharding(mlir::Operation *op,
                                                        mlir::ArrayRef<BatchSharding> operands,
                                                        std::string &reason);

/// The rule of ops that compute each batch row on its own unless the batch
/// lies on one of `acrossAxes` of operand 0 (a softmax's axis): the result is
/// split along its one dynamic axis; partial operands are refused.
mlir::FailureOr<BatchSharding> rowwiseBatchSharding(mlir::Operation *op,
                                                    mlir::ArrayRef<BatchSharding> operands,
                                                    mlir::ArrayRef<int64_t> acrossAxes,
                                                    std::string &reason);

} // namespace mithril

#endif // MITHRIL_DIALECT_MITHRIL_IR_BATCHSHARDING_H
