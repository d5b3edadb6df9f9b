//===- PadInPlace.cpp - compute padded tensors inside their padding -------===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//

#include "mithril/Pipelines/Pipelines.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
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

/// A tensor of `type` whose elements outside the box at `low` of size
/// `inner` are `value` (the rest undefined): the padding alone is filled,
/// slab by slab, dimension by dimension (each slab spans the box's extent
/// in the dimensions before and all of the dimensions after), so that no
/// element is written twice and none inside the box at all.
Value fillOutsideBox(IRRewriter &rewriter, Location loc, RankedTensorType type,
                     ArrayRef<int64_t> low, ArrayRef<int64_t> inner, Value value) {
  ArrayRef<int64_t> outer = type.getShape();
  int64_t rank = type.getRank();
  SmallVector<OpFoldResult> strides(rank, rewriter.getIndexAttr(1));
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
      SmallVector<OpFoldResult> offsets =
          getAsIndexOpFoldResult(rewriter.getContext(), slabOffsets);
      SmallVector<OpFoldResult> sizes = getAsIndexOpFoldResult(rewriter.getContext(), slabSizes);
      Value slab = tensor::ExtractSliceOp::create(
          rewriter, loc, RankedTensorType::get(slabSizes, type.getElementType()), filled, offsets,
          sizes, strides);
      slab = linalg::FillOp::create(rewriter, loc, value, slab).getResult(0);
      filled = tensor::InsertSliceOp::create(rewriter, loc, slab, filled, offsets, sizes, strides);
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
void padInPlace(tensor::PadOp pad, IRRewriter &rewriter) {
  Value padValue = pad.getConstantPaddingValue();
  RankedTensorType padded = pad.getResultType();
  if (!padValue || !padded.hasStaticShape() || !pad.getSourceType().hasStaticShape() ||
      !pad.getLow().empty() || !pad.getHigh().empty())
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
  Value filled = fillOutsideBox(rewriter, loc, padded, pad.getStaticLow(), inner, padValue);
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
  void runOnOperation() override {
    SmallVector<tensor::PadOp> pads;
    getOperation().walk([&](tensor::PadOp pad) { pads.push_back(pad); });
    IRRewriter rewriter(&getContext());
    for (tensor::PadOp pad : pads)
      padInPlace(pad, rewriter);
  }
};
} // namespace
