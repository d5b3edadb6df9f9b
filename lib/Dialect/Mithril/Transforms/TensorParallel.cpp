//===- TensorParallel.cpp - Megatron-style splits of Linear pairs ---------===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//

#include "mithril/Dialect/Mithril/Transforms/Passes.h"

#include "llvm/ADT/SmallPtrSet.h"

namespace mithril {
#define GEN_PASS_DEF_MITHRILTENSORPARALLEL
#include "mithril/Dialect/Mithril/Transforms/Passes.h.inc"
} // namespace mithril

using namespace mlir;
using namespace mithril;

namespace {

/// A parameter of rank `rank` used only by `user`.
static BlockArgument soleParameter(ModelOp model, Value value, int64_t rank, Operation *user) {
  auto arg = dyn_cast<BlockArgument>(value);
  if (!arg || arg.getOwner() != &model.getBodyBlock() ||
      model.getInputKind(arg.getArgNumber()) != InputKind::Param || !arg.hasOneUse() ||
      *arg.getUsers().begin() != user)
    return {};
  auto type = dyn_cast<RankedTensorType>(arg.getType());
  if (!type || type.getRank() != rank || !type.hasStaticShape())
    return {};
  return arg;
}

/// The weight W of `matmul(x, transpose(W))` (a Linear layer), if W is a
/// matrix parameter used only there.
static BlockArgument linearWeight(ModelOp model, MatmulOp matmul) {
  auto transpose = matmul.getRhs().getDefiningOp<TransposeOp>();
  if (!transpose || !transpose->hasOneUse())
    return {};
  if (auto perm = transpose.getPermutation(); perm && (perm->size() != 2 || (*perm)[0] != 1))
    return {};
  return soleParameter(model, transpose.getInput(), 2, transpose);
}

static Operation *soleUser(Value value) {
  return value.hasOneUse() ? *value.getUsers().begin() : nullptr;
}

struct LinearPair {
  MatmulOp first, second;
  BlockArgument w1, b1, w2;
};

/// The pair whose first layer is `first`, if the graph has one.
static std::optional<LinearPair> matchPair(ModelOp model, MatmulOp first) {
  LinearPair pair{first, {}, linearWeight(model, first), {}, {}};
  if (!pair.w1)
    return std::nullopt;
  Value current = first.getResult();
  Operation *user = soleUser(current);
  if (auto add = dyn_cast_or_null<AddOp>(user)) {
    Value other = add.getLhs() == current ? add.getRhs() : add.getLhs();
    pair.b1 = soleParameter(model, other, 1, add);
    if (!pair.b1)
      return std::nullopt;
    current = add.getResult();
    user = soleUser(current);
  }
  while (user && user->hasTrait<traits::Elementwise>() && user->getNumOperands() == 1 &&
         user->getNumResults() == 1) {
    current = user->getResult(0);
    user = soleUser(current);
  }
  auto second = dyn_cast_or_null<MatmulOp>(user);
  if (!second || second.getLhs() != current)
    return std::nullopt;
  pair.second = second;
  pair.w2 = linearWeight(model, second);
  if (!pair.w2)
    return std::nullopt;
  return pair;
}

struct TensorParallelPass : public mithril::impl::MithrilTensorParallelBase<TensorParallelPass> {
  using MithrilTensorParallelBase::MithrilTensorParallelBase;

  void runOnOperation() override {
    for (ModelOp model : getOperation().getOps<ModelOp>()) {
      if (!entry.empty() && model.getSymName() != entry)
        continue;
      if (failed(splitPairs(model)))
        return signalPassFailure();
    }
  }

  /// Gives input `arg` its slice's shape (axis `axis` divided by `size`).
  LogicalResult slice(ModelOp model, BlockArgument arg, int64_t axis) {
    auto type = cast<RankedTensorType>(arg.getType());
    int64_t n = type.getDimSize(axis);
    if (n % size != 0)
      return model.emitError() << "mithril-tensor-parallel: parameter '"
                               << model.getInputName(arg.getArgNumber()) << "' has " << n
                               << " rows of the split layer on axis " << axis
                               << ", not a multiple of the " << static_cast<unsigned>(size)
                               << " ranks";
    SmallVector<int64_t> shape(type.getShape());
    shape[axis] = n / size;
    model.setInputType(arg.getArgNumber(), type.clone(shape));
    model.setArgAttr(arg.getArgNumber(), kTensorSplitAttr,
                     IntegerAttr::get(IntegerType::get(model.getContext(), 64), axis));
    return success();
  }

  LogicalResult splitPairs(ModelOp model) {
    if (size < 2)
      return success();
    SmallVector<LinearPair> pairs;
    llvm::SmallPtrSet<Operation *, 8> taken;
    for (auto matmul : model.getBodyBlock().getOps<MatmulOp>()) {
      if (taken.contains(matmul))
        continue;
      if (std::optional<LinearPair> pair = matchPair(model, matmul)) {
        taken.insert(pair->second);
        pairs.push_back(*pair);
      }
    }
    if (pairs.empty())
      return model.emitError() << "mithril-tensor-parallel: @" << model.getSymName()
                               << " has no pair of Linear layers (joined by elementwise ops) "
                                  "to split across the tensor group";
    OpBuilder b(model.getContext());
    for (LinearPair &pair : pairs) {
      // W1 [hidden, in] and b1 [hidden] by rows, W2 [out, hidden] by columns.
      if (failed(slice(model, pair.w1, 0)) || (pair.b1 && failed(slice(model, pair.b1, 0))) ||
          failed(slice(model, pair.w2, 1)))
        return failure();
      b.setInsertionPoint(pair.first);
      auto copy = ReplicateOp::create(b, pair.first.getLoc(), pair.first.getLhs(),
                                      b.getStringAttr("tensor"));
      pair.first.getLhsMutable().assign(copy.getResult());
      b.setInsertionPointAfter(pair.second);
      auto sum = AllReduceOp::create(b, pair.second.getLoc(), pair.second.getResult(),
                                     b.getStringAttr("tensor"));
      pair.second.getResult().replaceAllUsesExcept(sum.getResult(), sum);
    }
    // The slices' shapes flow through the ops.
    for (Operation &op : model.getBodyBlock().without_terminator()) {
      SmallVector<Type> types;
      if (failed(inferResultTypes(&op, types)))
        return failure();
      for (auto [result, type] : llvm::zip(op.getResults(), types))
        result.setType(type);
    }
    model.syncFunctionType();
    return success();
  }
};
} // namespace
