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

/// Rebuilds `op` on float32 operands; its results are cast back to their
/// types.
LogicalResult widen(Operation *op) {
  OpBuilder b(op);
  Location loc = op->getLoc();
  Type f32 = b.getF32Type();
  SmallVector<Value> operands;
  for (Value v : op->getOperands())
    operands.push_back(isLowPrecision(v.getType())
                           ? CastOp::create(b, loc, v, TypeAttr::get(f32)).getResult()
                           : v);
  Operation *wide = b.clone(*op);
  wide->setOperands(operands);
  auto infer = dyn_cast<InferTypeOpInterface>(wide);
  if (!infer)
    return op->emitOpError("computes in ") << "a low-precision type but has no shape rule "
                                              "to rebuild it in float32";
  SmallVector<Type> types;
  if (failed(infer.inferReturnTypes(b.getContext(), loc, wide->getOperands(),
                                    wide->getRawDictionaryAttrs(), wide->getPropertiesStorage(),
                                    wide->getRegions(), types)))
    return failure();
  for (auto [result, type] : llvm::zip(wide->getResults(), types))
    result.setType(type);
  for (auto [old, result] : llvm::zip(op->getResults(), wide->getResults())) {
    Value replacement = result;
    if (old.getType() != result.getType()) {
      auto elementType = cast<RankedTensorType>(old.getType()).getElementType();
      replacement = CastOp::create(b, loc, result, TypeAttr::get(elementType));
      // Keep the static sizes shape inference found.
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
