//===- ShapeRefiner.h - backward shape rules' state -------------*- C++ -*-===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//

#ifndef MITHRIL_DIALECT_MITHRIL_IR_SHAPEREFINER_H
#define MITHRIL_DIALECT_MITHRIL_IR_SHAPEREFINER_H

#include "mithril/Dialect/Mithril/IR/MithrilOps.h"

#include "llvm/ADT/DenseSet.h"

namespace mithril {

/// What a backward shape rule (ShapeRefinementOpInterface) works through:
/// it gives operands' dynamic dimensions sizes, reporting conflicts on the op
/// whose rule found them, and records whether anything changed.
class ShapeRefiner {
public:
  /// `keepDynamic`: values computed from data inputs whose sizes are left
  /// dynamic on purpose; broadcasting does not size them.
  ShapeRefiner(mlir::Operation *op, const llvm::DenseSet<mlir::Value> &keepDynamic)
      : op(op), keepDynamic(keepDynamic) {}

  /// Gives dimension `dim` of `value` the size `size`. A dynamic size or a
  /// dimension out of range is a no-op; a value that already has another
  /// size is an error naming the op, the value and the sizes.
  llvm::LogicalResult refine(mlir::Value value, int64_t dim, int64_t size);

  /// Dimension `d` of `v`'s type: dynamic when unknown or out of range.
  static int64_t dimOf(mlir::Value v, int64_t d);

  bool keepsDynamic(mlir::Value v) const { return keepDynamic.contains(v); }
  mlir::Operation *getOp() const { return op; }
  bool changed() const { return anyChange; }

private:
  mlir::Operation *op;
  const llvm::DenseSet<mlir::Value> &keepDynamic;
  bool anyChange = false;
};

/// The backward rules the op families get from their traits: an operand of a
/// broadcasting elementwise op takes the result's size where the other
/// operand cannot supply it; a shape-preserving op's operand takes its
/// result's shape. Succeeds without change for ops of neither family.
llvm::LogicalResult refineOperandShapesByTraits(ShapeRefiner &refiner);

} // namespace mithril

#endif // MITHRIL_DIALECT_MITHRIL_IR_SHAPEREFINER_H
