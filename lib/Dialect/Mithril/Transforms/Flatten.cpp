//===- Flatten.cpp - inline the model hierarchy ---------------------------===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//

#include "mithril/Dialect/Mithril/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringSet.h"

namespace mithril {
#define GEN_PASS_DEF_MITHRILFLATTEN
#include "mithril/Dialect/Mithril/Transforms/Passes.h.inc"
} // namespace mithril

using namespace mlir;
using namespace mithril;

/// Prefixes a location with an instance path, so that diagnostics about an
/// inlined op name the instance it came from.
static Location prefixLocation(Location loc, StringRef prefix) {
  if (prefix.empty())
    return loc;
  if (auto name = dyn_cast<NameLoc>(loc))
    return NameLoc::get(StringAttr::get(loc.getContext(), prefix + "." + name.getName().str()),
                        name.getChildLoc());
  return NameLoc::get(StringAttr::get(loc.getContext(), prefix), loc);
}

namespace {
struct FlattenPass : public mithril::impl::MithrilFlattenBase<FlattenPass> {
  using MithrilFlattenBase::MithrilFlattenBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    SmallVector<ModelOp> models(module.getOps<ModelOp>());

    // Find the instantiated models and check for cycles before inlining.
    llvm::DenseSet<Operation *> instantiated;
    for (ModelOp model : models) {
      WalkResult r = model.walk([&](InstanceOp inst) {
        auto callee = symbols.lookup<ModelOp>(inst.getCallee());
        if (!callee) {
          inst.emitOpError("instance '") << inst.getName() << "' refers to unknown model @"
                                         << inst.getCallee();
          return WalkResult::interrupt();
        }
        instantiated.insert(callee);
        return WalkResult::advance();
      });
      if (r.wasInterrupted())
        return signalPassFailure();
    }
    for (ModelOp model : models)
      if (failed(checkAcyclic(model, symbols)))
        return signalPassFailure();

    SmallVector<ModelOp> roots;
    if (!entry.empty()) {
      auto root = symbols.lookup<ModelOp>(entry);
      if (!root) {
        module.emitError("mithril-flatten: no model named '") << entry << "'";
        return signalPassFailure();
      }
      roots.push_back(root);
    } else {
      for (ModelOp model : models)
        if (!instantiated.contains(model))
          roots.push_back(model);
    }

    for (ModelOp root : roots)
      if (failed(flattenInto(root, symbols)))
        return signalPassFailure();

    for (ModelOp model : models)
      if (!llvm::is_contained(roots, model))
        model.erase();
  }

  /// Fails with a diagnostic if `model` reaches itself through instances.
  LogicalResult checkAcyclic(ModelOp model, SymbolTable &symbols) {
    SmallVector<StringRef> path;
    llvm::StringSet<> done;
    std::function<LogicalResult(ModelOp)> visit = [&](ModelOp m) -> LogicalResult {
      if (llvm::is_contained(path, m.getSymName())) {
        std::string chain;
        for (StringRef p : path)
          chain += "@" + p.str() + " -> ";
        chain += "@" + m.getSymName().str();
        return m.emitOpError("instantiates itself: ") << chain;
      }
      if (done.contains(m.getSymName()))
        return success();
      path.push_back(m.getSymName());
      for (InstanceOp inst : m.getBodyBlock().getOps<InstanceOp>())
        if (failed(visit(symbols.lookup<ModelOp>(inst.getCallee()))))
          return failure();
      path.pop_back();
      done.insert(m.getSymName());
      return success();
    };
    return visit(model);
  }

  LogicalResult flattenInto(ModelOp root, SymbolTable &symbols) {
    // Always inline the first instance in block order: the instances an
    // inlined body brings come first, so the hierarchy is walked depth-first
    // and each instance's lifted parameters stay together. The acyclicity
    // check guarantees termination.
    while (true) {
      auto instances = root.getBodyBlock().getOps<InstanceOp>();
      if (instances.empty())
        break;
      if (failed(inlineInstance(root, *instances.begin(), symbols)))
        return failure();
    }
    root.syncFunctionType();
    return success();
  }

  LogicalResult inlineInstance(ModelOp root, InstanceOp inst, SymbolTable &symbols) {
    auto callee = symbols.lookup<ModelOp>(inst.getCallee());
    StringRef prefix = inst.getName();
    IRMapping mapping;
    for (unsigned i = 0, e = callee.getNumInputs(); i < e; ++i) {
      StringRef terminal = callee.getInputName(i);
      Value bound = inst.getBinding(terminal);
      if (!bound) {
        // An unbound input belongs to this instance: lift it into the root.
        // An instance named "" is transparent: it adds no path component.
        std::string path = prefix.empty() ? terminal.str() : (prefix + "." + terminal).str();
        if (root.lookupInput(path))
          return inst.emitOpError("instance '")
                 << prefix << "' would lift terminal '" << terminal << "' as '" << path
                 << "', but @" << root.getSymName() << " already has an input of that name";
        unsigned index = root.getNumInputs();
        Builder b(root.getContext());
        auto attrs = b.getDictionaryAttr(
            {b.getNamedAttr(kTerminalNameAttr, b.getStringAttr(path)),
             b.getNamedAttr(kInputKindAttr,
                            InputKindAttr::get(root.getContext(), callee.getInputKind(i)))});
        Location loc = NameLoc::get(b.getStringAttr(path), inst.getLoc());
        if (failed(root.insertArgument(index, callee.getFunctionType().getInput(i), attrs, loc)))
          return inst.emitOpError("cannot add input terminal '") << path << "'";
        bound = root.getBodyBlock().getArgument(index);
      }
      mapping.map(callee.getBodyBlock().getArgument(i), bound);
    }

    OpBuilder builder(inst);
    for (Operation &op : callee.getBodyBlock().without_terminator()) {
      Operation *clone = builder.clone(op, mapping);
      clone->setLoc(prefixLocation(op.getLoc(), prefix));
      if (auto nested = dyn_cast<InstanceOp>(clone))
        if (!prefix.empty())
          nested.setName((prefix + "." + nested.getName()).str());
    }
    OutputOp out = callee.getOutputOp();
    for (auto [result, value] : llvm::zip(inst.getResults(), out.getValues())) {
      Value mapped = mapping.lookupOrDefault(value);
      // The instance may have been given a more refined type than the callee
      // declares; keep the refined one for the users.
      if (mapped.getType() != result.getType() && !isa<BlockArgument>(mapped) &&
          areCompatibleTypes(mapped.getType(), result.getType()))
        mapped.setType(result.getType());
      result.replaceAllUsesWith(mapped);
    }
    inst.erase();
    return success();
  }
};
} // namespace
