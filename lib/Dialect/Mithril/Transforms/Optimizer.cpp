//===- Optimizer.cpp - parameter updates after differentiation ------------===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
// A training step is one compiled function: forward, backward and the
// optimizer's update, so the update fuses with the gradient computation.
//
//===----------------------------------------------------------------------===//

#include "mithril/Dialect/Mithril/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/BitVector.h"

namespace mithril {
#define GEN_PASS_DEF_MITHRILOPTIMIZER
#include "mithril/Dialect/Mithril/Transforms/Passes.h.inc"
} // namespace mithril

using namespace mlir;
using namespace mithril;

namespace {
struct OptimizerPass : public mithril::impl::MithrilOptimizerBase<OptimizerPass> {
  using MithrilOptimizerBase::MithrilOptimizerBase;

  void runOnOperation() override {
    if (algorithm != "sgd" && algorithm != "adam") {
      getOperation().emitError("mithril-optimizer: unknown algorithm '")
          << algorithm << "' (expected sgd or adam)";
      return signalPassFailure();
    }
    for (ModelOp model : getOperation().getOps<ModelOp>()) {
      if (!entry.empty() && model.getSymName() != entry)
        continue;
      if (failed(addUpdates(model)))
        return signalPassFailure();
    }
  }

  /// Adds an input terminal and returns its value.
  Value addInput(ModelOp model, OpBuilder &b, StringRef name, Type type) {
    unsigned index = model.getNumInputs();
    auto attrs = b.getDictionaryAttr(
        {b.getNamedAttr(kTerminalNameAttr, b.getStringAttr(name)),
         b.getNamedAttr(kInputKindAttr, InputKindAttr::get(b.getContext(), InputKind::Data))});
    if (failed(model.insertArgument(index, type, attrs, NameLoc::get(b.getStringAttr(name)))))
      return {};
    return model.getBodyBlock().getArgument(index);
  }

  LogicalResult addUpdates(ModelOp model) {
    OutputOp output = model.getOutputOp();
    OpBuilder b(output);
    Location loc = model.getLoc();
    SmallVector<std::pair<unsigned, std::string>> grads;
    for (unsigned i = 0, e = model.getNumOutputs(); i < e; ++i) {
      StringRef name = model.getOutputName(i);
      if (name.starts_with("grad:"))
        grads.emplace_back(i, name.drop_front(5).str());
    }
    if (grads.empty())
      return model.emitOpError("mithril-optimizer: the model has no gradient outputs; run "
                               "mithril-autodiff first");
    Type et = cast<RankedTensorType>(output.getValues()[grads[0].first].getType()).getElementType();
    auto scalarType = RankedTensorType::get({}, et);
    // The update of float16 and bfloat16 parameters is computed in float32
    // and rounded once: Adam's 0.999 is 1 in bfloat16, and its bias
    // correction would divide by zero.
    Type ct = isa<Float16Type, BFloat16Type>(et) ? Type(b.getF32Type()) : et;
    auto wide = [&](Value v) -> Value {
      return ct == et ? v : CastOp::create(b, loc, v, TypeAttr::get(ct)).getResult();
    };
    auto narrow = [&](Value v) -> Value {
      return ct == et ? v : CastOp::create(b, loc, v, TypeAttr::get(et)).getResult();
    };
    auto cst = [&](double v) { return scalarConstant(b, loc, ct, v); };
    Value lr = addInput(model, b, "optimizer.lr", scalarType);
    Value step;
    if (algorithm == "adam")
      step = addInput(model, b, "optimizer.step", scalarType);
    if (!lr || (algorithm == "adam" && !step))
      return failure();
    lr = wide(lr);
    if (step)
      step = wide(step);

    SmallVector<Value> values(output.getValues());
    SmallVector<Attribute> names(model.getResAttrsAttr().getValue());
    auto addOutput = [&](StringRef name, Value v) {
      values.push_back(v);
      names.push_back(b.getDictionaryAttr(
          {b.getNamedAttr(kTerminalNameAttr, b.getStringAttr(name))}));
    };
    // Loss scaling: the gradients unscaled, and whether all are finite (a
    // sum of g * 0 is NaN exactly when some element is infinite or NaN).
    SmallVector<Value> unscaled;
    Value finite;
    if (lossScaling) {
      Value scale = addInput(model, b, "optimizer.loss_scale", scalarType);
      if (!scale)
        return failure();
      scale = wide(scale);
      Value total;
      for (auto [index, param] : grads) {
        Value g = DivideOp::create(b, loc, wide(values[index]), scale);
        unscaled.push_back(g);
        Value bad = SumOp::create(b, loc, MultiplyOp::create(b, loc, g, cst(0.0)),
                                  DenseI64ArrayAttr(), b.getBoolAttr(false));
        total = total ? AddOp::create(b, loc, total, bad).getResult() : bad;
      }
      finite = EqualOp::create(b, loc, total, total);
    }
    // Without loss scaling every new value is taken; with it, only when the
    // gradients are finite (else the old one stays).
    auto taken = [&](Value updated, Value old) -> Value {
      return finite ? WhereOp::create(b, loc, finite, updated, old).getResult() : updated;
    };

    llvm::BitVector drop(values.size());
    for (auto [position, entry] : llvm::enumerate(grads)) {
      auto [index, param] = entry;
      std::optional<unsigned> in = model.lookupInput(param);
      if (!in)
        return model.emitOpError("mithril-optimizer: gradient of unknown input '") << param << "'";
      Value stored = model.getBodyBlock().getArgument(*in);
      Value p = wide(stored);
      Value g = finite ? unscaled[position] : wide(values[index]);
      drop.set(index);
      Type type = stored.getType();
      if (weightDecay != 0.0)
        g = AddOp::create(b, loc, g, MultiplyOp::create(b, loc, p, cst(weightDecay)));
      Value update;
      if (algorithm == "sgd") {
        update = g;
        if (momentum != 0.0) {
          std::string name = "state:" + param + ".velocity";
          Value v = addInput(model, b, name, type);
          if (!v)
            return failure();
          update = AddOp::create(b, loc, MultiplyOp::create(b, loc, wide(v), cst(momentum)), g);
          addOutput("new:" + name, narrow(taken(update, wide(v))));
        }
      } else {
        std::string mName = "state:" + param + ".m", vName = "state:" + param + ".v";
        Value m = addInput(model, b, mName, type), v = addInput(model, b, vName, type);
        if (!m || !v)
          return failure();
        m = wide(m);
        v = wide(v);
        Value m2 = AddOp::create(b, loc, MultiplyOp::create(b, loc, m, cst(beta1)),
                                 MultiplyOp::create(b, loc, g, cst(1.0 - beta1)));
        Value v2 = AddOp::create(b, loc, MultiplyOp::create(b, loc, v, cst(beta2)),
                                 MultiplyOp::create(b, loc, SquareOp::create(b, loc, g),
                                                    cst(1.0 - beta2)));
        addOutput("new:" + mName, narrow(taken(m2, m)));
        addOutput("new:" + vName, narrow(taken(v2, v)));
        // Bias corrections 1 - beta^t, computed from the step input.
        Value c1 = SubtractOp::create(b, loc, cst(1.0), PowerOp::create(b, loc, cst(beta1), step));
        Value c2 = SubtractOp::create(b, loc, cst(1.0), PowerOp::create(b, loc, cst(beta2), step));
        Value mHat = DivideOp::create(b, loc, m2, c1);
        Value vHat = DivideOp::create(b, loc, v2, c2);
        update = DivideOp::create(b, loc, mHat,
                                  AddOp::create(b, loc, SqrtOp::create(b, loc, vHat), cst(epsilon)));
      }
      addOutput(
          "new:" + param,
          narrow(taken(SubtractOp::create(b, loc, p, MultiplyOp::create(b, loc, update, lr)), p)));
    }
    if (finite)
      addOutput("optimizer.finite", finite);
    // The gradient outputs give way to the updated parameters.
    SmallVector<Value> kept;
    SmallVector<Attribute> keptNames;
    for (unsigned i = 0; i < values.size(); ++i)
      if (i >= drop.size() || !drop.test(i)) {
        kept.push_back(values[i]);
        keptNames.push_back(names[i]);
      }
    output.getValuesMutable().assign(kept);
    model.setResAttrsAttr(b.getArrayAttr(keptNames));
    model.syncFunctionType();
    return success();
  }
};
} // namespace
