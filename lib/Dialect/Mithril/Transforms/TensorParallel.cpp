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

/// Multi-head attention: `matmul(x, transpose(Wqkv))` (+ bias) sliced into
/// three equal parts along the last axis (q, k, v), each reshaped into heads
/// [..., H, D]; ops that keep the heads apart; the heads merged back into
/// [..., C] and projected by `matmul(., transpose(Wo))`.
struct AttentionBlock {
  MatmulOp qkv, out;
  BlockArgument wqkv, bqkv, wo;
  SmallVector<SliceOp, 3> slices;
  SmallVector<ReshapeOp> splits;
  ReshapeOp merge;
  int64_t width = 0, heads = 0;
};

static int64_t lastDim(Value v) {
  auto type = cast<RankedTensorType>(v.getType());
  return type.getRank() ? type.getShape().back() : -1;
}

/// Ops that compute each head on its own, given operands from outside the
/// block that carry no head axis (a scale, a [T, T] mask).
static bool keepsHeadsApart(Operation *op, const llvm::SmallPtrSetImpl<Operation *> &region) {
  auto fromRegion = [&](Value v) {
    Operation *def = v.getDefiningOp();
    return def && region.contains(def);
  };
  auto alongLastAxis = [](Operation *op, uint64_t axis) {
    int64_t rank = cast<RankedTensorType>(op->getResult(0).getType()).getRank();
    return normalizeAxis(axis, rank) == rank - 1;
  };
  if (isa<TransposeOp, CastOp>(op))
    return true;
  // Products within a head (q k^T, attention times v).
  if (auto matmul = dyn_cast<MatmulOp>(op))
    return fromRegion(matmul.getLhs()) && fromRegion(matmul.getRhs());
  if (auto softmax = dyn_cast<SoftmaxOp>(op))
    return alongLastAxis(op, softmax.getAxis());
  if (auto softmax = dyn_cast<LogSoftmaxOp>(op))
    return alongLastAxis(op, softmax.getAxis());
  if (op->hasTrait<traits::Elementwise>() || op->hasTrait<traits::BroadcastingElementwise>()) {
    // Operands from outside must not reach the head axis (rank 2 or less
    // against the block's [B, H, T, T] and [B, T, H, D] values: a scale, a
    // [T, T] mask).
    return llvm::all_of(op->getOperands(), [&](Value v) {
      return fromRegion(v) || cast<RankedTensorType>(v.getType()).getRank() <= 2;
    });
  }
  return false;
}

static std::optional<AttentionBlock> matchAttention(ModelOp model, MatmulOp qkv) {
  AttentionBlock block;
  block.qkv = qkv;
  block.wqkv = linearWeight(model, qkv);
  if (!block.wqkv)
    return std::nullopt;
  Value projected = qkv.getResult();
  if (Operation *user = soleUser(projected)) {
    auto add = dyn_cast<AddOp>(user);
    if (!add)
      return std::nullopt;
    Value other = add.getLhs() == projected ? add.getRhs() : add.getLhs();
    block.bqkv = soleParameter(model, other, 1, add);
    if (!block.bqkv)
      return std::nullopt;
    projected = add.getResult();
  }
  int64_t total = lastDim(projected);
  int64_t rank = cast<RankedTensorType>(projected.getType()).getRank();
  if (total <= 0 || total % 3 != 0 ||
      std::distance(projected.use_begin(), projected.use_end()) != 3)
    return std::nullopt;
  block.width = total / 3;
  // q, k and v: the thirds of the last axis.
  llvm::SmallPtrSet<Operation *, 32> region;
  for (Operation *user : projected.getUsers()) {
    auto slice = dyn_cast<SliceOp>(user);
    if (!slice || slice.getAxes().size() != 1 ||
        normalizeAxis(slice.getAxes()[0], rank) != rank - 1 || slice.getStep()[0] != 1 ||
        slice.getStart()[0] % block.width != 0 ||
        slice.getStop()[0] != slice.getStart()[0] + block.width)
      return std::nullopt;
    block.slices.push_back(slice);
    region.insert(slice);
  }
  // Walk the block: from the slices to the one reshape that merges the heads.
  SmallVector<Operation *> work(block.slices.begin(), block.slices.end());
  while (!work.empty()) {
    Operation *op = work.pop_back_val();
    for (Operation *user : op->getUsers()) {
      if (region.contains(user))
        continue;
      if (auto reshape = dyn_cast<ReshapeOp>(user)) {
        auto in = cast<RankedTensorType>(reshape.getInput().getType());
        auto out = cast<RankedTensorType>(reshape.getType());
        if (in.getShape().back() == block.width && out.getRank() == in.getRank() + 1) {
          int64_t heads = out.getShape()[out.getRank() - 2];
          if (block.heads && heads != block.heads)
            return std::nullopt;
          block.heads = heads;
          block.splits.push_back(reshape);
          region.insert(reshape);
          work.push_back(reshape);
          continue;
        }
        if (out.getShape().back() == block.width && in.getRank() == out.getRank() + 1) {
          if (block.merge && block.merge != reshape)
            return std::nullopt;
          block.merge = reshape;
          continue;
        }
        return std::nullopt;
      }
      region.insert(user);
      work.push_back(user);
    }
  }
  if (!block.merge || block.splits.size() != 3 || block.heads <= 0)
    return std::nullopt;
  // With the whole block known, every op in it must keep the heads apart.
  for (Operation *op : region)
    if (!isa<SliceOp>(op) && !llvm::is_contained(block.splits, op) && !keepsHeadsApart(op, region))
      return std::nullopt;
  // The merge's operand must come from the block only.
  Operation *mergedFrom = block.merge.getInput().getDefiningOp();
  if (!mergedFrom || !region.contains(mergedFrom))
    return std::nullopt;
  auto out = dyn_cast_or_null<MatmulOp>(soleUser(block.merge.getResult()));
  if (!out || out.getLhs() != block.merge.getResult())
    return std::nullopt;
  block.out = out;
  block.wo = linearWeight(model, out);
  if (!block.wo)
    return std::nullopt;
  return block;
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

  /// Gives input `arg` its slice's shape (axis `axis` divided by `size`);
  /// with `blocks`, the axis is that many equal blocks (q, k and v), each
  /// split, and the rank holds its part of each.
  LogicalResult slice(ModelOp model, BlockArgument arg, int64_t axis, int64_t blocks = 1) {
    auto type = cast<RankedTensorType>(arg.getType());
    int64_t n = type.getDimSize(axis);
    if (n % (size * blocks) != 0)
      return model.emitError() << "mithril-tensor-parallel: parameter '"
                               << model.getInputName(arg.getArgNumber()) << "' has " << n
                               << " rows of the split layer on axis " << axis
                               << ", not a multiple of the " << static_cast<unsigned>(size)
                               << " ranks";
    SmallVector<int64_t> shape(type.getShape());
    shape[axis] = n / size;
    model.setInputType(arg.getArgNumber(), type.clone(shape));
    auto i64 = IntegerType::get(model.getContext(), 64);
    model.setArgAttr(arg.getArgNumber(), kTensorSplitAttr, IntegerAttr::get(i64, axis));
    if (blocks > 1)
      model.setArgAttr(arg.getArgNumber(), kTensorBlocksAttr, IntegerAttr::get(i64, blocks));
    return success();
  }

  /// Each rank keeps its heads: the projections' parameters, the thirds of
  /// the qkv product and the head counts of the reshapes shrink by `size`.
  LogicalResult splitHeads(ModelOp model, AttentionBlock &block) {
    if (block.heads % size != 0)
      return model.emitError() << "mithril-tensor-parallel: attention with " << block.heads
                               << " heads (weight '"
                               << model.getInputName(block.wqkv.getArgNumber())
                               << "') does not split across " << static_cast<unsigned>(size)
                               << " ranks";
    if (failed(slice(model, block.wqkv, 0, 3)) ||
        (block.bqkv && failed(slice(model, block.bqkv, 0, 3))) || failed(slice(model, block.wo, 1)))
      return failure();
    int64_t local = block.width / size;
    for (SliceOp slice : block.slices) {
      int64_t third = slice.getStart()[0] / block.width;
      slice.setStart({third * local});
      slice.setStop({(third + 1) * local});
    }
    auto shrink = [&](ReshapeOp reshape, int64_t position, int64_t from) {
      SmallVector<int64_t> shape(reshape.getShape());
      if (position >= 0 && position < static_cast<int64_t>(shape.size()) && shape[position] == from)
        shape[position] = from / size;
      reshape.setShape(shape);
    };
    for (ReshapeOp split : block.splits)
      shrink(split, static_cast<int64_t>(split.getShape().size()) - 2, block.heads);
    shrink(block.merge, static_cast<int64_t>(block.merge.getShape().size()) - 1, block.width);
    insertCollectives(block.qkv, block.out);
    return success();
  }

  /// `first`'s input replicated (its gradient summed), `last`'s partial
  /// products summed over the tensor group.
  void insertCollectives(MatmulOp first, MatmulOp last) {
    OpBuilder b(first);
    auto copy = ReplicateOp::create(b, first.getLoc(), first.getLhs(), b.getStringAttr("tensor"));
    first.getLhsMutable().assign(copy.getResult());
    b.setInsertionPointAfter(last);
    auto sum = AllReduceOp::create(b, last.getLoc(), last.getResult(), b.getStringAttr("tensor"));
    last.getResult().replaceAllUsesExcept(sum.getResult(), sum);
  }

  LogicalResult splitPairs(ModelOp model) {
    if (size < 2)
      return success();
    SmallVector<LinearPair> pairs;
    SmallVector<AttentionBlock> attention;
    llvm::SmallPtrSet<Operation *, 8> taken;
    for (auto matmul : model.getBodyBlock().getOps<MatmulOp>()) {
      if (taken.contains(matmul))
        continue;
      if (std::optional<LinearPair> pair = matchPair(model, matmul)) {
        taken.insert(pair->second);
        pairs.push_back(*pair);
      } else if (std::optional<AttentionBlock> block = matchAttention(model, matmul)) {
        taken.insert(block->out);
        attention.push_back(*block);
      }
    }
    if (pairs.empty() && attention.empty())
      return model.emitError() << "mithril-tensor-parallel: @" << model.getSymName()
                               << " has no pair of Linear layers (joined by elementwise ops) "
                                  "or attention block to split across the tensor group";
    for (LinearPair &pair : pairs) {
      // W1 [hidden, in] and b1 [hidden] by rows, W2 [out, hidden] by columns.
      if (failed(slice(model, pair.w1, 0)) || (pair.b1 && failed(slice(model, pair.b1, 0))) ||
          failed(slice(model, pair.w2, 1)))
        return failure();
      insertCollectives(pair.first, pair.second);
    }
    for (AttentionBlock &block : attention)
      if (failed(splitHeads(model, block)))
        return failure();
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
