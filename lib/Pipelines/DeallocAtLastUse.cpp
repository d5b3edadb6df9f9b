//===- DeallocAtLastUse.cpp - free each buffer after its last use ---------===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//

#include "mithril/Pipelines/Pipelines.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "llvm/ADT/DenseSet.h"

namespace mithril {
#define GEN_PASS_DEF_MITHRILDEALLOCATLASTUSE
#include "mithril/Pipelines/Passes.h.inc"
} // namespace mithril

using namespace mlir;

/// The last op of `block` that uses `buffer` or a memref derived from it
/// (any memref result of a user counts as one: views, casts and reshapes,
/// conservatively everything else); null if a use lies outside `block`.
static Operation *lastUseInBlock(Value buffer, Block *block, Operation *dealloc) {
  Operation *last = buffer.getDefiningOp();
  SmallVector<Value> worklist{buffer};
  llvm::DenseSet<Value> seen;
  while (!worklist.empty()) {
    Value value = worklist.pop_back_val();
    if (!seen.insert(value).second)
      continue;
    for (Operation *user : value.getUsers()) {
      if (user == dealloc)
        continue;
      Operation *ancestor = block->findAncestorOpInBlock(*user);
      if (!ancestor)
        return nullptr;
      if (last->isBeforeInBlock(ancestor))
        last = ancestor;
      for (Value result : user->getResults())
        if (isa<BaseMemRefType>(result.getType()))
          worklist.push_back(result);
    }
  }
  return last;
}

namespace {
struct DeallocAtLastUsePass
    : public mithril::impl::MithrilDeallocAtLastUseBase<DeallocAtLastUsePass> {
  void runOnOperation() override {
    SmallVector<memref::DeallocOp> deallocs;
    getOperation()->walk([&](memref::DeallocOp op) { deallocs.push_back(op); });
    for (memref::DeallocOp dealloc : deallocs) {
      Value buffer = dealloc.getMemref();
      Operation *alloc = buffer.getDefiningOp();
      if (!alloc || !isa<memref::AllocOp>(alloc) || alloc->getBlock() != dealloc->getBlock())
        continue;
      Operation *last = lastUseInBlock(buffer, dealloc->getBlock(), dealloc);
      if (last && last->isBeforeInBlock(dealloc))
        dealloc->moveAfter(last);
    }
  }
};
} // namespace
