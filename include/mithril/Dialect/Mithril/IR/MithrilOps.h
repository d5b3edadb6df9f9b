//===- MithrilOps.h - mithril dialect operations ----------------*- C++ -*-===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//

#ifndef MITHRIL_DIALECT_MITHRIL_IR_MITHRILOPS_H
#define MITHRIL_DIALECT_MITHRIL_IR_MITHRILOPS_H

#include "mithril/Dialect/Mithril/IR/BatchSharding.h"
#include "mithril/Dialect/Mithril/IR/MithrilDialect.h"

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/CallInterfaces.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include <optional>
#include <string>

namespace mithril {

class OutputOp;

/// A terminal of a model being built: its name, type and (for inputs) role.
struct TerminalSpec {
  std::string name;
  mlir::Type type;
  InputKind kind = InputKind::Data;
};

/// Attribute names that carry terminal names and roles on model arguments and
/// results.
inline constexpr llvm::StringLiteral kTerminalNameAttr = "mithril.name";
inline constexpr llvm::StringLiteral kInputKindAttr = "mithril.kind";
/// On a parameter mithril-tensor-parallel split: the axis of the global
/// parameter the rank holds a slice of.
inline constexpr llvm::StringLiteral kTensorSplitAttr = "mithril.tensor_split";
/// With kTensorSplitAttr: the axis is this many equal blocks (an attention
/// block's q, k and v), each split; the rank holds its part of each.
inline constexpr llvm::StringLiteral kTensorBlocksAttr = "mithril.tensor_blocks";
/// On a model mithril-dce dropped terminals from: their names (the discarded
/// outputs and the inputs only they read).
inline constexpr llvm::StringLiteral kDiscardedAttr = "mithril.discarded";

/// The number compiled code passes the runtime's collectives for a
/// collective's `group` (Distributed.h): 0 the data group, 1 the tensor group.
inline int64_t collectiveGroupNumber(llvm::StringRef group) {
  return group == "tensor" ? 1 : 0;
}

/// How the element type of an elementwise binary op's result is formed.
enum class BinaryResultKind { Arith, Compare, Logical };

/// Result types are compatible when they are ranked tensors of the same rank
/// and element type whose dimensions agree wherever both are static.
bool areCompatibleTypes(mlir::TypeRange lhs, mlir::TypeRange rhs);

/// A short description of where a value comes from, for diagnostics: the
/// terminal it is (`terminal 'input'`), or the named op that produces it.
std::string describeValue(mlir::Value value);

/// Writes a shape as `4x?x8` (or `scalar`).
std::string formatShape(llvm::ArrayRef<int64_t> shape);

// Shape rules shared by the ops (MithrilShapes.cpp).
llvm::LogicalResult inferUnaryElementwise(std::optional<mlir::Location> loc,
                                          mlir::Value input,
                                          llvm::SmallVectorImpl<mlir::Type> &types);
llvm::LogicalResult inferBroadcastBinary(mlir::MLIRContext *ctx,
                                         std::optional<mlir::Location> loc,
                                         llvm::StringRef opName, mlir::Value lhs,
                                         mlir::Value rhs, BinaryResultKind kind,
                                         llvm::SmallVectorImpl<mlir::Type> &types);
llvm::LogicalResult inferReduction(mlir::MLIRContext *ctx,
                                   std::optional<mlir::Location> loc,
                                   llvm::StringRef opName, mlir::Value input,
                                   std::optional<llvm::ArrayRef<int64_t>> axes,
                                   bool keepdim, mlir::Type resultElementType,
                                   llvm::SmallVectorImpl<mlir::Type> &types);

/// A 0-d float constant of `elementType`, which the elementwise ops
/// broadcast.
mlir::Value scalarConstant(mlir::OpBuilder &b, mlir::Location loc, mlir::Type elementType,
                           double value);

/// The result types `op`'s shape rule (InferTypeOpInterface) gives for its
/// current operands and attributes. Fails, with the rule's diagnostic, when
/// the rule rejects them or the op has none.
llvm::LogicalResult inferResultTypes(mlir::Operation *op, llvm::SmallVectorImpl<mlir::Type> &types);

/// Gives `op`'s results the element types its shape rule infers now (after
/// its operands' element types changed), keeping their sizes: shape
/// inference may know more than the rule alone. Ops without a shape rule are
/// left as they are.
llvm::LogicalResult reinferElementTypes(mlir::Operation *op);

/// Broadcasts two shapes with numpy rules; fails when a pair of static
/// dimensions differ and neither is 1.
llvm::FailureOr<llvm::SmallVector<int64_t>>
broadcastShapes(llvm::ArrayRef<int64_t> lhs, llvm::ArrayRef<int64_t> rhs);

/// Normalizes possibly negative axes against `rank`; fails on out-of-range or
/// repeated axes.
llvm::FailureOr<llvm::SmallVector<int64_t>>
normalizeAxes(llvm::ArrayRef<int64_t> axes, int64_t rank);

/// The axes a verified reduction reduces over, normalized: all of them when
/// the op has no `axes` attribute.
llvm::SmallVector<int64_t> reductionAxes(std::optional<llvm::ArrayRef<int64_t>> axes,
                                         int64_t rank);

/// The number of columns of polynomial_features: C(features + degree, degree)
/// - 1; none when the arguments are out of range or the count exceeds 2^31.
std::optional<int64_t> polynomialFeatureCount(int64_t features, int64_t degree);

/// A possibly negative axis counted from the front. I64Attr getters return
/// uint64_t: always pass them through this before comparing with zero.
inline int64_t normalizeAxis(uint64_t axis, int64_t rank) {
  int64_t a = static_cast<int64_t>(axis);
  return a < 0 ? a + rank : a;
}

/// Is `name` usable as a bare SSA identifier in the textual IR?
bool isPlainIdentifier(llvm::StringRef name);

/// Fails, naming the attribute and the op's own ones, when `op` carries an
/// attribute that is neither one of its inherent attributes nor a dialect
/// attribute (`dialect.name`): a misspelled `axs` on a softmax would otherwise
/// verify and be ignored.
llvm::LogicalResult verifyNoUnknownAttributes(mlir::Operation *op);

namespace traits {
/// Ops of the dialect reject attributes they do not define.
template <typename ConcreteType>
class NoUnknownAttributes
    : public mlir::OpTrait::TraitBase<ConcreteType, NoUnknownAttributes> {
public:
  static llvm::LogicalResult verifyTrait(mlir::Operation *op) {
    return verifyNoUnknownAttributes(op);
  }
};

/// Ops whose every result element is a scalar function of the operands'
/// elements at its (broadcast) index: lowered to one linalg.generic.
template <typename ConcreteType>
class Elementwise : public mlir::OpTrait::TraitBase<ConcreteType, Elementwise> {};

/// Elementwise ops of two operands with numpy broadcasting (arithmetic,
/// comparisons, logic, elementwise losses): their result's shape is the
/// broadcast of the operands', which shape inference also runs backward.
template <typename ConcreteType>
class BroadcastingElementwise
    : public mlir::OpTrait::TraitBase<ConcreteType, BroadcastingElementwise> {};
/// Ops that move, copy or select elements without computing with their
/// values: exact in any element type.
template <typename ConcreteType>
class DataMovement : public mlir::OpTrait::TraitBase<ConcreteType, DataMovement> {};
} // namespace traits

class GradientBuilder;
class ShapeRefiner;

} // namespace mithril

#include "mithril/Dialect/Mithril/IR/MithrilInterfaces.h.inc"

#define GET_OP_CLASSES
#include "mithril/Dialect/Mithril/IR/MithrilOps.h.inc"

#endif // MITHRIL_DIALECT_MITHRIL_IR_MITHRILOPS_H
