//===- RowReductions.cpp - row reductions fused into their readers' rows --===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//

#include "Schedule.h"

#include "mithril/Conversion/MithrilToLinalg/MithrilToLinalg.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <functional>

using namespace mlir;
using namespace mithril;
using namespace mithril::cpu;
using namespace mithril::cpu::detail;

namespace {
/// Rows of a block: those of the element-wise register tiles.
constexpr int64_t kMaxBlockRows = 8;
/// The row blocks a fused chain keeps live at once (its input, the values
/// computed from it, its result), of 4-byte elements.
constexpr int64_t kLiveBlocks = 4, kElementBytes = 4;

/// One result, all operands and the result indexed by projections of the
/// loops (no constants but zeros), static sizes, on tensors: an op whose
/// result a row block of it can be computed for.
bool isRowwise(linalg::LinalgOp op) {
  if (!op.hasPureTensorSemantics() || op->getNumResults() != 1 || touchesBooleans(op) ||
      ShapedType::isDynamicShape(op.getStaticLoopRanges()))
    return false;
  // (A zero indexes a unit dimension: a row's value read as [R, 1].)
  return llvm::all_of(op.getIndexingMapsArray(), [](AffineMap map) {
    return map.isProjectedPermutation(/*allowZeroInResults=*/true);
  });
}

/// A reduction of the innermost loop only (a row's maximum or sum), its
/// result indexed by the outer loops in order.
bool isRowReduction(linalg::LinalgOp op) {
  unsigned loops = op.getNumLoops();
  if (loops < 2 || !isa<linalg::GenericOp>(op.getOperation()) || !isRowwise(op) ||
      op.getNumReductionLoops() != 1 ||
      op.getIteratorTypesArray().back() != utils::IteratorType::reduction)
    return false;
  AffineMap result = op.getIndexingMapMatchingResult(op->getResult(0));
  return result.getNumResults() == loops - 1 &&
         llvm::all_of(llvm::seq<unsigned>(0, loops - 1), [&](unsigned i) {
           return result.getResult(i) == getAffineDimExpr(i, op.getContext());
         });
}

/// An all-parallel generic over `loops` loops whose result is indexed by
/// its loops in order.
bool isElementwise(linalg::LinalgOp op, unsigned loops) {
  return isa<linalg::GenericOp>(op.getOperation()) && isRowwise(op) && op.getNumLoops() == loops &&
         op.getNumParallelLoops() == loops &&
         op.getIndexingMapMatchingResult(op->getResult(0)).isIdentity();
}

/// `v`, or the value a collapse of an expansion of it gives back unchanged
/// (a [R] row value viewed as [R, 1] and back, where an op over [R, 1] was
/// flattened).
Value throughRoundTrips(Value v) {
  if (auto collapse = v.getDefiningOp<tensor::CollapseShapeOp>())
    if (auto expand = collapse.getSrc().getDefiningOp<tensor::ExpandShapeOp>())
      if (expand.getSrc().getType() == v.getType())
        return expand.getSrc();
  return v;
}

/// The ops that read `op`'s results, through the expand_shapes of them.
SmallVector<Operation *> readers(Operation *op) {
  SmallVector<Operation *> found;
  for (Operation *user : op->getUsers()) {
    if (auto expand = dyn_cast<tensor::ExpandShapeOp>(user)) {
      llvm::append_range(found, readers(expand));
      continue;
    }
    if (auto collapse = dyn_cast<tensor::CollapseShapeOp>(user);
        collapse && throughRoundTrips(collapse.getResult()) != collapse.getResult()) {
      llvm::append_range(found, readers(collapse));
      continue;
    }
    found.push_back(user);
  }
  return found;
}

/// The input of `op` read from a tensor.expand_shape that only adds unit
/// dimensions, read from its source instead: the unit dimensions' indices
/// dropped from the operand's map. A row reduction's result read as [R, 1]
/// becomes [R], and the reduction a producer its reader's tiles can fuse.
void foldUnitExpansions(RewriterBase &rewriter, linalg::GenericOp op) {
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  bool changed = false;
  SmallVector<Value> inputs = op.getDpsInputs();
  for (auto [i, input] : llvm::enumerate(inputs)) {
    if (Value same = throughRoundTrips(input); same != input) {
      inputs[i] = same;
      changed = true;
      continue;
    }
    auto expand = input.getDefiningOp<tensor::ExpandShapeOp>();
    if (!expand)
      continue;
    ArrayRef<int64_t> shape = expand.getResultType().getShape();
    SmallVector<AffineExpr> kept;
    bool onlyUnits = true;
    for (ReassociationIndices group : expand.getReassociationIndices()) {
      SmallVector<int64_t> wide;
      for (int64_t dim : group)
        if (shape[dim] != 1)
          wide.push_back(dim);
      if (wide.size() > 1) {
        onlyUnits = false;
        break;
      }
      kept.push_back(maps[i].getResult(wide.empty() ? group.front() : wide.front()));
    }
    if (!onlyUnits)
      continue;
    maps[i] = AffineMap::get(maps[i].getNumDims(), 0, kept, op.getContext());
    inputs[i] = expand.getSrc();
    changed = true;
  }
  if (!changed)
    return;
  rewriter.modifyOpInPlace(op, [&] {
    op.getInputsMutable().assign(inputs);
    op.setIndexingMapsAttr(rewriter.getAffineMapArrayAttr(maps));
  });
}
} // namespace

/// The producers of element-wise `root` that compute with it, row block by
/// row block: row reductions over its rows, element-wise ops of its loops or
/// of its rows alone (a row's scale), and the fills of their inits; empty
/// unless one is a reduction. A producer read outside the chain too is
/// yielded by the loop, which takes the root's place: each such reader comes
/// after the root (those before it keep their producers out of the chain).
static llvm::SetVector<Operation *> rowChain(linalg::GenericOp root) {
  auto op = cast<linalg::LinalgOp>(root.getOperation());
  unsigned loops = op.getNumLoops();
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  ArrayRef<int64_t> rows = ArrayRef(ranges).drop_back();
  llvm::SetVector<Operation *> fusible;
  SmallVector<Operation *> worklist = {root};
  while (!worklist.empty()) {
    Operation *current = worklist.pop_back_val();
    for (Value operand : current->getOperands()) {
      operand = throughRoundTrips(operand);
      if (auto expand = operand.getDefiningOp<tensor::ExpandShapeOp>())
        operand = expand.getSrc();
      auto producer = operand.getDefiningOp<linalg::LinalgOp>();
      if (!producer || fusible.contains(producer) || producer == op)
        continue;
      if (isa<linalg::FillOp>(producer.getOperation())) {
        if (producer.hasPureTensorSemantics())
          fusible.insert(producer);
        continue;
      }
      SmallVector<int64_t> its = producer.getStaticLoopRanges();
      bool reduction = isRowReduction(producer) && ArrayRef(its).drop_back() == rows;
      bool sameLoops = isElementwise(producer, loops) && its == ranges;
      // (Or over [rows, 1]: an int8 weight's row scales.)
      bool perRow = isElementwise(producer, its.size()) &&
                    (ArrayRef(its) == rows ||
                     (its.size() == loops && its.back() == 1 && ArrayRef(its).drop_back() == rows));
      if (!reduction && !sameLoops && !perRow)
        continue;
      fusible.insert(producer);
      worklist.push_back(producer);
    }
  }
  auto inChain = [&](Operation *user) { return user == root || fusible.contains(user); };
  for (bool dropped = true; dropped;) {
    dropped = false;
    for (Operation *producer : SmallVector<Operation *>(fusible.getArrayRef())) {
      auto before = [&](Operation *user) {
        return user->getBlock() != root->getBlock() || user->isBeforeInBlock(root);
      };
      bool readBefore = llvm::any_of(producer->getUsers(), [&](Operation *user) {
        // (A view of it goes with the chain, or after it: moveViewsAfter.)
        if (isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp>(user))
          return llvm::any_of(
              readers(user), [&](Operation *reader) { return !inChain(reader) && before(reader); });
        return !inChain(user) && before(user);
      });
      if (readBefore) {
        fusible.remove(producer);
        dropped = true;
      }
    }
  }
  bool readsReduction = llvm::any_of(fusible, [](Operation *producer) {
    auto linalgOp = dyn_cast<linalg::LinalgOp>(producer);
    return linalgOp && linalgOp.getNumReductionLoops() > 0;
  });
  return readsReduction ? fusible : llvm::SetVector<Operation *>();
}

linalg::GenericOp Scheduler::fuseIntoRowTiles(IRRewriter &rewriter, linalg::GenericOp root,
                                              ArrayRef<int64_t> sizes, bool acrossThreads,
                                              llvm::DenseSet<Operation *> &erased) {
  llvm::SetVector<Operation *> fusible = rowChain(root);
  if (fusible.empty())
    return nullptr;
  // Reads of [R, 1] views of the reductions' [R] results read [R]: the
  // tiles fuse through no reshape.
  foldUnitExpansions(rewriter, root);
  for (Operation *producer : fusible)
    if (auto generic = dyn_cast<linalg::GenericOp>(producer))
      foldUnitExpansions(rewriter, generic);
  // Whose results are read outside the loop: they are yielded.
  llvm::DenseSet<Operation *> readOutside;
  for (Operation *producer : fusible)
    for (Operation *user : readers(producer))
      if (user != root && !fusible.contains(user))
        readOutside.insert(producer);
  scf::SCFTileAndFuseOptions options;
  options.tilingOptions.setTileSizes(getAsIndexOpFoldResult(ctx, sizes));
  if (acrossThreads)
    options.tilingOptions.setLoopType(scf::SCFTilingOptions::LoopType::ForallOp);
  options.setFusionControlFn(
      [&](tensor::ExtractSliceOp, OpResult producer,
          bool) -> std::optional<scf::SCFTileAndFuseOptions::ControlFnResult> {
        if (!fusible.contains(producer.getOwner()))
          return std::nullopt;
        scf::SCFTileAndFuseOptions::ControlFnResult result;
        result.yieldProducerReplacement = readOutside.contains(producer.getOwner());
        return result;
      });
  // The views of yielded results that come before the root (reshapes that
  // only later ops read) move after the loop, which takes the root's place.
  SmallVector<Operation *> views;
  std::function<void(Operation *)> collectViews = [&](Operation *op) {
    for (Operation *user : op->getUsers())
      if (isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp>(user) &&
          user->getBlock() == root->getBlock() && user->isBeforeInBlock(root) &&
          !llvm::is_contained(views, user)) {
        views.push_back(user);
        collectViews(user);
      }
  };
  for (Operation *producer : readOutside)
    collectViews(producer);
  llvm::sort(views, [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
  rewriter.setInsertionPoint(root);
  FailureOr<scf::SCFTileAndFuseResult> tiled = scf::tileConsumerAndFuseProducersUsingSCF(
      rewriter, cast<TilingInterface>(root.getOperation()), options);
  if (failed(tiled))
    return nullptr;
  Operation *after = tiled->loops.front().getOperation();
  for (Operation *view : views) {
    rewriter.moveOpAfter(view, after);
    after = view;
  }
  for (auto [original, replacement] : tiled->replacements)
    rewriter.replaceAllUsesWith(original, replacement);
  // The tiles get configs for their own sizes, on their loop's thread.
  for (Operation *tile : tiled->tiledAndFusedOps)
    if (auto linalgTile = dyn_cast<linalg::LinalgOp>(tile)) {
      LoweringConfigAttr config = LoweringConfigAttr::get(ctx, kernelOf(linalgTile));
      setLoweringConfig(linalgTile,
                        config.withRegisterTile(registerTile(linalgTile, strategy.registers)));
    }
  // The originals, consumers first.
  erased.insert(root);
  rewriter.eraseOp(root);
  for (bool progress = true; progress;) {
    progress = false;
    for (Operation *producer : fusible)
      if (!erased.contains(producer) && producer->use_empty()) {
        erased.insert(producer);
        rewriter.eraseOp(producer);
        progress = true;
      }
  }
  return dyn_cast<linalg::GenericOp>(tiled->tiledAndFusedOps.front());
}

void Scheduler::fuseRowReductions(IRRewriter &rewriter, ArrayRef<linalg::LinalgOp> ops) {
  llvm::DenseSet<Operation *> erased;
  for (linalg::LinalgOp op : llvm::reverse(ops)) {
    if (erased.contains(op.getOperation()))
      continue;
    auto root = dyn_cast<linalg::GenericOp>(op.getOperation());
    unsigned loops = op.getNumLoops();
    if (!root || loops < 2 || !isElementwise(op, loops))
      continue;
    // Rows that fit the L1 whole stay there between the passes: the blocks
    // only add loops (a 16 x 10 softmax 0.9 -> 1.1 us).
    int64_t elements = 1;
    for (int64_t range : op.getStaticLoopRanges())
      elements *= range;
    if (elements * kElementBytes <= strategy.l1Bytes / 2)
      continue;
    // First the root's own split across threads, where it splits rows: the
    // chain in each chunk. (Either tiling leaves a root without a chain of
    // row reductions as it was.)
    if (LoweringConfigAttr config = getLoweringConfig(op);
        config && config.getThreads().size() == 2 && config.getThreads()[0] + 1 < loops) {
      SmallVector<int64_t> chunks(loops, 0);
      chunks[config.getThreads()[0]] = config.getThreads()[1];
      linalg::GenericOp chunk =
          fuseIntoRowTiles(rewriter, root, chunks, /*acrossThreads=*/true, erased);
      if (!chunk)
        continue;
      root = chunk;
    }
    // Blocks of rows of the innermost row loop: the register tiles' 8 rows
    // (or a divisor of the rows), fewer where the blocks of a few operands
    // would outgrow half the L2.
    SmallVector<int64_t> ranges = cast<linalg::LinalgOp>(root.getOperation()).getStaticLoopRanges();
    int64_t rowBytes = ranges.back() * kElementBytes;
    int64_t block =
        std::clamp<int64_t>(strategy.l2Bytes / 2 / (kLiveBlocks * rowBytes), 1, kMaxBlockRows);
    while (ranges[loops - 2] % block != 0)
      --block;
    SmallVector<int64_t> sizes(loops, 1);
    sizes.back() = 0;
    sizes[loops - 2] = block;
    fuseIntoRowTiles(rewriter, root, sizes, /*acrossThreads=*/false, erased);
  }
}
