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

namespace mithril {
#define GEN_PASS_DEF_MITHRILPREFETCHNEXTROWS
#include "mithril/Codegen/CPU/Passes.h.inc"
} // namespace mithril

using namespace mlir;

namespace {

/// More prefetches a step than this would crowd the loads of the step.
constexpr int64_t kMaxPrefetchesPerStep = 2;
/// A matrix of broadcast rows smaller than this stays in L1 or L2 between
/// its tiles (twice an L1): its rows are not prefetched.
constexpr int64_t kMinBroadcastMatrixBytes = 64 << 10;

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
  return Bounds{*lower, *step, llvm::divideCeil(*upper - *lower, *step)};
}

/// The slice of S weight rows `read` takes a step of `reduction`, as
/// `[rows, chunks, lanes]` at [groups' index, reduction's index, 0]: S (the
/// groups' step) and the lines of a row's step; nothing for other reads.
std::optional<std::pair<int64_t, int64_t>> weightRows(vector::TransferReadOp read,
                                                      scf::ForOp groups, int64_t groupStep,
                                                      scf::ForOp reduction) {
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
  if (mithril::kCacheLineBytes % elementBytes != 0 || stepBytes % mithril::kCacheLineBytes != 0)
    return std::nullopt;
  return std::make_pair(groupStep, stepBytes / mithril::kCacheLineBytes);
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
      auto read = dyn_cast<vector::TransferReadOp>(op);
      if (!read || read.getMask() || read.getVectorType().getRank() != 1 ||
          read.getIndices().size() != 2 || read.getIndices()[1] != reduction.getInductionVar() ||
          read.getPermutationMap() != AffineMap::get(2, 0, getAffineDimExpr(0, read.getContext())))
        continue;
      auto buffer = dyn_cast<MemRefType>(read.getBase().getType());
      if (!buffer || !buffer.hasStaticShape() || !buffer.getElementType().isIntOrFloat() ||
          !buffer.getLayout().isIdentity())
        continue;
      int64_t rows = read.getVectorType().getDimSize(0), total = buffer.getDimSize(0);
      int64_t depth = buffer.getDimSize(1);
      int64_t elementBytes = llvm::divideCeil(buffer.getElementTypeBitWidth(), 8);
      int64_t lineElements = mithril::kCacheLineBytes / elementBytes;
      int64_t lines = llvm::divideCeil(depth, lineElements);
      if (steps->trips != depth || rows * lines > depth ||
          total * depth * elementBytes < kMinBroadcastMatrixBytes)
        continue;
      Location loc = read.getLoc();
      OpBuilder builder(read);
      auto constant = [&](int64_t v) { return arith::ConstantIndexOp::create(builder, loc, v); };
      Value k = reduction.getInductionVar();
      Value row = builder.createOrFold<arith::AddIOp>(
          loc, read.getIndices()[0],
          builder.createOrFold<arith::AddIOp>(
              loc, constant(rows), builder.createOrFold<arith::RemUIOp>(loc, k, constant(rows))));
      row = builder.createOrFold<arith::MinUIOp>(loc, row, constant(total - 1));
      Value column = builder.createOrFold<arith::MulIOp>(
          loc,
          builder.createOrFold<arith::RemUIOp>(
              loc, builder.createOrFold<arith::DivUIOp>(loc, k, constant(rows)), constant(lines)),
          constant(lineElements));
      memref::PrefetchOp::create(builder, loc, read.getBase(), ValueRange{row, column},
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
      auto [count, linesPerStep] = *rows;
      // The next group's lines of one step: count x linesPerStep, spread
      // over the batch's row groups.
      int64_t perStep = llvm::divideCeil(count * linesPerStep, batch->trips);
      if (perStep > kMaxPrefetchesPerStep)
        return;
      Location loc = read.getLoc();
      OpBuilder builder(read);
      auto constant = [&](int64_t v) { return arith::ConstantIndexOp::create(builder, loc, v); };
      // This row group's number (loop-invariant in the reduction: hoisted).
      Value batchIndex = builder.createOrFold<arith::DivUIOp>(
          loc,
          builder.createOrFold<arith::SubIOp>(loc, rowGroups.getInductionVar(),
                                              constant(batch->lower)),
          constant(batch->step));
      int64_t elementBytes =
          llvm::divideCeil(cast<MemRefType>(read.getBase().getType()).getElementTypeBitWidth(), 8);
      for (int64_t p = 0; p < perStep; ++p) {
        // Slot g of the step: line g % linesPerStep of row g / linesPerStep
        // of the next group (rows past it, from a last uneven share, wrap).
        Value slot = builder.createOrFold<arith::AddIOp>(
            loc, builder.createOrFold<arith::MulIOp>(loc, batchIndex, constant(perStep)),
            constant(p));
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
