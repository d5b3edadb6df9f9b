//===- PrefetchAccumulators.cpp - the next register tile's accumulators ---===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//

#include "mithril/Codegen/CPU/CpuTarget.h"
#include "mithril/Codegen/CPU/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "llvm/ADT/SetVector.h"

namespace mithril {
#define GEN_PASS_DEF_MITHRILPREFETCHACCUMULATORS
#include "mithril/Codegen/CPU/Passes.h.inc"
} // namespace mithril

using namespace mlir;

namespace {

/// More lines than this a tile: left to the hardware (a tile that large is
/// no register tile).
constexpr int64_t kMaxPrefetches = 64;

/// The buffer `view` is a view of, through subviews and reshapes.
Value rootBuffer(Value view) {
  while (auto viewLike = view.getDefiningOp<ViewLikeOpInterface>())
    view = viewLike.getViewSource();
  return view;
}

/// The accumulator read of a register tile: `read` feeds `reduction`'s
/// carried vector, the loop's result for it is written back where it was
/// read, and both lie in the body of the loop over tiles, `tiles`.
struct AccumulatorTile {
  scf::ForOp tiles;
  vector::TransferReadOp read;
};

/// The last value `loop`'s induction variable takes, when its bounds are
/// constants and its trip count at least 2 divides evenly (every tile has
/// the shape of the first).
std::optional<int64_t> lastInduction(scf::ForOp loop) {
  std::optional<int64_t> lower = getConstantIntValue(loop.getLowerBound());
  std::optional<int64_t> upper = getConstantIntValue(loop.getUpperBound());
  std::optional<int64_t> step = getConstantIntValue(loop.getStep());
  if (!lower || !upper || !step || *step <= 0 || *upper - *lower < 2 * *step ||
      (*upper - *lower) % *step != 0)
    return std::nullopt;
  return *upper - *step;
}

/// The ops of the tile loop's body that `read`'s view and indices are
/// computed from, in order; empty when one of them has effects or regions
/// (then the next tile's view cannot be computed ahead), or when none reads
/// the induction variable (then the next tile is this one).
SmallVector<Operation *> indexSlice(AccumulatorTile tile) {
  Block *body = tile.tiles.getBody();
  llvm::SetVector<Operation *> slice;
  SmallVector<Value> worklist(tile.read.getIndices().begin(), tile.read.getIndices().end());
  worklist.push_back(tile.read.getBase());
  bool readsInduction = false;
  while (!worklist.empty()) {
    Value value = worklist.pop_back_val();
    if (value == tile.tiles.getInductionVar()) {
      readsInduction = true;
      continue;
    }
    Operation *def = value.getDefiningOp();
    if (!def || def->getBlock() != body || slice.contains(def))
      continue;
    if (def->getNumRegions() != 0 || !isMemoryEffectFree(def))
      return {};
    slice.insert(def);
    llvm::append_range(worklist, def->getOperands());
  }
  if (!readsInduction)
    return {};
  SmallVector<Operation *> ordered(slice.begin(), slice.end());
  llvm::sort(ordered, [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
  return ordered;
}

/// The element offsets within `read`'s vector of the lines to prefetch,
/// each a position of the vector (its last dimension in steps of a line);
/// empty when the read is not of whole rows along the buffer's unit-stride
/// innermost dimension.
SmallVector<SmallVector<int64_t>> lineOffsets(vector::TransferReadOp read) {
  auto buffer = cast<MemRefType>(read.getBase().getType());
  VectorType vector = read.getVectorType();
  AffineMap map = read.getPermutationMap();
  int64_t rank = buffer.getRank();
  SmallVector<int64_t> strides;
  int64_t offset;
  if (!buffer.getElementType().isIntOrFloat() || read.getMask() || rank == 0 ||
      vector.getRank() == 0 || vector.isScalable() ||
      llvm::any_of(read.getInBoundsValues(), [](bool inBounds) { return !inBounds; }) ||
      failed(buffer.getStridesAndOffset(strides, offset)) || strides.back() != 1 ||
      !map.isProjectedPermutation(/*allowZeroInResults=*/false) ||
      map.getResults().back() != getAffineDimExpr(rank - 1, read.getContext()))
    return {};
  int64_t elementBytes = llvm::divideCeil(buffer.getElementTypeBitWidth(), 8);
  int64_t rowBytes = vector.getShape().back() * elementBytes;
  if (mithril::kCacheLineBytes % elementBytes != 0)
    return {};
  int64_t linesPerRow = llvm::divideCeil(rowBytes, mithril::kCacheLineBytes);
  int64_t rows = vector.getNumElements() / vector.getShape().back();
  if (rows * linesPerRow > kMaxPrefetches)
    return {};
  SmallVector<SmallVector<int64_t>> offsets;
  SmallVector<int64_t> position(vector.getRank(), 0);
  for (int64_t row = 0; row < rows; ++row) {
    // The row's position in the leading dimensions, last fastest.
    for (int64_t dim = vector.getRank() - 2, rest = row; dim >= 0; --dim) {
      position[dim] = rest % vector.getDimSize(dim);
      rest /= vector.getDimSize(dim);
    }
    for (int64_t line = 0; line < linesPerRow; ++line) {
      position.back() = line * (mithril::kCacheLineBytes / elementBytes);
      offsets.push_back(position);
    }
  }
  return offsets;
}

struct PrefetchAccumulatorsPass
    : public mithril::impl::MithrilPrefetchAccumulatorsBase<PrefetchAccumulatorsPass> {
  using MithrilPrefetchAccumulatorsBase::MithrilPrefetchAccumulatorsBase;

  void runOnOperation() override {
    int64_t threshold = minBytes;
    if (threshold <= 0) {
      std::optional<mithril::CpuTarget> target = mithril::cpuTarget(targetCpu);
      if (!target) {
        getOperation()->emitError("mithril-prefetch-accumulators: unknown target-cpu '")
            << targetCpu << "' (an x86-64 CPU LLVM knows: znver2, znver4, sapphirerapids, ...)";
        return signalPassFailure();
      }
      threshold = target->l2Bytes;
    }
    SmallVector<AccumulatorTile> tiles;
    getOperation()->walk([&](scf::ForOp reduction) {
      auto loop = dyn_cast_or_null<scf::ForOp>(reduction->getParentOp());
      if (!loop)
        return;
      for (auto [init, result] : llvm::zip(reduction.getInitArgs(), reduction.getResults())) {
        auto read = init.getDefiningOp<vector::TransferReadOp>();
        if (!read || read->getParentOp() != loop || !isa<MemRefType>(read.getBase().getType()) ||
            !result.hasOneUse())
          continue;
        auto write = dyn_cast<vector::TransferWriteOp>(*result.getUsers().begin());
        if (!write || write.getBase() != read.getBase() ||
            write.getIndices() != read.getIndices() ||
            write.getPermutationMap() != read.getPermutationMap())
          continue;
        auto root = dyn_cast<MemRefType>(rootBuffer(read.getBase()).getType());
        if (!root || !root.hasStaticShape() || !root.getElementType().isIntOrFloat() ||
            root.getNumElements() * llvm::divideCeil(root.getElementTypeBitWidth(), 8) < threshold)
          continue;
        tiles.push_back({loop, read});
      }
    });
    for (AccumulatorTile tile : tiles)
      prefetchNext(tile);
  }

  /// Prefetches, before `tile.read`, the lines the next iteration of the
  /// loop over tiles reads.
  void prefetchNext(AccumulatorTile tile) {
    std::optional<int64_t> last = lastInduction(tile.tiles);
    SmallVector<SmallVector<int64_t>> offsets = lineOffsets(tile.read);
    if (!last || offsets.empty())
      return;
    SmallVector<Operation *> slice = indexSlice(tile);
    if (slice.empty())
      return;
    Location loc = tile.read.getLoc();
    OpBuilder builder(tile.read);
    Value induction = tile.tiles.getInductionVar();
    Value next = arith::AddIOp::create(builder, loc, induction, tile.tiles.getStep());
    // The last tile prefetches itself: the next index stays in bounds.
    next = arith::MinSIOp::create(builder, loc, next,
                                  arith::ConstantIndexOp::create(builder, loc, *last));
    IRMapping mapping;
    mapping.map(induction, next);
    for (Operation *op : slice)
      builder.clone(*op, mapping);
    Value buffer = mapping.lookupOrDefault(tile.read.getBase());
    SmallVector<Value> indices;
    for (Value index : tile.read.getIndices())
      indices.push_back(mapping.lookupOrDefault(index));
    AffineMap map = tile.read.getPermutationMap();
    for (ArrayRef<int64_t> offset : offsets) {
      SmallVector<Value> at = indices;
      for (auto [dim, result] : llvm::enumerate(map.getResults())) {
        if (offset[dim] == 0)
          continue;
        unsigned position = cast<AffineDimExpr>(result).getPosition();
        at[position] = arith::AddIOp::create(
            builder, loc, at[position], arith::ConstantIndexOp::create(builder, loc, offset[dim]));
      }
      memref::PrefetchOp::create(builder, loc, buffer, at, /*isWrite=*/true,
                                 /*localityHint=*/3, /*isDataCache=*/true);
    }
  }
};

} // namespace
