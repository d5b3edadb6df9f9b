//===- LegalizeBF16Memory.cpp - bf16 vectors moved as 16-bit integers -----===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//

#include "mithril/Codegen/CPU/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Builders.h"

#include "llvm/Support/MathExtras.h"

namespace mithril {
#define GEN_PASS_DEF_MITHRILLEGALIZEBF16MEMORY
#include "mithril/Codegen/CPU/Passes.h.inc"
} // namespace mithril

using namespace mlir;

namespace {
/// A vector of bf16 whose length is no power of two, which LLVM 22's x86
/// instruction selection cannot load or store (it aborts).
bool isOddBF16Vector(Type type) {
  auto vector = dyn_cast<VectorType>(type);
  return vector && vector.getRank() == 1 && !vector.isScalable() &&
         isa<BFloat16Type>(vector.getElementType()) &&
         !llvm::isPowerOf2_64(vector.getNumElements());
}

/// The same vector's bits as i16.
VectorType bitsType(Type type) {
  auto vector = cast<VectorType>(type);
  return VectorType::get(vector.getShape(), IntegerType::get(type.getContext(), 16));
}

struct LegalizeBF16MemoryPass
    : public mithril::impl::MithrilLegalizeBF16MemoryBase<LegalizeBF16MemoryPass> {
  void runOnOperation() override {
    OpBuilder b(&getContext());
    // A bf16 value stored (or a masked load's pass-through) as its bits.
    auto asBits = [&](Operation *op, OpOperand &operand) {
      b.setInsertionPoint(op);
      operand.set(LLVM::BitcastOp::create(b, op->getLoc(), bitsType(operand.get().getType()),
                                          operand.get()));
    };
    // A bf16 value loaded as its bits, then bitcast back for its users.
    auto fromBits = [&](Operation *op) {
      Value loaded = op->getResult(0);
      Type type = loaded.getType();
      loaded.setType(bitsType(type));
      b.setInsertionPointAfter(op);
      auto cast = LLVM::BitcastOp::create(b, op->getLoc(), type, loaded);
      loaded.replaceAllUsesExcept(cast.getResult(), cast);
    };
    getOperation().walk([&](Operation *op) {
      if (auto load = dyn_cast<LLVM::LoadOp>(op)) {
        if (isOddBF16Vector(load.getType()))
          fromBits(op);
      } else if (auto store = dyn_cast<LLVM::StoreOp>(op)) {
        if (isOddBF16Vector(store.getValue().getType()))
          asBits(op, store.getValueMutable());
      } else if (auto load = dyn_cast<LLVM::MaskedLoadOp>(op)) {
        if (isOddBF16Vector(load.getType())) {
          for (OpOperand &passThru : load.getPassThruMutable())
            asBits(op, passThru);
          fromBits(op);
        }
      } else if (auto store = dyn_cast<LLVM::MaskedStoreOp>(op)) {
        if (isOddBF16Vector(store.getValue().getType()))
          asBits(op, op->getOpOperand(0));
      }
    });
  }
};
} // namespace
