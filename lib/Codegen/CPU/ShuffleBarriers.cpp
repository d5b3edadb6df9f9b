//===- ShuffleBarriers.cpp - cut deep chains of vector shuffles -----------===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//

#include "mithril/Codegen/CPU/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

namespace mithril {
#define GEN_PASS_DEF_MITHRILSHUFFLEBARRIERS
#include "mithril/Codegen/CPU/Passes.h.inc"
} // namespace mithril

using namespace mlir;

namespace {
struct ShuffleBarriersPass : public mithril::impl::MithrilShuffleBarriersBase<ShuffleBarriersPass> {
  using MithrilShuffleBarriersBase::MithrilShuffleBarriersBase;

  void runOnOperation() override {
    unsigned registerBits = vectorBits;
    if (registerBits == 0) {
      std::optional<unsigned> host = mithril::vectorRegisterBits();
      registerBits = host ? *host : 128;
    }
    auto fillsRegister = [&](VectorType type) {
      if (type.getRank() != 1 || type.isScalable() || !type.getElementType().isIntOrFloat())
        return false;
      int64_t bits = type.getNumElements() * type.getElementTypeBitWidth();
      return llvm::is_contained({128, 256, 512}, bits) && bits <= registerBits;
    };
    auto isShuffle = [](Value v) { return v.getDefiningOp<vector::ShuffleOp>() != nullptr; };
    // In order, so that a shuffle reading a copy made for the round before
    // reads no shuffle.
    getOperation()->walk([&](vector::ShuffleOp shuffle) {
      if (!fillsRegister(shuffle.getResultVectorType()) || !isShuffle(shuffle.getV1()) ||
          !isShuffle(shuffle.getV2()) ||
          llvm::none_of(shuffle->getUsers(), llvm::IsaPred<vector::ShuffleOp>))
        return;
      OpBuilder b(shuffle->getContext());
      b.setInsertionPointAfter(shuffle);
      Value result = shuffle.getResult();
      auto copy = LLVM::InlineAsmOp::create(
          b, shuffle.getLoc(), result.getType(), ValueRange{result}, /*asm_string=*/"",
          /*constraints=*/"=v,0", /*has_side_effects=*/false, /*is_align_stack=*/false,
          LLVM::tailcallkind::TailCallKind::None, /*asm_dialect=*/LLVM::AsmDialectAttr(),
          /*operand_attrs=*/ArrayAttr());
      result.replaceAllUsesExcept(copy.getRes(), copy);
    });
  }
};
} // namespace
