//===- InferShapes.cpp - propagate shapes through a model -----------------===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//

#include "mithril/Dialect/Mithril/Transforms/Passes.h"

#include "mithril/Dialect/Mithril/IR/ShapeRefiner.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/StringExtras.h"

namespace mithril {
#define GEN_PASS_DEF_MITHRILINFERSHAPES
#include "mithril/Dialect/Mithril/Transforms/Passes.h.inc"
} // namespace mithril

using namespace mlir;
using namespace mithril;

static constexpr int64_t kDyn = ShapedType::kDynamic;

FailureOr<std::pair<std::string, SmallVector<int64_t>>>
mithril::parseShapeSpec(StringRef spec) {
  auto [name, dims] = spec.rsplit(':');
  if (name.empty() || dims.data() == nullptr || spec.find(':') == StringRef::npos)
    return failure();
  SmallVector<int64_t> shape;
  if (dims != "scalar" && !dims.empty()) {
    SmallVector<StringRef> parts;
    dims.split(parts, 'x');
    for (StringRef p : parts) {
      if (p == "?") {
        shape.push_back(kDyn);
        continue;
      }
      int64_t d;
      if (p.getAsInteger(10, d) || d < 0)
        return failure();
      shape.push_back(d);
    }
  }
  return std::make_pair(name.str(), shape);
}

/// The most refined type that is compatible with both, or null if they
/// conflict.
static RankedTensorType meet(RankedTensorType a, RankedTensorType b) {
  if (!a || !b || a.getRank() != b.getRank() || a.getElementType() != b.getElementType())
    return {};
  SmallVector<int64_t> shape;
  for (auto [x, y] : llvm::zip(a.getShape(), b.getShape())) {
    if (ShapedType::isDynamic(x))
      shape.push_back(y);
    else if (ShapedType::isDynamic(y) || x == y)
      shape.push_back(x);
    else
      return {};
  }
  return RankedTensorType::get(shape, a.getElementType());
}

/// Backward rule: the op's own (ShapeRefinementOpInterface), or its
/// family's from its traits. Returns true on change.
static FailureOr<bool> refineOperands(Operation *op, const DenseSet<Value> &keepDynamic) {
  ShapeRefiner refiner(op, keepDynamic);
  LogicalResult result = success();
  if (auto rule = dyn_cast<ShapeRefinementOpInterface>(op))
    result = rule.refineOperandShapes(refiner);
  else
    result = refineOperandShapesByTraits(refiner);
  if (failed(result))
    return failure();
  return refiner.changed();
}

/// Forward rule: re-infer an op's result types from its operands.
static FailureOr<bool> refineResults(Operation *op) {
  if (!isa<InferTypeOpInterface>(op))
    return false;
  SmallVector<Type> inferred;
  if (failed(inferResultTypes(op, inferred)))
    return failure();
  bool changed = false;
  for (auto [result, type] : llvm::zip(op->getResults(), inferred)) {
    if (result.getType() == type)
      continue;
    RankedTensorType joined = meet(cast<RankedTensorType>(result.getType()),
                                   dyn_cast<RankedTensorType>(type));
    if (!joined) {
      InFlightDiagnostic diag = op->emitOpError("result is declared as ")
                                << result.getType() << " but its operands give " << type;
      auto declared = cast<RankedTensorType>(result.getType());
      auto given = dyn_cast<RankedTensorType>(type);
      if (given && given.getRank() != declared.getRank() && !declared.hasStaticShape())
        diag << " (sizes that were dynamic when it was compiled change its rank here, as a "
                "size of 1 does for a squeeze without axes: compile it for static shapes, "
                "or name the axes)";
      return failure();
    }
    if (joined != result.getType()) {
      result.setType(joined);
      changed = true;
    }
  }
  return changed;
}

LogicalResult mithril::inferModelShapes(
    ModelOp model, ArrayRef<std::pair<std::string, SmallVector<int64_t>>> given,
    bool dynamicData) {
  for (const auto &[name, shape] : given) {
    std::optional<unsigned> index = model.lookupInput(name);
    if (!index) {
      std::string known;
      for (unsigned i = 0, e = model.getNumInputs(); i < e; ++i)
        known += (i ? ", '" : "'") + model.getInputName(i).str() + "'";
      return model.emitOpError("has no input terminal '")
             << name << "' (its inputs are " << known << ")";
    }
    auto declared = cast<RankedTensorType>(model.getFunctionType().getInput(*index));
    RankedTensorType wanted = RankedTensorType::get(shape, declared.getElementType());
    RankedTensorType joined = meet(declared, wanted);
    if (!joined)
      return model.emitOpError("input terminal '")
             << name << "' is declared as " << formatShape(declared.getShape())
             << " but was given shape " << formatShape(shape);
    model.setInputType(*index, joined);
  }

  // With dynamicData, everything computed from a data input: a [?, 4] input
  // added to a [3, 4] parameter may have 1 or 3 rows.
  Block &body = model.getBodyBlock();
  DenseSet<Value> keepDynamic;
  if (dynamicData) {
    for (unsigned i = 0, e = model.getNumInputs(); i < e; ++i)
      if (model.getInputKind(i) == InputKind::Data)
        keepDynamic.insert(body.getArgument(i));
    // So are inputs of any kind given with a dynamic size ('?').
    for (const auto &[name, shape] : given)
      if (llvm::any_of(shape, ShapedType::isDynamic))
        keepDynamic.insert(body.getArgument(*model.lookupInput(name)));
    for (Operation &op : body.without_terminator())
      if (llvm::any_of(op.getOperands(), [&](Value v) { return keepDynamic.contains(v); }))
        keepDynamic.insert(op.getResults().begin(), op.getResults().end());
  }

  // Forward and backward rules until a fixed point. Each round only refines
  // dynamic dimensions, so the number of rounds is bounded by their count.
  auto propagate = [&]() -> LogicalResult {
    for (int round = 0; round < 64; ++round) {
      bool changed = false;
      for (Operation &op : body.without_terminator()) {
        FailureOr<bool> r = refineResults(&op);
        if (failed(r))
          return failure();
        changed |= *r;
      }
      for (Operation &op : llvm::reverse(body.without_terminator())) {
        FailureOr<bool> r = refineOperands(&op, keepDynamic);
        if (failed(r))
          return failure();
        changed |= *r;
      }
      if (!changed)
        break;
    }
    return success();
  };
  if (failed(propagate()))
    return failure();
  // Output terminals take the refined types of the values that feed them.
  OutputOp out = model.getOutputOp();
  for (auto [i, v] : llvm::enumerate(out.getValues())) {
    auto declared = cast<RankedTensorType>(model.getFunctionType().getResult(i));
    if (!meet(declared, cast<RankedTensorType>(v.getType())))
      return out.emitOpError("output terminal '")
             << model.getOutputName(i) << "' is declared as "
             << formatShape(declared.getShape()) << " but computes "
             << formatShape(cast<RankedTensorType>(v.getType()).getShape());
  }
  model.syncFunctionType();
  return success();
}

namespace {
struct InferShapesPass : public mithril::impl::MithrilInferShapesBase<InferShapesPass> {
  using MithrilInferShapesBase::MithrilInferShapesBase;

  void runOnOperation() override {
    SmallVector<std::pair<std::string, SmallVector<int64_t>>> given;
    for (const std::string &spec : shapes) {
      auto parsed = parseShapeSpec(spec);
      if (failed(parsed)) {
        getOperation().emitError("mithril-infer-shapes: malformed shape '")
            << spec << "' (expected name:DxD, e.g. input:4x8 or input:?x8)";
        return signalPassFailure();
      }
      given.push_back(*parsed);
    }
    bool found = false;
    for (ModelOp model : getOperation().getOps<ModelOp>()) {
      if (!entry.empty() && model.getSymName() != entry)
        continue;
      found = true;
      if (failed(inferModelShapes(model, given, dynamicData)))
        return signalPassFailure();
    }
    if (!entry.empty() && !found) {
      getOperation().emitError("mithril-infer-shapes: no model named '") << entry << "'";
      signalPassFailure();
    }
  }
};
} // namespace
