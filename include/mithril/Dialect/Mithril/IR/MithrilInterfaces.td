//===- MithrilInterfaces.td - mithril op interfaces --------*- tablegen -*-===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//

#ifndef MITHRIL_DIALECT_MITHRIL_IR_MITHRILINTERFACES_TD
#define MITHRIL_DIALECT_MITHRIL_IR_MITHRILINTERFACES_TD

include "mlir/IR/OpBase.td"

def Mithril_GradientOpInterface : OpInterface<"GradientOpInterface"> {
  let cppNamespace = "::mithril";
  let description = [{
    An op that `mithril-autodiff` can differentiate. The pass walks the model
    backwards and, for each op whose result has an adjoint, asks the op for
    its vector-Jacobian product: `buildGradient` builds it from mithril ops
    (through the `GradientBuilder`, whose helpers infer every type with the
    dialect's shape rules) and adds each operand's share to that operand's
    adjoint with `GradientBuilder::accumulate`.

    The default adds nothing: it is for ops whose gradient is zero almost
    everywhere (`sign`, `floor_divide`, `stop_gradient`). An op without the
    interface stops `mithril-autodiff` with an error when a differentiated
    value flows into it.
  }];
  let methods = [
    InterfaceMethod<[{
        Adds to the adjoints of the operands the vector-Jacobian product of
        `resultGradient`, the adjoint of the op's only result.
      }],
      "::llvm::LogicalResult", "buildGradient",
      (ins "::mithril::GradientBuilder &":$builder, "::mlir::Value":$resultGradient),
      /*methodBody=*/"",
      /*defaultImplementation=*/[{ return ::llvm::success(); }]>
  ];
}

def Mithril_ShapeRefinementOpInterface : OpInterface<"ShapeRefinementOpInterface"> {
  let cppNamespace = "::mithril";
  let description = [{
    The backward half of an op's shape rule; the forward half is
    `inferReturnTypes`. `mithril-infer-shapes` runs both to a fixed point:
    forward rules give results their sizes from the operands, backward rules
    give operands the sizes the op's semantics fix from its other operands or
    its result (a Linear's weight `[16, ?]` learns its input size from the
    data through the matmul).

    Ops of the shape-preserving and broadcasting families get their backward
    rule from their traits (`Mithril_Elementwise` with one operand,
    `SameOperandsAndResultShape`, `Mithril_BroadcastingElementwise`); others
    implement this interface.
  }];
  let methods = [
    InterfaceMethod<[{
        Gives the operands' unknown dimensions the sizes the op fixes, through
        `refiner.refine`, which reports conflicts naming the op.
      }],
      "::llvm::LogicalResult", "refineOperandShapes",
      (ins "::mithril::ShapeRefiner &":$refiner)>
  ];
}

def Mithril_BatchShardingOpInterface : OpInterface<"BatchShardingOpInterface"> {
  let cppNamespace = "::mithril";
  let description = [{
    How an op computes when the batch is split across ranks (data
    parallelism): given how each operand is distributed (replicated, split
    along one axis, or a partial sum or mean that ranks add up), the
    distribution of the result, or a reason why the op needs values that live
    on other ranks (a softmax along the batch axis, batch statistics).

    `mithril-batch-sharding` runs the rules forward from the inputs split
    along their batch axis. It runs on a model whose batch sizes are dynamic
    (`?`), so that a value's split axis is its dynamic dimension, and the
    rules read the result types. Ops with no split or partial operand give a
    replicated result without asking; ops of the elementwise families get
    their rule from their traits (`Mithril_Elementwise`,
    `Mithril_BroadcastingElementwise`); others implement this interface.
  }];
  let methods = [
    InterfaceMethod<[{
        The distribution of the op's only result given its operands', or
        failure with `reason` set to why the op cannot run on batch shards.
      }],
      "::mlir::FailureOr<::mithril::BatchSharding>", "inferBatchSharding",
      (ins "::llvm::ArrayRef<::mithril::BatchSharding>":$operands,
           "::std::string &":$reason)>
  ];
}

// The op builds its own vector-Jacobian product (buildGradient in
// MithrilGradients.cpp).
defvar Mithril_Differentiable =
    DeclareOpInterfaceMethods<Mithril_GradientOpInterface, ["buildGradient"]>;

// The op gives its operands sizes from its result or each other
// (refineOperandShapes in MithrilShapes.cpp).
defvar Mithril_RefinesOperandShapes =
    DeclareOpInterfaceMethods<Mithril_ShapeRefinementOpInterface>;

// The op says how it computes on batch shards (inferBatchSharding in
// MithrilBatchSharding.cpp).
defvar Mithril_BatchParallel =
    DeclareOpInterfaceMethods<Mithril_BatchShardingOpInterface>;

// The op's gradient is zero almost everywhere: piecewise constant results.
defvar Mithril_ZeroGradient = Mithril_GradientOpInterface;

#endif // MITHRIL_DIALECT_MITHRIL_IR_MITHRILINTERFACES_TD
