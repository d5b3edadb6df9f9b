//===- ModelBuilder.h - build mithril models programmatically ---*- C++ -*-===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
// The C++ API front ends use to build logical models: inputs, primitive ops
// (by name, with their result types inferred by the dialect's shape rules),
// instances of other models, and outputs. Errors are reported as MLIR
// diagnostics at the location of what was being built.
//
//===----------------------------------------------------------------------===//

#ifndef MITHRIL_BUILDER_MODELBUILDER_H
#define MITHRIL_BUILDER_MODELBUILDER_H

#include "mithril/Dialect/Mithril/IR/MithrilOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

namespace mithril {

class ModelBuilder {
public:
  /// Starts an empty model called `name` at the end of `module`.
  ModelBuilder(mlir::ModuleOp module, llvm::StringRef name,
               std::optional<mlir::Location> loc = std::nullopt);

  ModelOp getModel() { return model; }
  mlir::MLIRContext *getContext() { return model.getContext(); }

  /// Adds an input terminal; fails on a duplicate name.
  mlir::FailureOr<mlir::Value> addInput(llvm::StringRef name, InputKind kind,
                                        mlir::RankedTensorType type);

  /// Adds the primitive `opName` (`mithril.add` or just `add`). Its result
  /// types come from the op's shape rules; the op is located at `name` (its
  /// path, for diagnostics) when given. Fails, with a diagnostic, if the op
  /// is unknown or its operands violate its rules.
  mlir::FailureOr<llvm::SmallVector<mlir::Value>>
  addOp(llvm::StringRef opName, mlir::ValueRange operands,
        llvm::ArrayRef<mlir::NamedAttribute> attributes = {}, llvm::StringRef name = "");

  /// Adds a constant.
  mlir::Value addConstant(mlir::DenseElementsAttr value, llvm::StringRef name = "");

  /// Instantiates `callee` as `instanceName`, binding its inputs by name.
  /// Unbound inputs are lifted by mithril-flatten.
  mlir::FailureOr<llvm::SmallVector<mlir::Value>>
  addInstance(llvm::StringRef instanceName, ModelOp callee,
              llvm::ArrayRef<std::pair<std::string, mlir::Value>> bindings);

  /// Adds an output terminal fed by `value`; fails on a duplicate name.
  mlir::LogicalResult addOutput(llvm::StringRef name, mlir::Value value);

  /// Closes the model with its output op and verifies it.
  mlir::FailureOr<ModelOp> finish();

private:
  mlir::Location locFor(llvm::StringRef name);

  ModelOp model;
  mlir::OpBuilder builder;
  llvm::SmallVector<std::pair<std::string, mlir::Value>> outputs;
};

} // namespace mithril

#endif // MITHRIL_BUILDER_MODELBUILDER_H
