//===- ReshapedResults.cpp - reshaped buffers returned as allocations -----===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//

#include "mithril/Pipelines/Pipelines.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/BuiltinOps.h"

namespace mithril {
#define GEN_PASS_DEF_MITHRILRESHAPEDRESULTS
#include "mithril/Pipelines/Passes.h.inc"
} // namespace mithril

using namespace mlir;

namespace {
/// A static shape of identity layout: a buffer that a reshape to another
/// such shape views whole, and that can be allocated in its place.
bool isPlain(MemRefType type) { return type.hasStaticShape() && type.getLayout().isIdentity(); }

/// The allocation `reshape` views, when the function can allocate the
/// reshape's type instead: both plain, the allocation without operands.
memref::AllocOp reshapedAllocation(Operation *reshape) {
  auto result = cast<MemRefType>(reshape->getResult(0).getType());
  auto alloc = reshape->getOperand(0).getDefiningOp<memref::AllocOp>();
  if (!alloc || alloc->getNumOperands() != 0 || !isPlain(alloc.getType()) || !isPlain(result))
    return {};
  return alloc;
}

struct ReshapedResultsPass : public mithril::impl::MithrilReshapedResultsBase<ReshapedResultsPass> {
  void runOnOperation() override {
    getOperation().walk([](func::ReturnOp ret) {
      for (OpOperand &operand : ret->getOpOperands()) {
        Operation *reshape = operand.get().getDefiningOp();
        if (!isa_and_nonnull<memref::ExpandShapeOp, memref::CollapseShapeOp>(reshape))
          continue;
        memref::AllocOp alloc = reshapedAllocation(reshape);
        if (!alloc)
          continue;
        // The result's shape allocated where the buffer was, and the
        // buffer's users given the inverse reshape of it.
        OpBuilder b(alloc);
        auto type = cast<MemRefType>(reshape->getResult(0).getType());
        auto whole = memref::AllocOp::create(b, alloc.getLoc(), type, alloc.getAlignmentAttr());
        Value view;
        if (auto expand = dyn_cast<memref::ExpandShapeOp>(reshape))
          view = memref::CollapseShapeOp::create(b, alloc.getLoc(), alloc.getType(), whole,
                                                 expand.getReassociationIndices());
        else
          view = memref::ExpandShapeOp::create(
              b, alloc.getLoc(), alloc.getType().getShape(), whole,
              cast<memref::CollapseShapeOp>(reshape).getReassociationIndices());
        alloc.getResult().replaceAllUsesWith(view);
        alloc->erase();
        operand.set(whole);
        if (reshape->use_empty())
          reshape->erase();
      }
    });
  }
};
} // namespace
