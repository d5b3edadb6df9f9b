//===- UnrollTransfers.cpp - n-d vector transfers as unrolled 1-d ones -----===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//

#include "mithril/Codegen/CPU/Passes.h"
#include "mithril/Support/RewriteSelected.h"

#include "mlir/Conversion/VectorToSCF/VectorToSCF.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/Vector/Transforms/LoweringPatterns.h"

namespace mithril {
#define GEN_PASS_DEF_MITHRILUNROLLTRANSFERS
#include "mithril/Codegen/CPU/Passes.h.inc"
} // namespace mithril

using namespace mlir;

namespace {
bool isTransfer(Operation *op) { return isa<vector::TransferReadOp, vector::TransferWriteOp>(op); }

/// Which elements of a strided read to load.
struct StridedRead {
  unsigned dim;   // the buffer dimension the read runs along
  int64_t loaded; // its first `loaded` elements (a constant mask's), the
                  // rest the padding
};

/// A 1-d read that is not of contiguous elements: along a dimension other
/// than the buffer's innermost (a column), or along an innermost one whose
/// stride is not 1 (every other element of a row), in bounds, unmasked or
/// under a constant mask, of more than kMinStridedElements and at most
/// kMaxStridedElements. Shorter ones (a register tile's column of A) keep
/// upstream's loop, which LLVM unrolls fully into the same loads; writes
/// along a column are one-element writes after upstream's permutation
/// lowering already.
constexpr int64_t kMinStridedElements = 8, kMaxStridedElements = 64;
std::optional<StridedRead> stridedRead(vector::TransferReadOp op) {
  VectorType type = op.getVectorType();
  auto buffer = dyn_cast<MemRefType>(op.getBase().getType());
  int64_t elements = type.getNumElements();
  if (!buffer || buffer.getElementType() != type.getElementType() || type.getRank() != 1 ||
      type.isScalable() || !op.isDimInBounds(0) || elements <= kMinStridedElements ||
      elements > kMaxStridedElements)
    return std::nullopt;
  AffineMap map = op.getPermutationMap();
  auto dim = dyn_cast<AffineDimExpr>(map.getResult(0));
  if (!dim)
    return std::nullopt;
  if (map.isMinorIdentity()) {
    SmallVector<int64_t> strides;
    int64_t offset;
    if (failed(buffer.getStridesAndOffset(strides, offset)) || strides.back() == 1 ||
        ShapedType::isDynamic(strides.back()))
      return std::nullopt;
  }
  int64_t loaded = elements;
  if (Value mask = op.getMask()) {
    auto constant = mask.getDefiningOp<vector::ConstantMaskOp>();
    if (!constant)
      return std::nullopt;
    loaded = constant.getMaskDimSizes()[0];
  }
  return StridedRead{dim.getPosition(), loaded};
}

/// The indices of element `i` of a transfer along `dim`.
SmallVector<Value> elementIndices(OpBuilder &b, Location loc, ValueRange indices, unsigned dim,
                                  int64_t i) {
  SmallVector<Value> at(indices);
  if (i != 0)
    at[dim] = arith::AddIOp::create(b, loc, at[dim], arith::ConstantIndexOp::create(b, loc, i));
  return at;
}

/// A strided 1-d read as one scalar load an element. Upstream lowers it to a
/// loop inserting each element at a dynamic position, which LLVM compiles
/// through a stack slot when it does not unroll the loop: ~70 instructions
/// an element (a Winograd input's parity planes from rows of 58: 10 of the
/// convolution's 12.7 ms; on AVX2, from rows of 30 under a mask).
struct StridedReadAsLoads : OpRewritePattern<vector::TransferReadOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(vector::TransferReadOp read,
                                PatternRewriter &rewriter) const override {
    std::optional<StridedRead> strided = stridedRead(read);
    if (!strided)
      return failure();
    Location loc = read.getLoc();
    SmallVector<Value> elements;
    for (int64_t i = 0, e = read.getVectorType().getNumElements(); i < e; ++i)
      elements.push_back(i < strided->loaded ? memref::LoadOp::create(
                                                   rewriter, loc, read.getBase(),
                                                   elementIndices(rewriter, loc, read.getIndices(),
                                                                  strided->dim, i))
                                                   .getResult()
                                             : read.getPadding());
    rewriter.replaceOpWithNewOp<vector::FromElementsOp>(read, read.getVectorType(), elements);
    return success();
  }
};

struct UnrollTransfersPass : public mithril::impl::MithrilUnrollTransfersBase<UnrollTransfersPass> {
  void runOnOperation() override {
    // Permutation maps first, as upstream's convert-vector-to-scf does.
    RewritePatternSet permutations(&getContext());
    vector::populateVectorTransferPermutationMapLoweringPatterns(permutations);
    if (failed(mithril::rewriteSelected(getOperation(), std::move(permutations), isTransfer)))
      return signalPassFailure();
    RewritePatternSet unroll(&getContext());
    populateVectorToSCFConversionPatterns(unroll, VectorTransferToSCFOptions().enableFullUnroll());
    unroll.add<StridedReadAsLoads>(&getContext(), /*benefit=*/2);
    if (failed(mithril::rewriteSelected(getOperation(), std::move(unroll), isTransfer)))
      return signalPassFailure();
  }
};
} // namespace
