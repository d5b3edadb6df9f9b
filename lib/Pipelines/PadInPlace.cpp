//===- PadInPlace.cpp - compute padded tensors inside their padding -------===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//

#include "mithril/Pipelines/Pipelines.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/DestinationStyleOpInterface.h"

namespace mithril {
#define GEN_PASS_DEF_MITHRILPADINPLACE
#include "mithril/Pipelines/Passes.h.inc"
} // namespace mithril

using namespace mlir;

namespace {
/// The operand that gives `result` its initial value when that is an empty
/// tensor: a loop's init of its carried tensor, or a destination-style op's
/// init.
OpOperand *emptyInitOf(OpResult result) {
  Operation *producer = result.getOwner();
  OpOperand *init = nullptr;
  if (auto loop = dyn_cast<scf::ForOp>(producer))
    init = &loop.getInitArgsMutable()[result.getResultNumber()];
  else if (auto dps = dyn_cast<DestinationStyleOpInterface>(producer))
    init = dps.getTiedOpOperand(result);
  if (!init || !init->get().getDefiningOp<tensor::EmptyOp>())
    return nullptr;
  return init;
}

/// `dest` with its slice at `offsets` of `sizes` (unit strides) filled with
/// `value`.
Value fillSlice(OpBuilder &b, Location loc, Value dest, ArrayRef<OpFoldResult> offsets,
                ArrayRef<OpFoldResult> sizes, Value value) {
  SmallVector<OpFoldResult> strides(offsets.size(), b.getIndexAttr(1));
  Value slice = tensor::ExtractSliceOp::create(b, loc, dest, offsets, sizes, strides);
  slice = linalg::FillOp::create(b, loc, value, slice).getResult(0);
  return tensor::InsertSliceOp::create(b, loc, slice, dest, offsets, sizes, strides);
}

/// Runs of at most this many bits are written as one vector store; longer
/// ones as a fill of their slice (a memset for LLVM).
constexpr int64_t kMaxVectorRunBits = 8192;

/// `flat` with the `length` elements at `offset` set to `value`. (Vectors
/// of booleans are packed bits in memory, a tensor's booleans bytes: those
/// runs are filled.)
Value fillRun(OpBuilder &b, Location loc, Value flat, OpFoldResult offset, int64_t length,
              Value value) {
  Type element = cast<RankedTensorType>(flat.getType()).getElementType();
  if (element.isIntOrFloat() && element.getIntOrFloatBitWidth() % 8 == 0 &&
      length * element.getIntOrFloatBitWidth() <= kMaxVectorRunBits) {
    Value run = vector::BroadcastOp::create(b, loc, VectorType::get({length}, element), value);
    return vector::TransferWriteOp::create(b, loc, run, flat,
                                           getValueOrCreateConstantIndexOp(b, loc, offset),
                                           ArrayRef<bool>{true})
        .getResult();
  }
  return fillSlice(b, loc, flat, {offset}, {b.getIndexAttr(length)}, value);
}

/// A tensor of `type` whose elements outside the box at `low` of size
/// `inner` are `value` (the rest undefined). The padding alone is written,
/// as the runs of memory between the box's rows: a row's right padding and
/// the next row's left padding are one run, the bottom rows of a plane and
/// the top rows of the next another. One loop nest a dimension writes the
/// runs that dimension's step skips, each of one length: a vector store a
/// row where a slab a side was a loop of scalar stores a padded column
/// (which LLVM turned into scatters and unrolled: 1,900 stores in the bench
/// CNN training step's entry function, 8% of its optimized LLVM code).
Value fillOutsideBox(IRRewriter &rewriter, Location loc, RankedTensorType type,
                     ArrayRef<int64_t> low, ArrayRef<int64_t> inner, Value value) {
  // Dimensions after which nothing is padded merge into the one before
  // them: the box is contiguous there.
  SmallVector<int64_t> outerDims, lowDims, innerDims;
  for (auto [size, lo, in] : llvm::zip_equal(type.getShape(), low, inner)) {
    bool whole = lo == 0 && in == size;
    if (whole && !outerDims.empty()) {
      outerDims.back() *= size;
      lowDims.back() *= size;
      innerDims.back() *= size;
      continue;
    }
    outerDims.push_back(size);
    lowDims.push_back(lo);
    innerDims.push_back(in);
  }
  int64_t rank = outerDims.size();
  SmallVector<int64_t> strides(rank, 1);
  for (int64_t d = rank - 2; d >= 0; --d)
    strides[d] = strides[d + 1] * outerDims[d + 1];
  int64_t total = strides[0] * outerDims[0];
  // Written through a flat view of the padded tensor; the view folds away
  // once bufferized (the buffer stays the padded shape's, the caller's when
  // it is an output).
  SmallVector<ReassociationIndices> all{llvm::to_vector(llvm::seq<int64_t>(0, type.getRank()))};
  Value flat = tensor::CollapseShapeOp::create(
      rewriter, loc, tensor::EmptyOp::create(rewriter, loc, type.getShape(), type.getElementType()),
      all);
  if (total == 0) {
    // Nothing to write.
  } else if (llvm::is_contained(innerDims, 0)) {
    flat = fillRun(rewriter, loc, flat, rewriter.getIndexAttr(0), total, value);
  } else {
    // The box's first and last elements.
    int64_t first = 0, last = 0;
    for (int64_t d = 0; d < rank; ++d) {
      first += lowDims[d] * strides[d];
      last += (lowDims[d] + innerDims[d] - 1) * strides[d];
    }
    if (first > 0)
      flat = fillRun(rewriter, loc, flat, rewriter.getIndexAttr(0), first, value);
    if (last + 1 < total)
      flat = fillRun(rewriter, loc, flat, rewriter.getIndexAttr(last + 1), total - last - 1, value);
    // Stepping dimension d from one index of the box to the next skips the
    // run from the last row of the previous sub-box to the first of this.
    for (int64_t d = 0; d + 1 < rank; ++d) {
      int64_t gap = strides[d];
      for (int64_t e = d + 1; e < rank; ++e)
        gap -= (innerDims[e] - 1) * strides[e];
      gap -= 1;
      if (gap <= 0 || innerDims[d] == 1)
        continue;
      SmallVector<Value> lbs, ubs, steps;
      for (int64_t e = 0; e <= d; ++e) {
        lbs.push_back(arith::ConstantIndexOp::create(rewriter, loc, e == d ? 1 : 0));
        ubs.push_back(arith::ConstantIndexOp::create(rewriter, loc, innerDims[e]));
        steps.push_back(arith::ConstantIndexOp::create(rewriter, loc, 1));
      }
      scf::LoopNest nest = scf::buildLoopNest(
          rewriter, loc, lbs, ubs, steps, ValueRange{flat},
          [&](OpBuilder &b, Location loc, ValueRange ivs, ValueRange args) -> scf::ValueVector {
            // The sub-box's first element, less the run.
            Value offset = arith::ConstantIndexOp::create(b, loc, first - gap);
            for (auto [e, iv] : llvm::enumerate(ivs)) {
              Value step = arith::ConstantIndexOp::create(b, loc, strides[e]);
              offset =
                  arith::AddIOp::create(b, loc, offset, arith::MulIOp::create(b, loc, iv, step));
            }
            return {fillRun(b, loc, args[0], offset, gap, value)};
          });
      flat = nest.results[0];
    }
  }
  return tensor::ExpandShapeOp::create(rewriter, loc, type, flat, all);
}

/// fillOutsideBox's padding as one linalg.fill a slab, dimension by
/// dimension (each slab spans the box's extent in the dimensions before and
/// all of the dimensions after): no element written twice either.
Value fillSlabsOutsideBox(IRRewriter &rewriter, Location loc, RankedTensorType type,
                          ArrayRef<int64_t> low, ArrayRef<int64_t> inner, Value value) {
  ArrayRef<int64_t> outer = type.getShape();
  int64_t rank = type.getRank();
  Value filled = tensor::EmptyOp::create(rewriter, loc, outer, type.getElementType());
  for (int64_t d = 0; d < rank; ++d) {
    int64_t high = outer[d] - low[d] - inner[d];
    for (auto [start, length] :
         {std::pair(int64_t(0), low[d]), std::pair(low[d] + inner[d], high)}) {
      if (length == 0)
        continue;
      SmallVector<int64_t> slabOffsets, slabSizes;
      for (int64_t e = 0; e < rank; ++e) {
        slabOffsets.push_back(e < d ? low[e] : e == d ? start : 0);
        slabSizes.push_back(e < d ? inner[e] : e == d ? length : outer[e]);
      }
      filled = fillSlice(rewriter, loc, filled,
                         getAsIndexOpFoldResult(rewriter.getContext(), slabOffsets),
                         getAsIndexOpFoldResult(rewriter.getContext(), slabSizes), value);
    }
  }
  return filled;
}

/// The init the padded value (or the value a collapse of its dimensions
/// pads: a pooling gradient's [.., 7, 2, 2, 7, 2, 2] seen as [.., 28, 28])
/// starts from, when that is an empty tensor of an op in the pad's block;
/// null otherwise.
OpOperand *inPlaceInit(tensor::PadOp pad) {
  auto collapse = pad.getSource().getDefiningOp<tensor::CollapseShapeOp>();
  Value produced = collapse ? collapse.getSrc() : pad.getSource();
  auto result = dyn_cast<OpResult>(produced);
  if (!result || (collapse && !produced.hasOneUse()))
    return nullptr;
  OpOperand *init = emptyInitOf(result);
  if (!init || result.getOwner()->getBlock() != pad->getBlock())
    return nullptr;
  return init;
}

/// pad as the padding filled around its source: computed in place inside
/// it where the source's producer starts from an empty tensor (its other
/// readers, if any, then read the interior), else copied in.
void padInPlace(tensor::PadOp pad, IRRewriter &rewriter, bool vectorRuns) {
  Value padValue = pad.getConstantPaddingValue();
  RankedTensorType padded = pad.getResultType();
  if (!padValue || padded.getRank() == 0 || !padded.hasStaticShape() ||
      !pad.getSourceType().hasStaticShape() || !pad.getLow().empty() || !pad.getHigh().empty())
    return;
  Location loc = pad.getLoc();
  OpOperand *init = inPlaceInit(pad);
  // The padding is filled before the producer: a padding value defined
  // after it in the block is created again there if it is a constant, and
  // otherwise the source is copied in at the pad.
  Operation *valueDef = padValue.getDefiningOp();
  bool laterValue = init && valueDef && valueDef->getBlock() == pad->getBlock() &&
                    !valueDef->isBeforeInBlock(init->getOwner());
  if (laterValue && !matchPattern(padValue, m_Constant()))
    init = nullptr;
  Operation *producer = init ? init->getOwner() : pad.getOperation();
  rewriter.setInsertionPoint(producer);
  if (init && laterValue)
    padValue = rewriter.clone(*valueDef)->getResult(0);
  ArrayRef<int64_t> inner = pad.getSourceType().getShape();
  Value filled =
      vectorRuns ? fillOutsideBox(rewriter, loc, padded, pad.getStaticLow(), inner, padValue)
                 : fillSlabsOutsideBox(rewriter, loc, padded, pad.getStaticLow(), inner, padValue);
  SmallVector<OpFoldResult> offsets = pad.getMixedLowPad();
  SmallVector<OpFoldResult> sizes = getAsIndexOpFoldResult(rewriter.getContext(), inner);
  SmallVector<OpFoldResult> strides(padded.getRank(), rewriter.getIndexAttr(1));
  if (init) {
    Value interior = tensor::ExtractSliceOp::create(rewriter, loc, pad.getSourceType(), filled,
                                                    offsets, sizes, strides);
    if (auto collapse = pad.getSource().getDefiningOp<tensor::CollapseShapeOp>())
      interior = tensor::ExpandShapeOp::create(rewriter, loc, collapse.getSrcType(), interior,
                                               collapse.getReassociationIndices());
    rewriter.modifyOpInPlace(producer, [&] { init->set(interior); });
  }
  rewriter.setInsertionPoint(pad);
  rewriter.replaceOpWithNewOp<tensor::InsertSliceOp>(pad, pad.getSource(), filled, offsets, sizes,
                                                     strides);
}

struct PadInPlacePass : public mithril::impl::MithrilPadInPlaceBase<PadInPlacePass> {
  using MithrilPadInPlaceBase::MithrilPadInPlaceBase;
  void runOnOperation() override {
    SmallVector<tensor::PadOp> pads;
    getOperation().walk([&](tensor::PadOp pad) { pads.push_back(pad); });
    IRRewriter rewriter(&getContext());
    for (tensor::PadOp pad : pads)
      padInPlace(pad, rewriter, vectorRuns);
  }
};
} // namespace
