//===- InferShapes.cpp - propagate shapes through a model -----------------===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//

#include "mithril/Dialect/Mithril/Transforms/Passes.h"

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

/// Refines the type of `value` with one dimension; returns true on change.
/// Fails with a diagnostic on a conflict.
static FailureOr<bool> refineDim(Operation *user, Value value, int64_t dim, int64_t size) {
  auto type = cast<RankedTensorType>(value.getType());
  if (ShapedType::isDynamic(size) || dim < 0 || dim >= type.getRank())
    return false;
  if (!type.isDynamicDim(dim)) {
    if (type.getDimSize(dim) == size)
      return false;
    user->emitOpError("needs dimension ")
        << dim << " of " << describeValue(value) << " (" << formatShape(type.getShape())
        << ") to be " << size;
    return failure();
  }
  SmallVector<int64_t> shape(type.getShape());
  shape[dim] = size;
  value.setType(RankedTensorType::get(shape, type.getElementType()));
  return true;
}

/// Backward rules: dimensions of operands that an op's semantics fix from its
/// other operands or its result. Parameters such as Linear's weight get their
/// input dimension this way.
/// Backward rules. Values in `keepDynamic` (computed from data inputs whose
/// sizes are left dynamic on purpose) are not given a size by broadcasting.
static FailureOr<bool> refineOperands(Operation *op, const DenseSet<Value> &keepDynamic) {
  bool changed = false;
  auto apply = [&](Value v, int64_t dim, int64_t size) -> LogicalResult {
    FailureOr<bool> r = refineDim(op, v, dim, size);
    if (failed(r))
      return failure();
    changed |= *r;
    return success();
  };
  auto dimOf = [](Value v, int64_t d) {
    auto t = cast<RankedTensorType>(v.getType());
    return d >= 0 && d < t.getRank() ? t.getDimSize(d) : kDyn;
  };
  if (auto mm = dyn_cast<MatmulOp>(op)) {
    auto lt = mm.getLhs().getType(), rt = mm.getRhs().getType();
    int64_t lk = lt.getRank() - 1, rk = rt.getRank() == 1 ? 0 : rt.getRank() - 2;
    if (failed(apply(mm.getLhs(), lk, dimOf(mm.getRhs(), rk))) ||
        failed(apply(mm.getRhs(), rk, dimOf(mm.getLhs(), lk))))
      return failure();
    // The result's rows come from the lhs and its columns from the rhs.
    auto out = mm.getType();
    int64_t outRank = out.getRank();
    if (lt.getRank() >= 2 && rt.getRank() >= 2 &&
        (failed(apply(mm.getLhs(), lt.getRank() - 2, out.getDimSize(outRank - 2))) ||
         failed(apply(mm.getRhs(), rt.getRank() - 1, out.getDimSize(outRank - 1)))))
      return failure();
  } else if (auto tr = dyn_cast<TransposeOp>(op)) {
    for (auto [i, p] : llvm::enumerate(tr.getPermutationOrDefault()))
      if (failed(apply(tr.getInput(), p, dimOf(tr.getResult(), i))))
        return failure();
  } else if (isa<Conv1DOp, Conv2DOp>(op)) {
    Value input = op->getOperand(0), weight = op->getOperand(1);
    int64_t groups = cast<IntegerAttr>(op->getAttr("groups")).getInt();
    int64_t cin = dimOf(input, 1);
    if (!ShapedType::isDynamic(cin) && cin % groups == 0)
      if (failed(apply(weight, 1, cin / groups)))
        return failure();
    if (op->getNumOperands() == 3 && failed(apply(op->getOperand(2), 0, dimOf(weight, 0))))
      return failure();
  } else if (auto norm = dyn_cast<LayerNormOp>(op)) {
    // Weight and bias have the normalized axes' shape, both ways.
    auto in = norm.getInput().getType();
    int64_t n = norm.getNumAxes(), first = in.getRank() - n;
    for (Value param : norm.getAffine())
      for (int64_t i = 0; i < n && first >= 0; ++i)
        if (failed(apply(param, i, dimOf(norm.getInput(), first + i))) ||
            failed(apply(norm.getInput(), first + i, dimOf(param, i))))
          return failure();
    for (int64_t d = 0; d < in.getRank(); ++d)
      if (failed(apply(norm.getInput(), d, dimOf(norm.getResult(), d))))
        return failure();
  } else if (op->hasTrait<traits::BroadcastingElementwise>()) {
    // Broadcasting: an operand's unknown dimension must equal the result's
    // when the other operand cannot supply it (its dimension is 1 or
    // missing). When both could, the unknown dimension is taken to be the
    // full size: unknown sizes come from parameters whose shapes are not
    // given, and those are not stored broadcast. Were it really 1, the
    // forward rules would report the conflict instead of computing wrongly.
    Value out = op->getResult(0);
    auto rt = cast<RankedTensorType>(out.getType());
    for (unsigned i = 0; i < 2; ++i) {
      Value self = op->getOperand(i);
      if (keepDynamic.contains(self))
        continue;
      auto st = cast<RankedTensorType>(self.getType());
      for (int64_t d = 0; d < st.getRank(); ++d) {
        if (!st.isDynamicDim(d))
          continue;
        int64_t rd = d + rt.getRank() - st.getRank();
        if (failed(apply(self, d, rt.getDimSize(rd))))
          return failure();
      }
    }
  } else if (op->hasTrait<OpTrait::SameOperandsAndResultShape>() ||
             (op->hasTrait<traits::Elementwise>() && op->getNumOperands() == 1) ||
             isa<SoftmaxOp, LogSoftmaxOp>(op)) {
    Value in = op->getOperand(0), out = op->getResult(0);
    for (int64_t d = 0; d < cast<RankedTensorType>(in.getType()).getRank(); ++d)
      if (failed(apply(in, d, dimOf(out, d))))
        return failure();
  }
  return changed;
}

/// Forward rule: re-infer an op's result types from its operands.
static FailureOr<bool> refineResults(Operation *op) {
  auto infer = dyn_cast<InferTypeOpInterface>(op);
  if (!infer)
    return false;
  SmallVector<Type> inferred;
  if (failed(infer.inferReturnTypes(op->getContext(), op->getLoc(), op->getOperands(),
                                    op->getRawDictionaryAttrs(), op->getPropertiesStorage(),
                                    op->getRegions(), inferred)))
    return failure();
  bool changed = false;
  for (auto [result, type] : llvm::zip(op->getResults(), inferred)) {
    if (result.getType() == type)
      continue;
    RankedTensorType joined = meet(cast<RankedTensorType>(result.getType()),
                                   dyn_cast<RankedTensorType>(type));
    if (!joined) {
      op->emitOpError("result is declared as ")
          << result.getType() << " but its operands give " << type;
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
