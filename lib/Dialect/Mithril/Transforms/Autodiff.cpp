//===- Autodiff.cpp - reverse-mode differentiation of models --------------===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
// The driver of reverse-mode differentiation: it finds the values that
// depend on a differentiated input, walks the model backwards and asks each
// op for its vector-Jacobian product (GradientOpInterface, with the rules in
// MithrilGradients.cpp). Gradients are mithril ops appended to the model, so
// they go through the same shape rules, fusion, bufferization and code
// generation as the forward model, and reuse its values.
//
//===----------------------------------------------------------------------===//

#include "mithril/Dialect/Mithril/Transforms/Passes.h"

#include "mithril/Dialect/Mithril/IR/GradientBuilder.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/ADT/DenseSet.h"

namespace mithril {
#define GEN_PASS_DEF_MITHRILAUTODIFF
#include "mithril/Dialect/Mithril/Transforms/Passes.h.inc"
} // namespace mithril

using namespace mlir;
using namespace mithril;

namespace {

bool isDifferentiable(Value v) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  return t && isa<FloatType>(t.getElementType());
}

struct AutodiffPass : public mithril::impl::MithrilAutodiffBase<AutodiffPass> {
  using MithrilAutodiffBase::MithrilAutodiffBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    RewritePatternSet patterns(&getContext());
    // layer_norm keeps its own gradient (backward() below).
    populateMithrilDecomposePatterns(patterns, /*layerNorm=*/false);
    if (failed(applyPatternsGreedily(module, std::move(patterns))))
      return signalPassFailure();
    bool found = false;
    for (ModelOp model : module.getOps<ModelOp>()) {
      if (!entry.empty() && model.getSymName() != entry)
        continue;
      found = true;
      if (failed(differentiate(model)))
        return signalPassFailure();
    }
    if (!entry.empty() && !found) {
      module.emitError("mithril-autodiff: no model named '") << entry << "'";
      signalPassFailure();
    }
  }

  LogicalResult differentiate(ModelOp model) {
    if (!model.getBodyBlock().getOps<InstanceOp>().empty())
      return model.emitOpError("must be flattened before mithril-autodiff");
    Block &body = model.getBodyBlock();
    // The gradient rules rebuild shapes (reshape, broadcast, sum back to an
    // operand's shape) from static types; a dynamic one would make them guess.
    for (BlockArgument arg : body.getArguments()) {
      auto type = dyn_cast<RankedTensorType>(arg.getType());
      if (type && !type.hasStaticShape())
        return model.emitOpError("mithril-autodiff needs static shapes, but input terminal '")
               << model.getInputName(arg.getArgNumber()) << "' has type " << type
               << "; give the input shapes first (mithril-infer-shapes{shapes=...})";
    }
    for (Operation &op : body.without_terminator())
      for (Type type : op.getResultTypes())
        if (auto tensor = dyn_cast<RankedTensorType>(type); tensor && !tensor.hasStaticShape())
          return op.emitOpError("mithril-autodiff needs static shapes, but this result has type ")
                 << tensor << "; give the input shapes first (mithril-infer-shapes{shapes=...})";
    OutputOp output = model.getOutputOp();

    // The inputs to differentiate and the outputs to seed.
    SmallVector<unsigned> wrtInputs, seedOutputs;
    for (const std::string &name : wrt) {
      std::optional<unsigned> i = model.lookupInput(name);
      if (!i)
        return model.emitOpError("mithril-autodiff: no input terminal '") << name << "'";
      if (!isDifferentiable(body.getArgument(*i)))
        return model.emitOpError("mithril-autodiff: input terminal '")
               << name << "' is not floating-point and has no gradient";
      wrtInputs.push_back(*i);
    }
    if (wrt.empty())
      for (unsigned i = 0, e = model.getNumInputs(); i < e; ++i)
        if (model.getInputKind(i) == InputKind::Param && isDifferentiable(body.getArgument(i)))
          wrtInputs.push_back(i);
    for (const std::string &name : seeds) {
      std::optional<unsigned> i = model.lookupOutput(name);
      if (!i)
        return model.emitOpError("mithril-autodiff: no output terminal '") << name << "'";
      seedOutputs.push_back(*i);
    }
    if (seeds.empty())
      for (unsigned i = 0, e = model.getNumOutputs(); i < e; ++i)
        if (isDifferentiable(output.getValues()[i]))
          seedOutputs.push_back(i);

    // Values that depend on a differentiated input: only they need adjoints.
    active.clear();
    for (unsigned i : wrtInputs)
      active.insert(body.getArgument(i));
    for (Operation &op : body.without_terminator()) {
      if (isa<StopGradientOp>(op))
        continue;
      if (llvm::any_of(op.getOperands(), [&](Value v) { return active.contains(v); }))
        for (Value r : op.getResults())
          if (isDifferentiable(r))
            active.insert(r);
    }

    OpBuilder b(output);
    llvm::DenseMap<Value, Value> adjoint;
    // Set once the builder exists: adding adjoints builds an add.
    GradientBuilder *builder = nullptr;
    auto accumulate = [&](Value v, Value grad) {
      if (!grad || !active.contains(v))
        return;
      auto it = adjoint.find(v);
      if (it == adjoint.end())
        adjoint[v] = grad;
      else
        it->second = builder->add(it->second, grad);
    };
    auto isActive = [&](Value v) { return active.contains(v); };
    GradientBuilder g(b, model.getLoc(), accumulate, isActive);
    builder = &g;

    // Seed gradients arrive as new data inputs.
    SmallVector<std::pair<unsigned, Value>> seedArgs;
    for (unsigned i : seedOutputs) {
      Value out = output.getValues()[i];
      std::string name = ("grad:" + model.getOutputName(i)).str();
      if (model.lookupInput(name))
        return model.emitOpError("already has an input named '") << name << "'";
      unsigned index = model.getNumInputs();
      auto attrs = b.getDictionaryAttr(
          {b.getNamedAttr(kTerminalNameAttr, b.getStringAttr(name)),
           b.getNamedAttr(kInputKindAttr, InputKindAttr::get(b.getContext(), InputKind::Data))});
      if (failed(model.insertArgument(index, out.getType(), attrs,
                                      NameLoc::get(b.getStringAttr(name)))))
        return failure();
      accumulate(out, body.getArgument(index));
    }

    // Walk the ops backwards, turning each result's adjoint into adjoints of
    // its operands.
    SmallVector<Operation *> ops;
    for (Operation &op : body.without_terminator())
      ops.push_back(&op);
    for (Operation *op : llvm::reverse(ops)) {
      if (op->getNumResults() != 1)
        continue;
      auto it = adjoint.find(op->getResult(0));
      if (it == adjoint.end())
        continue;
      g.loc = op->getLoc();
      if (failed(backward(op, it->second, g)))
        return failure();
    }

    if (checkpointSegments > 0)
      recomputeInSegments(ops, output, checkpointSegments);

    // Gradients leave through new outputs.
    SmallVector<Value> outputs(output.getValues());
    SmallVector<Attribute> resAttrs(model.getResAttrsAttr().getValue());
    for (unsigned i : wrtInputs) {
      Value arg = body.getArgument(i);
      Value grad = adjoint.lookup(arg);
      if (!grad)
        grad = g.zerosLike(arg);
      std::string name = ("grad:" + model.getInputName(i)).str();
      if (model.lookupOutput(name))
        return model.emitOpError("already has an output named '") << name << "'";
      outputs.push_back(grad);
      resAttrs.push_back(
          b.getDictionaryAttr({b.getNamedAttr(kTerminalNameAttr, b.getStringAttr(name))}));
    }
    output.getValuesMutable().assign(outputs);
    model.setResAttrsAttr(b.getArrayAttr(resAttrs));
    model.syncFunctionType();
    return success();
  }

  /// Gradient checkpointing: the forward ops (`forward`, in order), split
  /// into `segments` runs, keep alive only the values that cross a run's
  /// boundary, the model's outputs and inputs. A backward op that needs any
  /// other forward value gets it from a copy of its run's ops, made just
  /// before the first backward op that needs one: the forward values then
  /// die during the forward pass, and a run's are alive again only while its
  /// backward ops run.
  void recomputeInSegments(ArrayRef<Operation *> forward, OutputOp output, unsigned segments) {
    SmallVector<Operation *> work;
    for (Operation *op : forward)
      if (!isa<ConstantOp>(op))
        work.push_back(op);
    if (work.size() < 2)
      return;
    unsigned runs = std::min<unsigned>(segments, work.size());
    llvm::DenseMap<Operation *, unsigned> runOf;
    for (size_t i = 0; i < work.size(); ++i)
      runOf[work[i]] = static_cast<unsigned>(i * runs / work.size());
    auto crossesBoundary = [&](Value v, unsigned run) {
      return llvm::any_of(v.getUsers(), [&](Operation *user) {
        if (user == output.getOperation())
          return true;
        auto it = runOf.find(user);
        return it != runOf.end() && it->second > run;
      });
    };
    for (unsigned run = 0; run < runs; ++run) {
      SmallVector<Operation *> runOps;
      for (Operation *op : work)
        if (runOf[op] == run)
          runOps.push_back(op);
      // The backward uses of the run's values that do not cross its boundary.
      SmallVector<OpOperand *> uses;
      Operation *first = nullptr;
      for (Operation *op : runOps)
        for (Value result : op->getResults()) {
          if (crossesBoundary(result, run))
            continue;
          for (OpOperand &use : result.getUses()) {
            Operation *user = use.getOwner();
            if (runOf.count(user) || isa<ConstantOp>(user))
              continue;
            uses.push_back(&use);
            if (!first || user->isBeforeInBlock(first))
              first = user;
          }
        }
      if (uses.empty())
        continue;
      OpBuilder rb(first);
      IRMapping copies;
      for (Operation *op : runOps) {
        Operation *copy = rb.clone(*op, copies);
        copy->setAttr("mithril.recompute", rb.getI64IntegerAttr(run));
      }
      for (OpOperand *use : uses)
        use->set(copies.lookup(use->get()));
    }
  }

  /// The vector-Jacobian product of one op, from the op's gradient rule.
  LogicalResult backward(Operation *op, Value grad, GradientBuilder &g) {
    if (auto differentiable = dyn_cast<GradientOpInterface>(op))
      return differentiable.buildGradient(g, grad);
    if (llvm::none_of(op->getOperands(), [&](Value v) { return active.contains(v); }))
      return success();
    return op->emitOpError("has no gradient rule (GradientOpInterface); mithril-autodiff "
                           "cannot differentiate through it");
  }

  /// The values of the model being differentiated that depend on an input
  /// in `wrt`.
  llvm::DenseSet<Value> active;
};
} // namespace
