//===- SplitMaskedWrites.cpp - prefix-masked writes as plain stores -------===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//

#include "mithril/Codegen/CPU/Passes.h"

#include "mithril/Support/RewriteSelected.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Matchers.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/bit.h"

#include <optional>

namespace mithril {
#define GEN_PASS_DEF_MITHRILSPLITMASKEDWRITES
#include "mithril/Codegen/CPU/Passes.h.inc"
} // namespace mithril

using namespace mlir;

namespace {
/// The lanes set in `mask`, a 1-D constant mask of a prefix: a
/// vector.constant_mask, a row of a multi-dimensional one (unrolling to 1-D
/// extracts the rows), or a constant of i1 true then false; none otherwise.
std::optional<int64_t> constantPrefix(Value mask) {
  if (auto constant = mask.getDefiningOp<vector::ConstantMaskOp>()) {
    if (constant.getMaskDimSizes().size() == 1)
      return constant.getMaskDimSizes()[0];
    return std::nullopt;
  }
  if (auto extract = mask.getDefiningOp<vector::ExtractOp>()) {
    auto rows = extract.getSource().getDefiningOp<vector::ConstantMaskOp>();
    auto type = dyn_cast<VectorType>(extract.getType());
    if (!rows || !type || type.getRank() != 1 || extract.hasDynamicPosition())
      return std::nullopt;
    ArrayRef<int64_t> sizes = rows.getMaskDimSizes();
    ArrayRef<int64_t> position = extract.getStaticPosition();
    if (position.size() + 1 != sizes.size())
      return std::nullopt;
    for (auto [index, size] : llvm::zip(position, sizes))
      if (index >= size)
        return 0;
    return sizes.back();
  }
  DenseIntElementsAttr bits;
  if (matchPattern(mask, m_Constant(&bits)) && bits.getType().getRank() == 1) {
    SmallVector<bool> values(bits.getValues<bool>());
    int64_t count = llvm::find(values, false) - values.begin();
    if (std::all_of(values.begin() + count, values.end(), [](bool v) { return !v; }))
      return count;
  }
  return std::nullopt;
}

/// A 1-D write to a buffer of unit innermost stride, in bounds, whose mask
/// is a constant prefix of `count` lanes (0 < count < lanes), as writes of
/// the prefix's power-of-2 pieces (7 lanes of 8: 4, 2 and 1), none masked.
struct PrefixMaskedWriteAsPieces : OpRewritePattern<vector::TransferWriteOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(vector::TransferWriteOp write,
                                PatternRewriter &rewriter) const override {
    VectorType type = write.getVectorType();
    auto buffer = dyn_cast<MemRefType>(write.getBase().getType());
    if (!buffer || type.getRank() != 1 || type.isScalable() || !write.getMask() ||
        write.hasOutOfBoundsDim() || !write.getPermutationMap().isMinorIdentity())
      return failure();
    std::optional<int64_t> prefix = constantPrefix(write.getMask());
    if (!prefix)
      return failure();
    int64_t count = *prefix, lanes = type.getNumElements();
    if (count <= 0 || count >= lanes)
      return failure();
    SmallVector<int64_t> strides;
    int64_t offset;
    if (failed(buffer.getStridesAndOffset(strides, offset)) || strides.empty() ||
        strides.back() != 1)
      return failure();
    Location loc = write.getLoc();
    SmallVector<Value> indices(write.getIndices());
    Value last = indices.back();
    for (int64_t start = 0; start < count;) {
      int64_t size = static_cast<int64_t>(llvm::bit_floor(static_cast<uint64_t>(count - start)));
      Value piece = vector::ExtractStridedSliceOp::create(
          rewriter, loc, write.getVector(), ArrayRef<int64_t>{start}, ArrayRef<int64_t>{size},
          ArrayRef<int64_t>{1});
      indices.back() =
          start == 0 ? last
                     : arith::AddIOp::create(rewriter, loc, last,
                                             arith::ConstantIndexOp::create(rewriter, loc, start));
      vector::TransferWriteOp::create(rewriter, loc, piece, write.getBase(), indices,
                                      ArrayRef<bool>{true});
      start += size;
    }
    rewriter.eraseOp(write);
    return success();
  }
};

struct SplitMaskedWritesPass
    : public mithril::impl::MithrilSplitMaskedWritesBase<SplitMaskedWritesPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<PrefixMaskedWriteAsPieces>(&getContext());
    auto write = [](Operation *op) { return isa<vector::TransferWriteOp>(op); };
    if (failed(mithril::rewriteSelected(getOperation(), std::move(patterns), write)))
      signalPassFailure();
  }
};
} // namespace
