//===- X86DotProducts.cpp - i8 register-tile contractions as vpdpbusd -----===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//

#include "mithril/Codegen/CPU/Passes.h"

#include "mithril/Support/RewriteSelected.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mithril {
#define GEN_PASS_DEF_MITHRILX86DOTPRODUCTS
#include "mithril/Codegen/CPU/Passes.h.inc"
} // namespace mithril

using namespace mlir;

namespace {
/// acc (16 x i32) plus the sums of each lane's four products of unsigned
/// bytes (64 x i8) by signed bytes (64 x i8): the instruction itself.
Value vpdpbusd(PatternRewriter &rewriter, Location loc, Value acc, Value unsignedBytes,
               Value signedBytes) {
  return LLVM::CallIntrinsicOp::create(
             rewriter, loc, acc.getType(),
             StringAttr::get(rewriter.getContext(), "llvm.x86.avx512.vpdpbusd.512"),
             ValueRange{acc, unsignedBytes, signedBytes})
      .getResult(0);
}

/// acc[n] += sum_q zext(a[q]) * sext(b[n][q]) over vector<4xi8> a,
/// vector<16x4xi8> b and vector<16xi32> acc: one vpdpbusd, with a's quad
/// broadcast to each 32-bit lane.
struct ContractionToVpdpbusd : OpRewritePattern<vector::ContractionOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(vector::ContractionOp op,
                                PatternRewriter &rewriter) const override {
    MLIRContext *ctx = op.getContext();
    auto lhs = op.getLhs().getDefiningOp<arith::ExtUIOp>();
    auto rhs = op.getRhs().getDefiningOp<arith::ExtSIOp>();
    auto accType = dyn_cast<VectorType>(op.getAccType());
    Type i8 = rewriter.getI8Type(), i32 = rewriter.getI32Type();
    if (!lhs || !rhs || op.getKind() != vector::CombiningKind::ADD || !accType ||
        accType != VectorType::get({16}, i32) ||
        lhs.getIn().getType() != VectorType::get({4}, i8) ||
        rhs.getIn().getType() != VectorType::get({16, 4}, i8))
      return failure();
    AffineExpr n, q;
    bindDims(ctx, n, q);
    SmallVector<AffineMap> expected = {AffineMap::get(2, 0, {q}, ctx),
                                       AffineMap::get(2, 0, {n, q}, ctx),
                                       AffineMap::get(2, 0, {n}, ctx)};
    if (op.getIndexingMapsArray() != expected)
      return failure();
    Location loc = op.getLoc();
    auto bytes = VectorType::get({64}, i8);
    Value quad = vector::ExtractOp::create(
        rewriter, loc,
        vector::BitCastOp::create(rewriter, loc, VectorType::get({1}, i32), lhs.getIn()),
        ArrayRef<int64_t>{0});
    Value broadcast = vector::BitCastOp::create(
        rewriter, loc, bytes, vector::BroadcastOp::create(rewriter, loc, accType, quad));
    Value columns = vector::ShapeCastOp::create(rewriter, loc, bytes, rhs.getIn());
    rewriter.replaceOp(op, vpdpbusd(rewriter, loc, op.getAcc(), broadcast, columns));
    return success();
  }
};

/// acc[l] += sum_q zext(a[l][q]) * sext(b[l][q]) over vector<16x4xi8> a
/// and b and vector<16xi32> acc: one vpdpbusd on both operands as they are
/// (a matrix-vector product's lanes, each a quad of one row).
struct LanewiseContractionToVpdpbusd : OpRewritePattern<vector::ContractionOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(vector::ContractionOp op,
                                PatternRewriter &rewriter) const override {
    MLIRContext *ctx = op.getContext();
    auto lhs = op.getLhs().getDefiningOp<arith::ExtUIOp>();
    auto rhs = op.getRhs().getDefiningOp<arith::ExtSIOp>();
    auto accType = dyn_cast<VectorType>(op.getAccType());
    Type i8 = rewriter.getI8Type(), i32 = rewriter.getI32Type();
    auto quads = VectorType::get({16, 4}, i8);
    if (!lhs || !rhs || op.getKind() != vector::CombiningKind::ADD || !accType ||
        accType != VectorType::get({16}, i32) || lhs.getIn().getType() != quads ||
        rhs.getIn().getType() != quads)
      return failure();
    AffineExpr l, q;
    bindDims(ctx, l, q);
    SmallVector<AffineMap> expected = {AffineMap::get(2, 0, {l, q}, ctx),
                                       AffineMap::get(2, 0, {l, q}, ctx),
                                       AffineMap::get(2, 0, {l}, ctx)};
    if (op.getIndexingMapsArray() != expected)
      return failure();
    Location loc = op.getLoc();
    auto bytes = VectorType::get({64}, i8);
    Value unsignedBytes = vector::ShapeCastOp::create(rewriter, loc, bytes, lhs.getIn());
    Value signedBytes = vector::ShapeCastOp::create(rewriter, loc, bytes, rhs.getIn());
    rewriter.replaceOp(op, vpdpbusd(rewriter, loc, op.getAcc(), unsignedBytes, signedBytes));
    return success();
  }
};

/// xori(shape_cast(x), splat c) -> shape_cast(xori(x, splat c)): the sign
/// flip that turns an activation's signed bytes into vpdpbusd's unsigned ones,
/// done on the bytes as they were read (one vector<64xi8>) instead of on the
/// 16 x 4 tile, which the LLVM lowering unrolled into 16 rows and rebuilt with
/// 32 shuffles (1,440 of an int8 MLP's 10,800 LLVM dialect ops).
struct XorBeforeShapeCast : OpRewritePattern<arith::XOrIOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(arith::XOrIOp op, PatternRewriter &rewriter) const override {
    auto cast = op.getLhs().getDefiningOp<vector::ShapeCastOp>();
    DenseIntElementsAttr mask;
    if (!cast || !matchPattern(op.getRhs(), m_Constant(&mask)) || !mask.isSplat())
      return failure();
    auto sourceType = cast.getSourceVectorType();
    Location loc = op.getLoc();
    Value splat = arith::ConstantOp::create(
        rewriter, loc, sourceType,
        DenseElementsAttr::get(sourceType, mask.getSplatValue<Attribute>()));
    Value flipped = arith::XOrIOp::create(rewriter, loc, cast.getSource(), splat);
    rewriter.replaceOpWithNewOp<vector::ShapeCastOp>(op, op.getType(), flipped);
    return success();
  }
};

struct X86DotProductsPass : public mithril::impl::MithrilX86DotProductsBase<X86DotProductsPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<ContractionToVpdpbusd, LanewiseContractionToVpdpbusd, XorBeforeShapeCast>(
        &getContext());
    auto contractionOrFlip = [](Operation *op) {
      return isa<vector::ContractionOp>(op) ||
             (isa<arith::XOrIOp>(op) && isa<VectorType>(op->getResult(0).getType()));
    };
    if (failed(mithril::rewriteSelected(getOperation(), std::move(patterns), contractionOrFlip)))
      signalPassFailure();
  }
};
} // namespace
