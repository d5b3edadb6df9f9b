//===- RowReductions.cpp - row reductions fused into their readers' rows --===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//

#include "Schedule.h"

#include "mithril/Conversion/MithrilToLinalg/MithrilToLinalg.h"

#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
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
/// The fewest rows of an attention block (fuseAttentionBlocks).
constexpr int64_t kMinBlockRows = 4;
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

/// The reassociation of a batched product's operands collapsed from 4-D
/// ([batch, heads] merged): [[0, 1], [2], [3]].
bool mergesLeadingPair(ArrayRef<ReassociationIndices> groups) {
  return groups.size() == 3 && groups[0] == ReassociationIndices{0, 1} &&
         groups[1] == ReassociationIndices{2} && groups[2] == ReassociationIndices{3};
}

/// `op` reading `inputs` through `maps` (its inits' maps last, unchanged).
void setInputsAndMaps(RewriterBase &rewriter, linalg::GenericOp op, ValueRange inputs,
                      ArrayRef<AffineMap> maps) {
  rewriter.modifyOpInPlace(op, [&] {
    op.getInputsMutable().assign(inputs);
    op.setIndexingMapsAttr(rewriter.getAffineMapArrayAttr(maps));
  });
}

/// Tiling by `sizes` (an scf.forall across threads, or an scf.for) that
/// fuses the producers in `fusible`, yielding the results of those in
/// `yielded` (read after the loop too). The options refer to both sets.
scf::SCFTileAndFuseOptions
tileAndFuseOptions(MLIRContext *ctx, ArrayRef<int64_t> sizes, bool acrossThreads,
                   const llvm::SetVector<Operation *> &fusible,
                   const llvm::DenseSet<Operation *> *yielded = nullptr) {
  scf::SCFTileAndFuseOptions options;
  options.tilingOptions.setTileSizes(getAsIndexOpFoldResult(ctx, sizes));
  if (acrossThreads)
    options.tilingOptions.setLoopType(scf::SCFTilingOptions::LoopType::ForallOp);
  options.setFusionControlFn(
      [&fusible, yielded](tensor::ExtractSliceOp, OpResult producer,
                          bool) -> std::optional<scf::SCFTileAndFuseOptions::ControlFnResult> {
        if (!fusible.contains(producer.getOwner()))
          return std::nullopt;
        scf::SCFTileAndFuseOptions::ControlFnResult result;
        result.yieldProducerReplacement = yielded && yielded->contains(producer.getOwner());
        return result;
      });
  return options;
}

/// The input of `op` read from a tensor.expand_shape that only adds unit
/// dimensions, read from its source instead: the unit dimensions' indices
/// dropped from the operand's map. A row reduction's result read as [R, 1]
/// becomes [R], and the reduction a producer its reader's tiles can fuse.
/// With `keepHeads`, a [batch * heads] split into [1, heads] stays
/// (fuseAttentionBlocks merges the two again).
void foldUnitExpansions(RewriterBase &rewriter, linalg::GenericOp op, bool keepHeads = false) {
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
    if (!expand || (keepHeads && mergesLeadingPair(expand.getReassociationIndices())))
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
  if (changed)
    setInputsAndMaps(rewriter, op, inputs, maps);
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
  scf::SCFTileAndFuseOptions options =
      tileAndFuseOptions(ctx, sizes, acrossThreads, fusible, &readOutside);
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
  configureTiles(tiled->tiledAndFusedOps.getArrayRef());
  // The originals, consumers first.
  erased.insert(root);
  rewriter.eraseOp(root);
  eraseUnread(rewriter, fusible.getArrayRef(), erased);
  return dyn_cast<linalg::GenericOp>(tiled->tiledAndFusedOps.front());
}

namespace {
/// An unpacked batch_matmul on tensors of static shape.
bool isPlainBatchProduct(Operation *op) {
  auto product = dyn_cast_if_present<linalg::BatchMatmulOp>(op);
  return product && product.hasPureTensorSemantics() && !product.hasUserDefinedMaps() &&
         kernelOf(cast<linalg::LinalgOp>(op)) == CpuKernel::Matmul &&
         !ShapedType::isDynamicShape(cast<linalg::LinalgOp>(op).getStaticLoopRanges());
}

/// Inputs of `op` read with zeros for unit dimensions (a mask [1, 1, T, T]
/// broadcast over [batch, heads, T, T], a scale in a tensor<1xf32>) read
/// without them: the unit dimensions collapsed away (all of them: a rank-0
/// tensor) and their zeros dropped from the map, which collapsing loops
/// then takes.
void dropUnitInputDims(RewriterBase &rewriter, linalg::GenericOp op) {
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  SmallVector<Value> inputs = op.getDpsInputs();
  bool changed = false;
  for (auto [i, input] : llvm::enumerate(inputs)) {
    auto type = dyn_cast<RankedTensorType>(input.getType());
    if (!type || type.getRank() == 0)
      continue;
    auto dropped = [&](int64_t d) {
      auto constant = dyn_cast<AffineConstantExpr>(maps[i].getResult(d));
      return constant && constant.getValue() == 0 && type.getDimSize(d) == 1;
    };
    if (llvm::none_of(llvm::seq<int64_t>(0, type.getRank()), dropped))
      continue;
    // Each dropped dimension joins the group of the next kept one (the
    // last kept one's, for those after it).
    SmallVector<ReassociationIndices> groups;
    SmallVector<int64_t> shape;
    SmallVector<AffineExpr> results;
    ReassociationIndices pending;
    for (int64_t d = 0; d < type.getRank(); ++d) {
      pending.push_back(d);
      if (dropped(d))
        continue;
      groups.push_back(pending);
      pending.clear();
      shape.push_back(type.getDimSize(d));
      results.push_back(maps[i].getResult(d));
    }
    if (!groups.empty())
      llvm::append_range(groups.back(), pending);
    rewriter.setInsertionPoint(op);
    inputs[i] = tensor::CollapseShapeOp::create(
        rewriter, op.getLoc(), RankedTensorType::get(shape, type.getElementType()), input, groups);
    maps[i] = AffineMap::get(maps[i].getNumDims(), 0, results, op.getContext());
    changed = true;
  }
  if (changed)
    setInputsAndMaps(rewriter, op, inputs, maps);
}

/// The chain's ops and fills over [batch, heads, ...] with the two leading
/// dimensions merged; failure where one does not collapse. The results keep
/// their types through expansions, which the next op's collapsed operands
/// then read through (throughRoundTrips).
FailureOr<SmallVector<Operation *>> collapseLeadingPair(RewriterBase &rewriter,
                                                        ArrayRef<Operation *> ops) {
  for (Operation *op : ops) {
    auto linalgOp = dyn_cast<linalg::LinalgOp>(op);
    if (!linalgOp || linalgOp.getNumLoops() < 3)
      return failure();
    // (Upstream's collapse takes maps of loops only: a constant index, a
    // dimension not dropped by dropUnitInputDims, would crash it.)
    if (isa<linalg::GenericOp>(op) &&
        (!linalg::areDimSequencesPreserved(linalgOp.getIndexingMapsArray(), {{0, 1}}) ||
         llvm::any_of(linalgOp.getIndexingMapsArray(), [](AffineMap map) {
           return !llvm::all_of(map.getResults(), llvm::IsaPred<AffineDimExpr>);
         })))
      return failure();
    if (!isa<linalg::GenericOp, linalg::FillOp>(op))
      return failure();
  }
  SmallVector<Operation *> collapsed;
  for (Operation *op : ops) {
    rewriter.setInsertionPoint(op);
    if (auto fill = dyn_cast<linalg::FillOp>(op)) {
      auto type = cast<RankedTensorType>(fill.getResult(0).getType());
      SmallVector<ReassociationIndices> groups = {{0, 1}};
      SmallVector<int64_t> shape = {type.getDimSize(0) * type.getDimSize(1)};
      for (int64_t d = 2; d < type.getRank(); ++d) {
        groups.push_back({d});
        shape.push_back(type.getDimSize(d));
      }
      Value empty = tensor::EmptyOp::create(rewriter, fill.getLoc(), shape, type.getElementType());
      auto flat = linalg::FillOp::create(rewriter, fill.getLoc(), fill.getInputs(), empty);
      Value back =
          tensor::ExpandShapeOp::create(rewriter, fill.getLoc(), type, flat.getResult(0), groups);
      rewriter.replaceOp(fill, back);
      collapsed.push_back(flat);
      continue;
    }
    FailureOr<linalg::CollapseResult> flat =
        linalg::collapseOpIterationDims(cast<linalg::LinalgOp>(op), {{0, 1}}, rewriter);
    if (failed(flat))
      return failure();
    rewriter.replaceOp(op, flat->results);
    collapsed.push_back(flat->collapsedOp);
  }
  for (Operation *op : collapsed)
    for (OpOperand &operand : op->getOpOperands())
      if (Value source = throughRoundTrips(operand.get()); source != operand.get())
        rewriter.modifyOpInPlace(op, [&] { operand.set(source); });
  return collapsed;
}

/// Q * K^T: the one batched product `chain` reads (with `heads`, through an
/// expansion back to [batch, heads, ...]), which nothing else reads; null
/// where there is none, or more than one.
linalg::BatchMatmulOp scoresProduct(const llvm::SetVector<Operation *> &chain, bool heads) {
  linalg::BatchMatmulOp found;
  for (Operation *member : chain)
    for (Value operand : member->getOperands()) {
      auto expand = operand.getDefiningOp<tensor::ExpandShapeOp>();
      Value read = heads && expand ? expand.getSrc() : operand;
      if (!isPlainBatchProduct(read.getDefiningOp()))
        continue;
      auto product = read.getDefiningOp<linalg::BatchMatmulOp>();
      if ((heads && (!expand || !mergesLeadingPair(expand.getReassociationIndices()) ||
                     !expand->hasOneUse())) ||
          !product->hasOneUse() || (found && found != product))
        return nullptr;
      found = product;
    }
  return found;
}

/// Tiles `product` by `sizes` (an scf.forall across threads, or an
/// scf.for), the ops of `fusible` that it reads fused into each tile, and
/// erases the originals (into `erased`); `fusible` then holds the fused
/// tiles. The tiled product, or null where it does not tile.
linalg::LinalgOp tileFusingProducers(RewriterBase &rewriter, linalg::LinalgOp product,
                                     ArrayRef<int64_t> sizes, bool acrossThreads,
                                     llvm::SetVector<Operation *> &fusible,
                                     llvm::DenseSet<Operation *> &erased) {
  scf::SCFTileAndFuseOptions options =
      tileAndFuseOptions(rewriter.getContext(), sizes, acrossThreads, fusible);
  rewriter.setInsertionPoint(product);
  FailureOr<scf::SCFTileAndFuseResult> tiled = scf::tileConsumerAndFuseProducersUsingSCF(
      rewriter, cast<TilingInterface>(product.getOperation()), options);
  if (failed(tiled))
    return nullptr;
  for (auto [original, replacement] : tiled->replacements)
    rewriter.replaceAllUsesWith(original, replacement);
  erased.insert(product);
  rewriter.eraseOp(product);
  eraseUnread(rewriter, fusible.getArrayRef(), erased);
  // (The tiled product comes first.)
  fusible.clear();
  fusible.insert(tiled->tiledAndFusedOps.begin() + 1, tiled->tiledAndFusedOps.end());
  return cast<linalg::LinalgOp>(tiled->tiledAndFusedOps.front());
}
} // namespace

void mithril::cpu::detail::eraseUnread(RewriterBase &rewriter, ArrayRef<Operation *> originals,
                                       llvm::DenseSet<Operation *> &erased) {
  for (bool progress = true; progress;) {
    progress = false;
    for (Operation *original : originals)
      if (!erased.contains(original) && original->use_empty()) {
        erased.insert(original);
        rewriter.eraseOp(original);
        progress = true;
      }
  }
}

void Scheduler::configureTiles(ArrayRef<Operation *> tiles) {
  for (Operation *tile : tiles)
    if (auto linalgTile = dyn_cast<linalg::LinalgOp>(tile)) {
      LoweringConfigAttr config = LoweringConfigAttr::get(ctx, kernelOf(linalgTile));
      setLoweringConfig(linalgTile,
                        config.withRegisterTile(registerTile(linalgTile, strategy.registers)));
    }
}

void Scheduler::fuseAttentionBlocks(IRRewriter &rewriter, ArrayRef<linalg::LinalgOp> ops) {
  llvm::DenseSet<Operation *> erased;
  for (linalg::LinalgOp op : ops) {
    if (erased.contains(op.getOperation()) || !isPlainBatchProduct(op))
      continue;
    auto pv = cast<linalg::BatchMatmulOp>(op.getOperation());
    // Blocks of whole register tiles of rows (or of fewer rows than one
    // tile), one head at a time; rows that only blocks of fewer than
    // kMinBlockRows divide stay unfused (17 rows in blocks of one row were
    // slower). AVX2's 6-row tiles take blocks of 4 rows, not 8 as a tile
    // and a rest of 2 (one Zen 4 core in AVX2 code, 8 x 8 heads of 128 x
    // 32: 2.12-2.15 -> 2.01-2.07 ms).
    SmallVector<int64_t> ranges = op.getStaticLoopRanges();
    int64_t tileRows = std::max<int64_t>(registerTile(op, strategy.registers)[1], 1);
    int64_t block = std::min<int64_t>(kMaxBlockRows, ranges[1]);
    while (ranges[1] % block != 0 || (block > tileRows && block % tileRows != 0))
      --block;
    if (block < std::min<int64_t>(kMinBlockRows, ranges[1]))
      continue;
    // Across threads by heads only (each thread's heads whole): a product
    // the strategy splits along its rows (fewer heads than threads) stays.
    LoweringConfigAttr config = getLoweringConfig(op);
    bool split = config && config.getThreads().size() == 2;
    if (split && config.getThreads()[0] != 0)
      continue;
    // P * V, P the element-wise root of a row chain that only this product
    // reads: [batch * heads, T, T] viewed from the chain's [batch, heads, T,
    // T], or the chain's own [batch, T, T].
    Value p = pv.getDpsInputOperand(0)->get();
    auto collapse = p.getDefiningOp<tensor::CollapseShapeOp>();
    bool heads =
        collapse && collapse->hasOneUse() && mergesLeadingPair(collapse.getReassociationIndices());
    auto root = (heads ? collapse.getSrc() : p).getDefiningOp<linalg::GenericOp>();
    if (!root || !root->hasOneUse() || !isElementwise(root, heads ? 4 : 3) ||
        root->getBlock() != pv->getBlock())
      continue;
    llvm::SetVector<Operation *> chain = rowChain(root);
    if (chain.empty() || llvm::any_of(chain, [&](Operation *producer) {
          return producer->getBlock() != root->getBlock() ||
                 llvm::any_of(readers(producer), [&](Operation *reader) {
                   return reader != root.getOperation() && !chain.contains(reader);
                 });
        }))
      continue;
    chain.insert(root);
    linalg::BatchMatmulOp qk = scoresProduct(chain, heads);
    if (!qk)
      continue;
    for (Operation *member : chain)
      if (auto generic = dyn_cast<linalg::GenericOp>(member)) {
        foldUnitExpansions(rewriter, generic, /*keepHeads=*/true);
        if (heads)
          dropUnitInputDims(rewriter, generic);
      }
    SmallVector<Operation *> ordered(chain.begin(), chain.end());
    if (heads) {
      llvm::sort(ordered, [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
      FailureOr<SmallVector<Operation *>> collapsed = collapseLeadingPair(rewriter, ordered);
      if (failed(collapsed))
        continue;
      ordered = *collapsed;
      for (OpOperand &operand : pv->getOpOperands())
        if (Value source = throughRoundTrips(operand.get()); source != operand.get())
          rewriter.modifyOpInPlace(pv, [&] { operand.set(source); });
    }
    llvm::SetVector<Operation *> fusible(ordered.begin(), ordered.end());
    fusible.insert(qk);
    for (Value init : {qk.getDpsInitOperand(0)->get(), pv.getDpsInitOperand(0)->get()})
      if (auto fill = init.getDefiningOp<linalg::FillOp>(); fill && fill->hasOneUse())
        fusible.insert(fill);

    // Where a constant mask hides the columns after some (causal
    // attention), parts of the rows with only the columns they read.
    SmallVector<AttentionPart> parts;
    SmallVector<AttentionRows> rows =
        maskedRowParts(fusible.getArrayRef(), qk, pv, block,
                       strategy.registers.matmulColumns(cast<linalg::LinalgOp>(qk.getOperation())));
    if (!rows.empty())
      if (FailureOr<SmallVector<AttentionPart>> masked =
              splitAttentionRows(rewriter, fusible.getArrayRef(), qk, pv, rows, erased);
          succeeded(masked))
        parts = std::move(*masked);
    if (parts.empty())
      parts.push_back({cast<linalg::LinalgOp>(pv.getOperation()), fusible});

    for (AttentionPart &part : parts) {
      linalg::LinalgOp current = part.product;
      // First the product's own split across threads.
      if (split && config.getThreads()[1] < ranges[0]) {
        current = tileFusingProducers(rewriter, current, {config.getThreads()[1], 0, 0, 0},
                                      /*acrossThreads=*/true, part.fusible, erased);
        if (!current)
          continue;
      }
      current = tileFusingProducers(rewriter, current, {1, block, 0, 0}, /*acrossThreads=*/false,
                                    part.fusible, erased);
      if (!current)
        continue;
      part.fusible.insert(current);
      configureTiles(part.fusible.getArrayRef());
    }
  }
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
