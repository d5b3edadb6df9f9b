//===- DCE.cpp - drop what reaches no output ------------------------------===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//

#include "mithril/Dialect/Mithril/Transforms/Passes.h"

#include "llvm/ADT/BitVector.h"
#include "llvm/ADT/StringSet.h"

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
    // A model that an instance refers to keeps its terminals: the instance
    // binds them by name.
    llvm::StringSet<> instantiated;
    getOperation().walk([&](InstanceOp inst) { instantiated.insert(inst.getCallee()); });
    for (ModelOp model : getOperation().getOps<ModelOp>()) {
      FailureOr<bool> dropped = dropOutputs(model);
      if (failed(dropped))
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
      if (*dropped && !instantiated.contains(model.getSymName()))
        dropUnreadInputs(model);
    }
  }

  // Inputs that only discarded outputs read are not terminals any more: a
  // caller need not feed a weight whose only use was dropped.
  static void dropUnreadInputs(ModelOp model) {
    Block &body = model.getBodyBlock();
    llvm::BitVector unread(body.getNumArguments());
    SmallVector<Attribute> names(model->getAttrOfType<ArrayAttr>(kDiscardedAttr).getValue());
    for (BlockArgument arg : body.getArguments())
      if (arg.use_empty()) {
        unread.set(arg.getArgNumber());
        names.push_back(
            StringAttr::get(model.getContext(), model.getInputName(arg.getArgNumber())));
      }
    if (unread.none())
      return;
    (void)model.eraseArguments(unread);
    model->setAttr(kDiscardedAttr, ArrayAttr::get(model.getContext(), names));
  }

  /// Removes the discarded output terminals; whether there were any.
  FailureOr<bool> dropOutputs(ModelOp model) {
    if (discard.empty())
      return false;
    llvm::BitVector drop(model.getNumOutputs());
    for (const std::string &name : discard) {
      if (std::optional<unsigned> index = model.lookupOutput(name))
        drop.set(*index);
    }
    if (drop.none())
      return false;
    // Named on the model, for the runtime to tell its callers what went.
    SmallVector<Attribute> names;
    if (auto before = model->getAttrOfType<ArrayAttr>(kDiscardedAttr))
      llvm::append_range(names, before.getValue());
    for (unsigned i : drop.set_bits())
      names.push_back(StringAttr::get(model.getContext(), model.getOutputName(i)));
    model->setAttr(kDiscardedAttr, ArrayAttr::get(model.getContext(), names));
    OutputOp out = model.getOutputOp();
    SmallVector<Value> kept;
    for (auto [i, v] : llvm::enumerate(out.getValues()))
      if (!drop.test(i))
        kept.push_back(v);
    out.getValuesMutable().assign(kept);
    if (failed(model.eraseResults(drop)))
      return failure();
    return true;
  }
};
} // namespace
