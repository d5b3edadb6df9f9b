//===- PrefetchPanels.cpp - a register tile's panel rows, ahead -----------===//
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
#define GEN_PASS_DEF_MITHRILPREFETCHPANELS
#include "mithril/Codegen/CPU/Passes.h.inc"
} // namespace mithril

using namespace mlir;

namespace {

/// More lines than this a row: no register tile's panel.
constexpr int64_t kMaxLinesPerRow = 8;

/// Whether `loop` is a register tile's reduction: it carries a vector and
/// runs inside another loop (over tiles).
bool isTileReduction(scf::ForOp loop) {
  return isa_and_nonnull<scf::ForOp>(loop->getParentOp()) &&
         llvm::any_of(loop.getInitArgs(), [](Value v) { return isa<VectorType>(v.getType()); });
}

/// The lines of a row `read` takes, as element offsets along the buffer's
/// innermost dimension, and the position of the index `induction` sets;
/// nothing when `read` is not a one-dimensional read of whole lines along
/// the unit-stride innermost dimension at an index `induction` sets in an
/// outer dimension.
std::optional<std::pair<SmallVector<int64_t>, unsigned>> panelRow(vector::TransferReadOp read,
                                                                  Value induction) {
  auto buffer = dyn_cast<MemRefType>(read.getBase().getType());
  VectorType vector = read.getVectorType();
  SmallVector<int64_t> strides;
  int64_t offset;
  if (!buffer || buffer.getRank() < 2 || !buffer.getElementType().isIntOrFloat() ||
      read.getMask() || vector.getRank() != 1 || vector.isScalable() ||
      !read.getInBoundsValues()[0] || failed(buffer.getStridesAndOffset(strides, offset)) ||
      strides.back() != 1 || !read.getPermutationMap().isMinorIdentity())
    return std::nullopt;
  int64_t elementBytes = llvm::divideCeil(buffer.getElementTypeBitWidth(), 8);
  int64_t rowBytes = vector.getDimSize(0) * elementBytes;
  if (mithril::kCacheLineBytes % elementBytes != 0 || rowBytes % mithril::kCacheLineBytes != 0 ||
      rowBytes / mithril::kCacheLineBytes > kMaxLinesPerRow)
    return std::nullopt;
  std::optional<unsigned> position;
  for (auto [i, index] : llvm::enumerate(read.getIndices()))
    if (index == induction)
      position = i;
  if (!position || *position + 1 == buffer.getRank())
    return std::nullopt;
  SmallVector<int64_t> lines;
  for (int64_t line = 0; line < rowBytes / mithril::kCacheLineBytes; ++line)
    lines.push_back(line * (mithril::kCacheLineBytes / elementBytes));
  return std::make_pair(lines, *position);
}

struct PrefetchPanelsPass : public mithril::impl::MithrilPrefetchPanelsBase<PrefetchPanelsPass> {
  using MithrilPrefetchPanelsBase::MithrilPrefetchPanelsBase;

  void runOnOperation() override {
    if (distance <= 0) {
      getOperation()->emitError("mithril-prefetch-panels: distance must be at least 1, got ")
          << static_cast<int64_t>(distance);
      return signalPassFailure();
    }
    SmallVector<scf::ForOp> loops;
    getOperation()->walk([&](scf::ForOp loop) {
      if (isTileReduction(loop))
        loops.push_back(loop);
    });
    for (scf::ForOp loop : loops)
      prefetchAhead(loop);
  }

  void prefetchAhead(scf::ForOp loop) {
    std::optional<int64_t> step = getConstantIntValue(loop.getStep());
    std::optional<APInt> trips = loop.getStaticTripCount();
    // A loop shorter than the distance has nothing ahead to fetch.
    if (!step || *step <= 0 || !trips || trips->getSExtValue() <= distance)
      return;
    Value induction = loop.getInductionVar();
    SmallVector<vector::TransferReadOp> reads;
    for (Operation &op : loop.getBody()->without_terminator())
      if (auto read = dyn_cast<vector::TransferReadOp>(op))
        reads.push_back(read);
    Value ahead;
    for (vector::TransferReadOp read : reads) {
      auto row = panelRow(read, induction);
      if (!row)
        continue;
      Location loc = read.getLoc();
      OpBuilder builder(read);
      if (!ahead) {
        // One index for every read of the loop: the step `distance` ahead.
        // The last steps prefetch past the panel, which costs nothing
        // (a prefetch never faults, and LLVM's has no undefined behavior
        // on any address); clamping it cost four instructions a step.
        builder.setInsertionPointToStart(loop.getBody());
        ahead =
            arith::AddIOp::create(builder, loc, induction,
                                  arith::ConstantIndexOp::create(builder, loc, distance * *step));
        builder.setInsertionPoint(read);
      }
      auto [lines, position] = *row;
      SmallVector<Value> indices(read.getIndices().begin(), read.getIndices().end());
      indices[position] = ahead;
      for (int64_t line : lines) {
        SmallVector<Value> at = indices;
        if (line != 0)
          at.back() = builder.createOrFold<arith::AddIOp>(
              loc, at.back(), arith::ConstantIndexOp::create(builder, loc, line));
        memref::PrefetchOp::create(builder, loc, read.getBase(), at, /*isWrite=*/false,
                                   /*localityHint=*/3, /*isDataCache=*/true);
      }
    }
  }
};

} // namespace
