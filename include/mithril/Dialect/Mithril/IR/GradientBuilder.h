//===- GradientBuilder.h - what gradient rules build with -------*- C++ -*-===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//

#ifndef MITHRIL_DIALECT_MITHRIL_IR_GRADIENTBUILDER_H
#define MITHRIL_DIALECT_MITHRIL_IR_GRADIENTBUILDER_H

#include "mithril/Dialect/Mithril/IR/MithrilOps.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/STLFunctionalExtras.h"

namespace mithril {

/// What an op's gradient rule (GradientOpInterface::buildGradient) builds
/// with: mithril ops at the differentiated op's location, each inferring its
/// result type from the dialect's shape rules, so gradients go through the
/// same shape rules, fusion and code generation as the forward model; and
/// the adjoints of the op's operands, which the rule adds to.
class GradientBuilder {
public:
  /// Adds a gradient to a value's adjoint.
  using AccumulateFn = llvm::function_ref<void(mlir::Value, mlir::Value)>;
  /// Whether a value depends on a differentiated input.
  using IsActiveFn = llvm::function_ref<bool(mlir::Value)>;

  GradientBuilder(mlir::OpBuilder &b, mlir::Location loc, AccumulateFn accumulate,
                  IsActiveFn isActive)
      : b(b), loc(loc), accumulateFn(accumulate), isActiveFn(isActive) {}

  /// Whether `v` needs an adjoint; rules may skip the work for operands that
  /// do not.
  bool isActive(mlir::Value v) const { return isActiveFn(v); }
  /// Adds `grad` (of `operand`'s shape) to `operand`'s adjoint; a no-op for
  /// an inactive operand.
  void accumulate(mlir::Value operand, mlir::Value grad) { accumulateFn(operand, grad); }
  /// Adds `grad`, of a broadcast result's shape, to the adjoint of `operand`
  /// after summing it back to the operand's shape.
  void accumulateUnbroadcast(mlir::Value operand, mlir::Value grad);

  // Constants.
  mlir::Value cst(mlir::Type elementType, double v);
  /// A scalar of `like`'s element type.
  mlir::Value cstLike(mlir::Value like, double v);
  mlir::Value zerosLike(mlir::Value like);

  // Ops.
  mlir::Value add(mlir::Value x, mlir::Value y);
  mlir::Value sub(mlir::Value x, mlir::Value y);
  mlir::Value mul(mlir::Value x, mlir::Value y);
  mlir::Value div(mlir::Value x, mlir::Value y);
  mlir::Value neg(mlir::Value x);
  mlir::Value exp(mlir::Value x);
  mlir::Value log(mlir::Value x);
  mlir::Value sign(mlir::Value x);
  mlir::Value cast(mlir::Value x, mlir::Type elementType);
  /// A 0/1 float mask of a predicate, of `like`'s element type.
  mlir::Value mask(mlir::Value predicate, mlir::Value like);
  mlir::Value where(mlir::Value c, mlir::Value x, mlir::Value y);
  mlir::Value gt(mlir::Value x, mlir::Value y);
  mlir::Value lt(mlir::Value x, mlir::Value y);
  mlir::Value eq(mlir::Value x, mlir::Value y);
  mlir::Value reshape(mlir::Value x, llvm::ArrayRef<int64_t> shape);
  mlir::Value transpose(mlir::Value x, llvm::ArrayRef<int64_t> perm);
  /// Swaps the last two axes.
  mlir::Value transposeLast2(mlir::Value x);
  mlir::Value sum(mlir::Value x, llvm::ArrayRef<int64_t> axes, bool keepdim);
  mlir::Value mean(mlir::Value x, llvm::ArrayRef<int64_t> axes, bool keepdim);
  mlir::Value matmul(mlir::Value x, mlir::Value y);
  mlir::Value broadcastTo(mlir::Value x, llvm::ArrayRef<int64_t> shape);

  /// Sums `g` (of a broadcast result's shape) back to `target`'s shape.
  mlir::Value unbroadcast(mlir::Value g, mlir::RankedTensorType target);
  /// Re-inserts the axes a reduction removed, as size 1, so that a reduced
  /// value broadcasts against the reduction's input.
  mlir::Value keepAxes(mlir::Value reduced, mlir::RankedTensorType input,
                       llvm::ArrayRef<int64_t> axes, bool keepdim);

  mlir::OpBuilder &b;
  mlir::Location loc;

private:
  AccumulateFn accumulateFn;
  IsActiveFn isActiveFn;
};

} // namespace mithril

#endif // MITHRIL_DIALECT_MITHRIL_IR_GRADIENTBUILDER_H
