//===- PrefetchNextRows.cpp - the next weight rows a product will read ---===//
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

namespace mithril {
#define GEN_PASS_DEF_MITHRILPREFETCHNEXTROWS
#include "mithril/Codegen/CPU/Passes.h.inc"
} // namespace mithril

using namespace mlir;

namespace {

/// More prefetches a step than this would crowd the loads of the step.
constexpr int64_t kMaxPrefetchesPerStep = 2;
/// More prefetches than this before a reduction would come in a burst.
constexpr int64_t kMaxPrefetchesPerIteration = 8;
/// A matrix of broadcast rows smaller than this stays in L1 or L2 between
/// its tiles (twice an L1): its rows are not prefetched.
constexpr int64_t kMinBroadcastMatrixBytes = 64 << 10;
/// Where a matrix-vector step reads part of a line, the most bytes of a
/// weight group and the next one prefetched beside it: 80% of the smallest
/// L1d of the targets (32 KiB), the rest for the batch's rows.
constexpr int64_t kPartLineGroupsL1Bytes = (32 << 10) * 4 / 5;
/// Broadcast rows of a tile from which its next rows are prefetched in the
/// order it reads them (prefetchNextBroadcastRows).
constexpr int64_t kInterleaveMinRows = 8;

/// A loop's constant lower bound, step and trip count.
struct Bounds {
  int64_t lower, step, trips;
};

std::optional<Bounds> constantBounds(scf::ForOp loop) {
  std::optional<int64_t> lower = getConstantIntValue(loop.getLowerBound());
  std::optional<int64_t> upper = getConstantIntValue(loop.getUpperBound());
  std::optional<int64_t> step = getConstantIntValue(loop.getStep());
  if (!lower || !upper || !step || *step <= 0 || *upper <= *lower)
    return std::nullopt;
  return Bounds{*lower, *step, (*upper - *lower + *step - 1) / *step};
}

/// The weight rows a matrix-vector product's reduction reads each step.
struct WeightRows {
  /// S, the groups' step.
  int64_t count;
  /// The bytes of a group's S rows over the whole reduction.
  int64_t groupBytes;
  /// The lines of a row's step (1 where a step reads part of a line).
  int64_t linesPerStep;
  /// Whether a step reads part of a line (AVX2's 8 float lanes: half).
  bool partOfLine;
};

/// The slice of S weight rows `read` takes a step of `reduction`, as
/// `[rows, chunks, lanes]` at [groups' index, reduction's index, 0];
/// nothing for other reads.
std::optional<WeightRows> weightRows(vector::TransferReadOp read, scf::ForOp groups,
                                     int64_t groupStep, scf::ForOp reduction) {
  auto buffer = dyn_cast<MemRefType>(read.getBase().getType());
  VectorType vector = read.getVectorType();
  SmallVector<int64_t> strides;
  int64_t offset;
  if (!buffer || buffer.getRank() != 3 || !buffer.getElementType().isIntOrFloat() ||
      read.getMask() || vector.getRank() != 3 || vector.isScalable() ||
      vector.getDimSize(0) != groupStep || vector.getDimSize(1) != 1 ||
      !read.getPermutationMap().isMinorIdentity() ||
      failed(buffer.getStridesAndOffset(strides, offset)) || strides.back() != 1 ||
      read.getIndices()[0] != groups.getInductionVar() ||
      read.getIndices()[1] != reduction.getInductionVar() ||
      getConstantIntValue(read.getIndices()[2]) != 0)
    return std::nullopt;
  int64_t elementBytes = llvm::divideCeil(buffer.getElementTypeBitWidth(), 8);
  int64_t stepBytes = vector.getDimSize(2) * elementBytes;
  if (mithril::kCacheLineBytes % elementBytes != 0)
    return std::nullopt;
  int64_t groupBytes = groupStep * buffer.getDimSize(1) * stepBytes;
  if (stepBytes < mithril::kCacheLineBytes && mithril::kCacheLineBytes % stepBytes == 0)
    return WeightRows{groupStep, groupBytes, 1, /*partOfLine=*/true};
  if (stepBytes % mithril::kCacheLineBytes != 0)
    return std::nullopt;
  return WeightRows{groupStep, groupBytes, stepBytes / mithril::kCacheLineBytes,
                    /*partOfLine=*/false};
}

/// Whether `value` is defined outside `loop`, after moving the pure ops
/// that compute it from values defined outside out of it (a tile's first
/// row, r + offset, computed in the reduction that reads it).
bool hoistOutOf(scf::ForOp loop, Value value, int depth = 0) {
  if (loop.isDefinedOutsideOfLoop(value))
    return true;
  Operation *op = value.getDefiningOp();
  if (!op || depth > 4 || op->getNumRegions() != 0 || !isPure(op) ||
      op->getParentOp() != loop.getOperation())
    return false;
  for (Value operand : op->getOperands())
    if (!hoistOutOf(loop, operand, depth + 1))
      return false;
  loop.moveOutOfLoop(op);
  return true;
}

/// The number of `loop`'s current iteration, (i - lower) / step, built at
/// `builder`'s point.
Value iterationNumber(OpBuilder &builder, Location loc, scf::ForOp loop, const Bounds &bounds) {
  auto constant = [&](int64_t v) { return arith::ConstantIndexOp::create(builder, loc, v); };
  return builder.createOrFold<arith::DivUIOp>(
      loc, builder.createOrFold<arith::SubIOp>(loc, loop.getInductionVar(), constant(bounds.lower)),
      constant(bounds.step));
}

/// Slot `p` of the `perIteration` slots of iteration `iteration`:
/// iteration * perIteration + p.
Value slotOf(OpBuilder &builder, Location loc, Value iteration, int64_t perIteration, int64_t p) {
  auto constant = [&](int64_t v) { return arith::ConstantIndexOp::create(builder, loc, v); };
  return builder.createOrFold<arith::AddIOp>(
      loc, builder.createOrFold<arith::MulIOp>(loc, iteration, constant(perIteration)),
      constant(p));
}

/// A register tile's read of R rows of a row-major [M, K] matrix each step:
/// a `vector<R>` read down a column at [r, k] of a static buffer of identity
/// layout, broadcast to the tile's rows.
struct BroadcastRowsRead {
  vector::TransferReadOp read;
  int64_t rows, total, depth, elementBytes, lineElements;
};

std::optional<BroadcastRowsRead> broadcastRowsRead(Operation &op) {
  auto read = dyn_cast<vector::TransferReadOp>(op);
  if (!read || read.getMask() || read.getVectorType().getRank() != 1 ||
      read.getIndices().size() != 2 ||
      read.getPermutationMap() != AffineMap::get(2, 0, getAffineDimExpr(0, read.getContext())))
    return std::nullopt;
  auto buffer = dyn_cast<MemRefType>(read.getBase().getType());
  if (!buffer || !buffer.hasStaticShape() || !buffer.getElementType().isIntOrFloat() ||
      !buffer.getLayout().isIdentity())
    return std::nullopt;
  int64_t elementBytes = llvm::divideCeil(buffer.getElementTypeBitWidth(), 8);
  return BroadcastRowsRead{read,
                           read.getVectorType().getDimSize(0),
                           buffer.getDimSize(0),
                           buffer.getDimSize(1),
                           elementBytes,
                           mithril::kCacheLineBytes / elementBytes};
}

struct PrefetchNextRowsPass
    : public mithril::impl::MithrilPrefetchNextRowsBase<PrefetchNextRowsPass> {
  void runOnOperation() override {
    SmallVector<scf::ForOp> reductions;
    getOperation()->walk([&](scf::ForOp loop) {
      if (llvm::any_of(loop.getInitArgs(), [](Value v) { return isa<VectorType>(v.getType()); }))
        reductions.push_back(loop);
    });
    for (scf::ForOp reduction : reductions) {
      prefetchNextGroup(reduction);
      prefetchNextBroadcastRows(reduction);
      prefetchNextTileBlock(reduction);
    }
  }

  /// `value` at the first step of `loop` (its induction variable at the
  /// lower bound), computed before `loop` by clones of the pure ops of its
  /// body that compute it; null where one is not pure or too deep.
  Value atFirstStep(OpBuilder &builder, scf::ForOp loop, Value value, int depth = 0) {
    if (value == loop.getInductionVar())
      return loop.getLowerBound();
    if (loop.isDefinedOutsideOfLoop(value))
      return value;
    Operation *op = value.getDefiningOp();
    if (!op || depth > 4 || op->getNumRegions() != 0 || !isPure(op) ||
        op->getParentOp() != loop.getOperation() || op->getNumResults() != 1)
      return Value();
    IRMapping mapping;
    for (Value operand : op->getOperands()) {
      Value first = atFirstStep(builder, loop, operand, depth + 1);
      if (!first)
        return Value();
      mapping.map(operand, first);
    }
    return builder.clone(*op, mapping)->getResult(0);
  }

  /// A register tile that broadcasts each step the elements of R rows of a
  /// row-major [M, K] matrix read in place, over a block of T < K of its
  /// steps ([r, r + R) x [c, c + T)), once for each iteration of the loop
  /// around it, whose iterations keep the rows (AVX2's float32 row tiles
  /// outermost: each 6-row tile sweeps every panel of a packed block with
  /// its 6 x 256 block of A in L1). The next tile's block, [r + R, r + 2R)
  /// x [c, c + T), comes from L3 or memory in R streams of T / L lines
  /// each, too short for the hardware prefetchers: its R * T / L lines are
  /// prefetched a few each iteration of the loop around, spread over its
  /// iterations (clamped to the matrix's last row and column). One Zen 4
  /// core, AVX2 code, paired in one process (minimum of each round): sgemm
  /// 1024 +3.3%, 512 level; the MLP at batch 256, its training step and the
  /// GPT forward level. Not where that takes more than
  /// kMaxPrefetchesPerIteration an iteration: sgemm 2048's blocks of 1024
  /// steps, 24 lines each of 16 panels, ran 1.5-3% slower with them.
  void prefetchNextTileBlock(scf::ForOp reduction) {
    auto around = dyn_cast_or_null<scf::ForOp>(reduction->getParentOp());
    if (!around)
      return;
    std::optional<Bounds> steps = constantBounds(reduction), iterations = constantBounds(around);
    if (!steps || steps->lower != 0 || steps->step != 1 || !iterations || iterations->trips < 2)
      return;
    for (Operation &op : reduction.getBody()->without_terminator()) {
      std::optional<BroadcastRowsRead> found = broadcastRowsRead(op);
      if (!found)
        continue;
      auto [read, rows, total, depth, elementBytes, lineElements] = *found;
      if (steps->trips >= depth || total * depth * elementBytes < kMinBroadcastMatrixBytes)
        continue;
      int64_t linesPerRow = llvm::divideCeil(steps->trips, lineElements);
      int64_t perIteration = llvm::divideCeil(rows * linesPerRow, iterations->trips);
      if (perIteration > kMaxPrefetchesPerIteration)
        return;
      // (Rows the loop around changes are another tile's: the loop around
      // is the tiles'. A constant first row has no next tile.)
      Value first = read.getIndices()[0];
      if (!around.isDefinedOutsideOfLoop(read.getBase()) || !hoistOutOf(reduction, first) ||
          !hoistOutOf(around, first) || getConstantIntValue(first))
        continue;
      OpBuilder builder(reduction);
      Value start = atFirstStep(builder, reduction, read.getIndices()[1]);
      if (!start || !hoistOutOf(around, start))
        return;
      Location loc = read.getLoc();
      auto constant = [&](int64_t v) { return arith::ConstantIndexOp::create(builder, loc, v); };
      Value iteration = iterationNumber(builder, loc, around, *iterations);
      Value nextRow = builder.createOrFold<arith::AddIOp>(loc, first, constant(rows));
      for (int64_t p = 0; p < perIteration; ++p) {
        // Slot s of the iteration: line s % lines of the next tile's row
        // s / lines.
        Value slot = slotOf(builder, loc, iteration, perIteration, p);
        Value row = builder.createOrFold<arith::MinUIOp>(
            loc, builder.createOrFold<arith::DivUIOp>(loc, slot, constant(linesPerRow)),
            constant(rows - 1));
        row = builder.createOrFold<arith::MinUIOp>(
            loc, builder.createOrFold<arith::AddIOp>(loc, nextRow, row), constant(total - 1));
        Value column = builder.createOrFold<arith::AddIOp>(
            loc, start,
            builder.createOrFold<arith::MulIOp>(
                loc, builder.createOrFold<arith::RemUIOp>(loc, slot, constant(linesPerRow)),
                constant(lineElements)));
        column = builder.createOrFold<arith::MinUIOp>(loc, column, constant(depth - 1));
        memref::PrefetchOp::create(builder, loc, read.getBase(), ValueRange{row, column},
                                   /*isWrite=*/false, /*localityHint=*/3, /*isDataCache=*/true);
      }
      return;
    }
  }

  /// A register tile that broadcasts each step the elements of R rows of
  /// a row-major matrix [M, K] read in place (a swapped product's weight,
  /// `vector<R>` read down a column at [r, k]) streams R rows at once,
  /// which the hardware prefetchers meet anew each tile. Prefetches the
  /// next tile's rows [r + R, r + 2R) (the last row for rows past M), one
  /// line a step: each of the R rows' K / L lines, where the K steps of the
  /// tile cover them (R * K / L <= K: L >= R elements a line). Not for a
  /// matrix that an L2 holds with room to spare.
  void prefetchNextBroadcastRows(scf::ForOp reduction) {
    std::optional<Bounds> steps = constantBounds(reduction);
    if (!steps || steps->lower != 0 || steps->step != 1)
      return;
    for (Operation &op : reduction.getBody()->without_terminator()) {
      std::optional<BroadcastRowsRead> found = broadcastRowsRead(op);
      if (!found || found->read.getIndices()[1] != reduction.getInductionVar())
        continue;
      auto [read, rows, total, depth, elementBytes, lineElements] = *found;
      int64_t lines = llvm::divideCeil(depth, lineElements);
      bool interleaved = rows >= kInterleaveMinRows;
      int64_t span = interleaved ? llvm::PowerOf2Ceil(rows) : rows;
      if (steps->trips != depth || span * lines > depth ||
          total * depth * elementBytes < kMinBroadcastMatrixBytes)
        continue;
      Value first = read.getIndices()[0];
      // A loop around that keeps the rows (row tiles outermost, sweeping
      // the panels of a packed block with a whole reduction) reads these
      // rows again next, not the next tile's: prefetching those each panel
      // would pull 16 rows' lines into L1 once per panel, over its rows of A
      // (prefetchNextTileBlock's case). One Zen 3 core (512 KiB L2), AVX2
      // code, sgemm 1024 in blocks of 1024 steps, alternated: 28.1 -> 24.4
      // ms (0.88x -> 1.03x of OpenBLAS in quiet rounds).
      if (!reduction.isDefinedOutsideOfLoop(read.getBase()) || !hoistOutOf(reduction, first))
        continue;
      if (auto around = dyn_cast_or_null<scf::ForOp>(reduction->getParentOp()))
        if (hoistOutOf(around, first))
          continue;
      // Through the matrix flattened, from the next tile's first element,
      // (r + R) * K, clamped to the matrix's last one. A tile of
      // kInterleaveMinRows rows or more (AVX-512's 8 x 32) prefetches its
      // next rows' lines a line of every row at a time, last line first:
      // step k line lines - 1 - min(k / P, lines - 1) of row k mod P (P: R
      // up to a power of 2), a mask, a shift, a multiply, two minima and a
      // subtraction a step, which its 16 FMAs a step hide. Last line first,
      // so that the next tile reads first the lines prefetched last, and
      // because rows a multiple of 4 KiB apart share their L1 sets column by
      // column: first line first, 8 x 16 float64 tiles (a line every 8
      // steps, one a step prefetched) prefetched into the very set they were
      // reading, 16 lines for its 8 ways (Zen 4, one core, alternated: dgemm
      // 512 5.49 ms, 4.79 last line first, 4.76 without the prefetch; two
      // threads 2.77 -> 2.41; sgemm 1024 19.10 -> 19.02; the MLP at batch
      // 256, the GPT forward at batches 1 and 8 and the CNN level). A
      // smaller one (AVX2's 6 x 16, 12 FMAs a step) runs frontend-bound with
      // those, and takes
      // the rows' R * K contiguous elements in memory order instead, line k
      // at step k: an add and a minimum. (Zen 4, one core, alternated: the
      // MLP at batch 256 in AVX2 code 3.11 ms without the prefetch, 3.72
      // with the first form of it, row r + R + k mod R and line (k / R) mod
      // lines, 17 integer instructions a step; interleaved as above 3.46-3.52,
      // in memory order 3.14. The GPT forward at batch 1, AVX-512 code:
      // interleaved 9.18-9.26 ms, in memory order 9.43-9.53.)
      Location loc = read.getLoc();
      OpBuilder builder(reduction);
      auto constant = [&](int64_t v) { return arith::ConstantIndexOp::create(builder, loc, v); };
      Value flat = memref::CollapseShapeOp::create(builder, loc, read.getBase(),
                                                   ArrayRef<ReassociationIndices>{{0, 1}});
      Value start = builder.createOrFold<arith::MulIOp>(
          loc, builder.createOrFold<arith::AddIOp>(loc, first, constant(rows)), constant(depth));
      builder.setInsertionPoint(read);
      Value k = reduction.getInductionVar();
      Value offset;
      if (interleaved) {
        Value row = builder.createOrFold<arith::AndIOp>(loc, k, constant(span - 1));
        Value line = builder.createOrFold<arith::MinUIOp>(
            loc, builder.createOrFold<arith::ShRUIOp>(loc, k, constant(llvm::Log2_64(span))),
            constant(lines - 1));
        line = builder.createOrFold<arith::SubIOp>(loc, constant(lines - 1), line);
        offset = builder.createOrFold<arith::AddIOp>(
            loc, builder.createOrFold<arith::MulIOp>(loc, row, constant(depth)),
            builder.createOrFold<arith::MulIOp>(loc, line, constant(lineElements)));
      } else {
        offset = builder.createOrFold<arith::MulIOp>(loc, k, constant(lineElements));
      }
      Value index = builder.createOrFold<arith::MinUIOp>(
          loc, builder.createOrFold<arith::AddIOp>(loc, start, offset),
          constant(total * depth - 1));
      memref::PrefetchOp::create(builder, loc, flat, ValueRange{index},
                                 /*isWrite=*/false, /*localityHint=*/3, /*isDataCache=*/true);
      return;
    }
  }

  void prefetchNextGroup(scf::ForOp reduction) {
    auto rowGroups = dyn_cast_or_null<scf::ForOp>(reduction->getParentOp());
    auto groups = rowGroups ? dyn_cast_or_null<scf::ForOp>(rowGroups->getParentOp()) : nullptr;
    if (!groups)
      return;
    std::optional<Bounds> group = constantBounds(groups), batch = constantBounds(rowGroups);
    if (!group || !batch || !constantBounds(reduction))
      return;
    for (Operation &op : reduction.getBody()->without_terminator()) {
      auto read = dyn_cast<vector::TransferReadOp>(op);
      if (!read)
        continue;
      auto rows = weightRows(read, groups, group->step, reduction);
      if (!rows)
        continue;
      auto [count, groupBytes, linesPerStep, partOfLine] = *rows;
      // The next group's lines of one step: count x linesPerStep, spread
      // over the batch's row groups.
      int64_t perStep = llvm::divideCeil(count * linesPerStep, batch->trips);
      if (perStep > kMaxPrefetchesPerStep)
        return;
      // Steps of part of a line prefetch their chunk's line, row group r
      // row r of the next group, which its later steps over the line fetch
      // again (cheaper than an index that skips them), only where a
      // prefetch a step covers the group (with fewer row groups, the steps
      // are too short for more), and where this group and the next fit an
      // L1 with room for the batch's rows. One Zen 3 core (32 KiB L1d),
      // AVX2 (8 float lanes, 2 steps a line), groups of 4 rows, paired in
      // one process (10th percentiles): 784 deep (2 x 12.25 KiB), batch 16
      // (4 row groups of 3) 0.1572 -> 0.1533 ms, 12 0.1217 -> 0.1184, the
      // MLP 784-512-512-10 at batch 16 0.2609 -> 0.2526 (bfloat16 level,
      // float64, 2 x 24.5 KiB, 0.579 -> 0.603); 512 deep 0.1124 -> 0.1071;
      // 1024 deep (2 x 16 KiB) 0.2013 -> 0.2114, 1536 deep 0.341 -> 0.376;
      // batch 8 (2 row groups of 3) 0.0835 -> 0.0882 with two a step,
      // batch 4 0.0507 -> 0.0534. A row group's prefetches of two rows'
      // lines, each line once (rows 2r and 2r + 1 at steps k of each
      // parity), ran no faster than none.
      if (partOfLine && (perStep > 1 || 2 * groupBytes > kPartLineGroupsL1Bytes))
        return;
      Location loc = read.getLoc();
      OpBuilder builder(read);
      auto constant = [&](int64_t v) { return arith::ConstantIndexOp::create(builder, loc, v); };
      // This row group's number (loop-invariant in the reduction: hoisted).
      Value batchIndex = iterationNumber(builder, loc, rowGroups, *batch);
      int64_t elementBytes =
          llvm::divideCeil(cast<MemRefType>(read.getBase().getType()).getElementTypeBitWidth(), 8);
      for (int64_t p = 0; p < perStep; ++p) {
        // Slot g of the step: line g % linesPerStep of row g / linesPerStep
        // of the next group (rows past it, from a last uneven share, wrap).
        Value slot = slotOf(builder, loc, batchIndex, perStep, p);
        Value row = builder.createOrFold<arith::RemUIOp>(
            loc, builder.createOrFold<arith::DivUIOp>(loc, slot, constant(linesPerStep)),
            constant(count));
        row = builder.createOrFold<arith::AddIOp>(
            loc, builder.createOrFold<arith::AddIOp>(loc, groups.getInductionVar(), row),
            constant(group->step));
        Value lane = builder.createOrFold<arith::MulIOp>(
            loc, builder.createOrFold<arith::RemUIOp>(loc, slot, constant(linesPerStep)),
            constant(mithril::kCacheLineBytes / elementBytes));
        memref::PrefetchOp::create(builder, loc, read.getBase(),
                                   ValueRange{row, reduction.getInductionVar(), lane},
                                   /*isWrite=*/false, /*localityHint=*/3, /*isDataCache=*/true);
      }
      return;
    }
  }
};

} // namespace
