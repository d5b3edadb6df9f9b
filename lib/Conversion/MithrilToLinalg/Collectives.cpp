//===- Collectives.cpp - all_reduce to a runtime call ---------------------===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//

#include "Utils.h"

#include "mithril/Dialect/Mithril/IR/MithrilOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace mithril;
using namespace mithril::linalg_lowering;

namespace {

/// all_reduce: the host's collective (mithrilAllReduceF32 / F64, which call
/// MPI_Allreduce over the op's group) reads the operand's buffer and writes a
/// new one. Both go
/// as unranked memrefs, whose descriptors give the sizes and strides.
struct AllReducePattern : OpRewritePattern<AllReduceOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(AllReduceOp op, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    auto type = cast<RankedTensorType>(op.getType());
    Type element = type.getElementType();
    StringRef callee = element.isF64() ? "mithrilAllReduceF64" : "mithrilAllReduceF32";
    auto unranked = UnrankedMemRefType::get(element, /*memorySpace=*/nullptr);
    auto module = op->getParentOfType<ModuleOp>();
    if (!SymbolTable::lookupSymbolIn(module, callee)) {
      OpBuilder::InsertionGuard guard(rewriter);
      rewriter.setInsertionPointToStart(module.getBody());
      auto decl = func::FuncOp::create(
          rewriter, loc, callee,
          rewriter.getFunctionType({rewriter.getI64Type(), unranked, unranked}, {}));
      decl.setPrivate();
    }
    // The operand's buffer may be a strided view: any layout.
    SmallVector<int64_t> strides(type.getRank(), ShapedType::kDynamic);
    auto anyLayout = MemRefType::get(type.getShape(), element,
                                     StridedLayoutAttr::get(ctx, ShapedType::kDynamic, strides));
    Value source = bufferization::ToBufferOp::create(rewriter, loc, anyLayout, op.getInput(),
                                                     /*read_only=*/true);
    SmallVector<Value> dynamicSizes;
    for (int64_t i = 0; i < type.getRank(); ++i)
      if (type.isDynamicDim(i))
        dynamicSizes.push_back(tensor::DimOp::create(rewriter, loc, op.getInput(), i));
    auto resultBuffer = MemRefType::get(type.getShape(), element);
    Value sum = memref::AllocOp::create(rewriter, loc, resultBuffer, dynamicSizes,
                                        rewriter.getI64IntegerAttr(64));
    // The runtime's group numbers: 0 data, 1 tensor.
    Value group = arith::ConstantOp::create(
        rewriter, loc, rewriter.getI64IntegerAttr(op.getGroup() == "tensor" ? 1 : 0));
    func::CallOp::create(rewriter, loc, callee, TypeRange{},
                         ValueRange{group, memref::CastOp::create(rewriter, loc, unranked, source),
                                    memref::CastOp::create(rewriter, loc, unranked, sum)});
    rewriter.replaceOpWithNewOp<bufferization::ToTensorOp>(op, type, sum, /*restrict=*/true,
                                                           /*writable=*/true);
    return success();
  }
};

/// replicate: the identity forward (its sum is in the gradient).
struct ReplicatePattern : OpRewritePattern<ReplicateOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ReplicateOp op, PatternRewriter &rewriter) const override {
    rewriter.replaceOp(op, op.getInput());
    return success();
  }
};

} // namespace

void mithril::linalg_lowering::populateCollectivePatterns(RewritePatternSet &patterns) {
  patterns.add<AllReducePattern, ReplicatePattern>(patterns.getContext());
}
