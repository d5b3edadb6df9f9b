//===- StridedCopies.cpp - strided memref copies as loops -----------------===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//

#include "mithril/Pipelines/Pipelines.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/PatternMatch.h"

namespace mithril {
#define GEN_PASS_DEF_MITHRILSTRIDEDCOPIES
#include "mithril/Pipelines/Passes.h.inc"
} // namespace mithril

using namespace mlir;

namespace {
/// The bytes one vector of a copied run moves: four 512-bit registers (LLVM
/// splits them to the target's width).
constexpr int64_t kChunkBytes = 256;
/// Runs shorter than this many bytes stay scalar loops.
constexpr int64_t kMinRunBytes = 16;
/// Copies of fewer bytes stay on one thread.
constexpr int64_t kMinParallelBytes = 64 * 1024;

/// How many trailing dimensions of `type` are one contiguous run.
int64_t contiguousTrailingDims(MemRefType type) {
  int64_t dims = 0;
  while (dims < type.getRank() && type.areTrailingDimsContiguous(dims + 1))
    ++dims;
  return dims;
}

/// The groups that merge the last `dims` of `rank` dimensions into one.
SmallVector<ReassociationIndices> trailingGroups(int64_t rank, int64_t dims) {
  SmallVector<ReassociationIndices> groups;
  for (int64_t d = 0; d < rank - dims; ++d)
    groups.push_back({d});
  groups.emplace_back();
  for (int64_t d = rank - dims; d < rank; ++d)
    groups.back().push_back(d);
  return groups;
}

/// The copy as loops over the dimensions before the longest run that is
/// contiguous in both buffers, each run moved in vectors of kChunkBytes (and
/// one shorter vector for its tail). False when the runs are too short for
/// vectors or cannot be viewed flat.
bool copyInRuns(IRRewriter &rewriter, memref::CopyOp copy, unsigned threads) {
  auto source = cast<MemRefType>(copy.getSource().getType());
  auto target = cast<MemRefType>(copy.getTarget().getType());
  int64_t dims = std::min(contiguousTrailingDims(source), contiguousTrailingDims(target));
  if (dims == 0)
    return false;
  int64_t rank = source.getRank(), outer = rank - dims;
  int64_t run = 1;
  for (int64_t d = outer; d < rank; ++d)
    run *= source.getDimSize(d);
  // Whole bytes only: a vector of i1 is packed bits, a buffer of i1 is not.
  Type element = source.getElementType();
  if (!element.isIntOrFloat() || element.getIntOrFloatBitWidth() % 8 != 0)
    return false;
  int64_t elementBytes = element.getIntOrFloatBitWidth() / 8;
  if (run * elementBytes < kMinRunBytes)
    return false;
  SmallVector<ReassociationIndices> groups = trailingGroups(rank, dims);
  if (dims > 1 && !(memref::CollapseShapeOp::isGuaranteedCollapsible(source, groups) &&
                    memref::CollapseShapeOp::isGuaranteedCollapsible(target, groups)))
    return false;
  Location loc = copy.getLoc();
  rewriter.setInsertionPoint(copy);
  Value from = copy.getSource(), to = copy.getTarget();
  if (dims > 1) {
    from = memref::CollapseShapeOp::create(rewriter, loc, from, groups);
    to = memref::CollapseShapeOp::create(rewriter, loc, to, groups);
  }
  int64_t chunk = std::max<int64_t>(1, kChunkBytes / elementBytes);
  int64_t whole = run / chunk * chunk;
  Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
  Value one = arith::ConstantIndexOp::create(rewriter, loc, 1);
  SmallVector<Value> lower(outer, zero), upper, steps(outer, one);
  for (int64_t d = 0; d < outer; ++d)
    upper.push_back(arith::ConstantIndexOp::create(rewriter, loc, source.getDimSize(d)));
  // A large copy: the outermost dimension in one chunk per thread (not
  // inside a thread's chunk already).
  int64_t bytes = elementBytes;
  for (int64_t size : source.getShape())
    bytes *= size;
  if (threads > 1 && outer > 0 && source.getDimSize(0) % threads == 0 &&
      bytes >= kMinParallelBytes && !copy->getParentOfType<scf::ForallOp>()) {
    int64_t share = source.getDimSize(0) / threads;
    auto forall =
        scf::ForallOp::create(rewriter, loc, ArrayRef<OpFoldResult>{rewriter.getIndexAttr(threads)},
                              ValueRange{}, std::nullopt);
    rewriter.setInsertionPointToStart(forall.getBody());
    Value first = arith::MulIOp::create(rewriter, loc, forall.getInductionVar(0),
                                        arith::ConstantIndexOp::create(rewriter, loc, share));
    lower[0] = first;
    upper[0] = arith::AddIOp::create(rewriter, loc, first,
                                     arith::ConstantIndexOp::create(rewriter, loc, share));
  }
  // Loops over the outer dimensions; in each, the run in whole chunks, then
  // its tail.
  scf::buildLoopNest(
      rewriter, loc, lower, upper, steps, [&](OpBuilder &b, Location l, ValueRange outerIndices) {
        auto move = [&](OpBuilder &nb, Value start, int64_t length) {
          SmallVector<Value> at(outerIndices);
          at.push_back(start);
          Value data =
              vector::TransferReadOp::create(nb, l, VectorType::get({length}, element), from, at,
                                             /*padding=*/std::nullopt, ArrayRef<bool>{true});
          vector::TransferWriteOp::create(nb, l, data, to, at, ArrayRef<bool>{true});
        };
        if (whole == chunk) {
          move(b, zero, chunk);
        } else if (whole > 0) {
          scf::buildLoopNest(
              b, l, zero, arith::ConstantIndexOp::create(b, l, whole).getResult(),
              arith::ConstantIndexOp::create(b, l, chunk).getResult(),
              [&](OpBuilder &nb, Location, ValueRange start) { move(nb, start.front(), chunk); });
        }
        if (run > whole)
          move(b, whole == 0 ? zero : arith::ConstantIndexOp::create(b, l, whole), run - whole);
      });
  rewriter.eraseOp(copy);
  return true;
}

struct StridedCopiesPass : public mithril::impl::MithrilStridedCopiesBase<StridedCopiesPass> {
  using MithrilStridedCopiesBase::MithrilStridedCopiesBase;

  void runOnOperation() override {
    SmallVector<memref::CopyOp> copies;
    getOperation().walk([&](memref::CopyOp copy) {
      auto source = dyn_cast<MemRefType>(copy.getSource().getType());
      auto target = dyn_cast<MemRefType>(copy.getTarget().getType());
      // A contiguous pair is one memcpy; a dynamic shape keeps the runtime's
      // general copy.
      if (source && target && source.hasStaticShape() && target.hasStaticShape() &&
          source.getRank() > 0 &&
          !(source.areTrailingDimsContiguous(source.getRank()) &&
            target.areTrailingDimsContiguous(target.getRank())))
        copies.push_back(copy);
    });
    IRRewriter rewriter(&getContext());
    for (memref::CopyOp copy : copies) {
      if (vectorRuns && copyInRuns(rewriter, copy, threads))
        continue;
      rewriter.setInsertionPoint(copy);
      rewriter.replaceOpWithNewOp<linalg::CopyOp>(copy, copy.getSource(), copy.getTarget());
    }
  }
};
} // namespace
