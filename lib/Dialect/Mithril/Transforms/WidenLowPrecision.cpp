//===- WidenLowPrecision.cpp - f16/bf16 ops computed in f32 ---------------===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
// float16 and bfloat16 are storage types here: an op computes in float32 and
// rounds its result once, as the hardware without native half arithmetic
// (and torch's CPU kernels) does. Sums and products then accumulate in
// float32, and every lowering and schedule written for float32 serves them.
//
//===----------------------------------------------------------------------===//

#include "mithril/Dialect/Mithril/Transforms/Passes.h"

#include "mlir/IR/Builders.h"

namespace mithril {
#define GEN_PASS_DEF_MITHRILWIDENLOWPRECISION
#include "mithril/Dialect/Mithril/Transforms/Passes.h.inc"
} // namespace mithril

using namespace mlir;
using namespace mithril;

namespace {

bool isLowPrecision(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && isa<Float16Type, BFloat16Type>(tensor.getElementType());
}

/// A copy of `op` on `operands`, with its result types inferred again (their
/// sizes kept: shape inference may know more than the shape rules alone).
FailureOr<Operation *> rebuild(OpBuilder &b, Operation *op, ValueRange operands) {
  Operation *copy = b.clone(*op);
  copy->setOperands(operands);
  if (!isa<InferTypeOpInterface>(copy) || failed(reinferElementTypes(copy))) {
    copy->erase();
    return op->emitOpError("computes in a low-precision type but its shape rule cannot "
                           "rebuild it in float32");
  }
  return copy;
}

/// `v` in float32. A transpose of a low-precision value is widened before it
/// moves the data, so that the op reading it still sees a transpose (the
/// CPU schedule reads a Linear layer's weight in place through it).
FailureOr<Value> widenValue(OpBuilder &b, Value v) {
  Type f32 = b.getF32Type();
  if (auto transpose = v.getDefiningOp<TransposeOp>();
      transpose && isLowPrecision(transpose.getInput().getType())) {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(transpose);
    FailureOr<Value> input = widenValue(b, transpose.getInput());
    if (failed(input))
      return failure();
    FailureOr<Operation *> wide = rebuild(b, transpose, ValueRange{*input});
    if (failed(wide))
      return failure();
    return (*wide)->getResult(0);
  }
  return CastOp::create(b, v.getLoc(), v, TypeAttr::get(f32)).getResult();
}

/// Rebuilds `op` on float32 operands; its results are cast back to their
/// types.
LogicalResult widen(Operation *op) {
  OpBuilder b(op);
  Location loc = op->getLoc();
  SmallVector<Value> operands;
  for (Value v : op->getOperands()) {
    if (!isLowPrecision(v.getType())) {
      operands.push_back(v);
      continue;
    }
    FailureOr<Value> wide = widenValue(b, v);
    if (failed(wide))
      return failure();
    operands.push_back(*wide);
  }
  FailureOr<Operation *> wide = rebuild(b, op, operands);
  if (failed(wide))
    return failure();
  for (auto [old, result] : llvm::zip(op->getResults(), (*wide)->getResults())) {
    Value replacement = result;
    if (old.getType() != result.getType()) {
      auto elementType = cast<RankedTensorType>(old.getType()).getElementType();
      replacement = CastOp::create(b, loc, result, TypeAttr::get(elementType));
      replacement.setType(old.getType());
    }
    old.replaceAllUsesWith(replacement);
  }
  op->erase();
  return success();
}

struct WidenLowPrecisionPass
    : public mithril::impl::MithrilWidenLowPrecisionBase<WidenLowPrecisionPass> {
  void runOnOperation() override {
    SmallVector<Operation *> work;
    getOperation().walk([&](Operation *op) {
      if (!isa<MithrilDialect>(op->getDialect()) ||
          isa<ModelOp, OutputOp, InstanceOp, ConstantOp, CastOp>(op) ||
          op->hasTrait<traits::DataMovement>())
        return;
      if (llvm::any_of(op->getOperandTypes(), isLowPrecision) ||
          llvm::any_of(op->getResultTypes(), isLowPrecision))
        work.push_back(op);
    });
    for (Operation *op : work)
      if (failed(widen(op)))
        return signalPassFailure();
  }
};
} // namespace
