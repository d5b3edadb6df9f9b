//===- DCE.cpp - drop what reaches no output ------------------------------===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//

#include "mithril/Dialect/Mithril/Transforms/Passes.h"

#include "llvm/ADT/BitVector.h"

namespace mithril {
#define GEN_PASS_DEF_MITHRILDCE
#include "mithril/Dialect/Mithril/Transforms/Passes.h.inc"
} // namespace mithril

using namespace mlir;
using namespace mithril;

namespace {
struct DCEPass : public mithril::impl::MithrilDCEBase<DCEPass> {
  using MithrilDCEBase::MithrilDCEBase;

  void runOnOperation() override {
    for (ModelOp model : getOperation().getOps<ModelOp>()) {
      if (failed(dropOutputs(model)))
        return signalPassFailure();
      // Walk backwards so that an op's users are gone before it is visited.
      // (A std::reverse_iterator would hold on to the erased node.)
      Operation *op = model.getBodyBlock().getTerminator()->getPrevNode();
      while (op) {
        Operation *prev = op->getPrevNode();
        if (op->use_empty())
          op->erase();
        op = prev;
      }
    }
  }

  LogicalResult dropOutputs(ModelOp model) {
    if (discard.empty())
      return success();
    llvm::BitVector drop(model.getNumOutputs());
    for (const std::string &name : discard) {
      if (std::optional<unsigned> index = model.lookupOutput(name))
        drop.set(*index);
    }
    if (drop.none())
      return success();
    OutputOp out = model.getOutputOp();
    SmallVector<Value> kept;
    for (auto [i, v] : llvm::enumerate(out.getValues()))
      if (!drop.test(i))
        kept.push_back(v);
    out.getValuesMutable().assign(kept);
    return model.eraseResults(drop);
  }
};
} // namespace
