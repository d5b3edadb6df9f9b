//===- LowerScalarTransfers.cpp - one-element transfers as loads ----------===//
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
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mithril {
#define GEN_PASS_DEF_MITHRILLOWERSCALARTRANSFERS
#include "mithril/Codegen/CPU/Passes.h.inc"
} // namespace mithril

using namespace mlir;

namespace {
/// A transfer of one element of a buffer, in bounds and unmasked.
bool isOneElementOfBuffer(VectorTransferOpInterface transfer) {
  VectorType type = transfer.getVectorType();
  return type.getNumElements() == 1 && !type.isScalable() && !transfer.getMask() &&
         !transfer.hasOutOfBoundsDim() && isa<MemRefType>(transfer.getBase().getType());
}

/// A read of one element of a buffer (a 0-d read, or an in-bounds one of
/// a vector of one element) is a load and a broadcast, where it is: upstream
/// only rewrites reads that feed extracts. A 0-d read needs no padding
/// value: it has no dimension to be out of bounds in.
struct OneElementReadAsLoad : OpRewritePattern<vector::TransferReadOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(vector::TransferReadOp read,
                                PatternRewriter &rewriter) const override {
    if (!isOneElementOfBuffer(read))
      return failure();
    Value scalar =
        memref::LoadOp::create(rewriter, read.getLoc(), read.getBase(), read.getIndices());
    rewriter.replaceOpWithNewOp<vector::BroadcastOp>(read, read.getVectorType(), scalar);
    return success();
  }
};

/// Whether `op`, or an op inside it, may write or free memory (ops of
/// unknown effects may).
bool mayWriteOrFree(Operation *op) {
  WalkResult result = op->walk([](Operation *inner) {
    if (inner->hasTrait<OpTrait::HasRecursiveMemoryEffects>())
      return WalkResult::advance();
    auto effects = dyn_cast<MemoryEffectOpInterface>(inner);
    if (!effects || effects.hasEffect<MemoryEffects::Write>() ||
        effects.hasEffect<MemoryEffects::Free>())
      return WalkResult::interrupt();
    return WalkResult::advance();
  });
  return result.wasInterrupted();
}

/// Whether memory may change between `read` and `use`: an op after `read`
/// in its block, up to the one holding `use`, or that one itself around
/// `use`, may write or free memory.
bool mayChangeBetween(Operation *read, Operation *use) {
  Operation *holder = read->getBlock()->findAncestorOpInBlock(*use);
  if (!holder || !read->isBeforeInBlock(holder))
    return true;
  for (Operation *op = read->getNextNode(); op != holder; op = op->getNextNode())
    if (mayWriteOrFree(op))
      return true;
  return holder != use && mayWriteOrFree(holder);
}

/// One element of an in-bounds read of a buffer, as a load of that element
/// where it is extracted. Upstream's scalar transfer pattern does the same
/// without looking at what runs between the two: a vector read before a
/// free and extracted after it (a vector the kernel outliner writes to a
/// stack buffer after its caller freed the source) read freed memory.
struct ExtractOfReadAsLoad : OpRewritePattern<vector::ExtractOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(vector::ExtractOp extract,
                                PatternRewriter &rewriter) const override {
    auto read = extract.getSource().getDefiningOp<vector::TransferReadOp>();
    if (!read || isa<VectorType>(extract.getType()) || read.getMask() || read.hasOutOfBoundsDim() ||
        !isa<MemRefType>(read.getBase().getType()) || mayChangeBetween(read, extract))
      return failure();
    // The extracted position, dimension by dimension of the vector, added to
    // the index of the buffer dimension that vector dimension reads (none for
    // a broadcast dimension).
    AffineMap map = read.getPermutationMap();
    SmallVector<OpFoldResult> position = extract.getMixedPosition();
    SmallVector<Value> indices(read.getIndices());
    Location loc = extract.getLoc();
    for (auto [result, offset] : llvm::zip(map.getResults(), position)) {
      auto dim = dyn_cast<AffineDimExpr>(result);
      if (!dim) {
        auto constant = dyn_cast<AffineConstantExpr>(result);
        if (!constant || constant.getValue() != 0)
          return failure();
        continue;
      }
      std::optional<int64_t> value = getConstantIntValue(offset);
      if (value && *value < 0) // a poison position
        return failure();
      if (value && *value == 0)
        continue;
      Value step = value ? arith::ConstantIndexOp::create(rewriter, loc, *value).getResult()
                         : cast<Value>(offset);
      Value &index = indices[dim.getPosition()];
      index = arith::AddIOp::create(rewriter, loc, index, step);
    }
    rewriter.replaceOpWithNewOp<memref::LoadOp>(extract, read.getBase(), indices);
    return success();
  }
};

/// An in-bounds write of a one-element vector to a buffer, as a store of
/// its element.
struct OneElementWriteAsStore : OpRewritePattern<vector::TransferWriteOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(vector::TransferWriteOp write,
                                PatternRewriter &rewriter) const override {
    if (!isOneElementOfBuffer(write))
      return failure();
    SmallVector<int64_t> first(write.getVectorType().getRank(), 0);
    Value element = vector::ExtractOp::create(rewriter, write.getLoc(), write.getVector(), first);
    rewriter.replaceOpWithNewOp<memref::StoreOp>(write, element, write.getBase(),
                                                 write.getIndices());
    return success();
  }
};

struct LowerScalarTransfersPass
    : public mithril::impl::MithrilLowerScalarTransfersBase<LowerScalarTransfersPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<OneElementReadAsLoad, ExtractOfReadAsLoad, OneElementWriteAsStore>(&getContext());
    // Transfers, and extracts of a transfer's read.
    auto transfer = [](Operation *op) {
      if (auto extract = dyn_cast<vector::ExtractOp>(op))
        return extract.getSource().getDefiningOp<vector::TransferReadOp>() != nullptr;
      return isa<vector::TransferReadOp, vector::TransferWriteOp>(op);
    };
    if (failed(mithril::rewriteSelected(getOperation(), std::move(patterns), transfer)))
      signalPassFailure();
  }
};
} // namespace
