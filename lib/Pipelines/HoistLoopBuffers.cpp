//===- HoistLoopBuffers.cpp - loop temporaries allocated once -------------===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//

#include "mithril/Pipelines/Pipelines.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Interfaces/CallInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

namespace mithril {
#define GEN_PASS_DEF_MITHRILHOISTLOOPBUFFERS
#include "mithril/Pipelines/Passes.h.inc"
} // namespace mithril

using namespace mlir;

namespace {
/// Whether the buffer `value` (or a view of it) only serves reads and writes
/// inside the iteration: no terminator yields it, no call takes it, nothing
/// frees it, and no op but a view makes another memref of it.
bool staysInIteration(Value value) {
  for (OpOperand &use : value.getUses()) {
    Operation *user = use.getOwner();
    if (user->hasTrait<OpTrait::IsTerminator>() || isa<CallOpInterface, memref::DeallocOp>(user))
      return false;
    if (auto view = dyn_cast<ViewLikeOpInterface>(user); view && view.getViewSource() == value) {
      if (!staysInIteration(view->getResult(0)))
        return false;
      continue;
    }
    if (llvm::any_of(user->getResultTypes(), llvm::IsaPred<BaseMemRefType>))
      return false;
  }
  return true;
}

struct HoistLoopBuffersPass
    : public mithril::impl::MithrilHoistLoopBuffersBase<HoistLoopBuffersPass> {
  void runOnOperation() override {
    SmallVector<memref::AllocOp> allocs;
    getOperation().walk([&](memref::AllocOp alloc) {
      if (alloc->getParentOfType<scf::ForOp>() && alloc.getType().hasStaticShape() &&
          alloc->getNumOperands() == 0 && staysInIteration(alloc.getResult()))
        allocs.push_back(alloc);
    });
    for (memref::AllocOp alloc : allocs) {
      // Out of every enclosing scf.for up to the first other region: an
      // scf.forall's chunk, an scf.if, the function.
      Operation *outermost = nullptr;
      for (Operation *parent = alloc->getParentOp(); isa_and_nonnull<scf::ForOp>(parent);
           parent = parent->getParentOp())
        outermost = parent;
      if (outermost)
        alloc->moveBefore(outermost);
    }
  }
};
} // namespace
