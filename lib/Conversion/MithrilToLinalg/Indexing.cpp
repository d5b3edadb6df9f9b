//===- Indexing.cpp - gathers by index to linalg --------------------------===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//

#include "Utils.h"

#include "mithril/Conversion/MithrilToLinalg/MithrilToLinalg.h"
#include "mithril/Dialect/Mithril/IR/MithrilOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StructuredOpsUtils.h"
#include "mlir/IR/AffineMap.h"

#include <limits>

using namespace mlir;
using namespace mithril;
using namespace mithril::linalg_lowering;

/// Where an index tensor comes from, for messages: the terminal it is (a
/// converted model is a func whose arguments keep their terminal names), or
/// the op that computes it.
static std::string describeIndices(Value indices) {
  if (auto arg = dyn_cast<BlockArgument>(indices))
    if (auto func = dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp()))
      if (auto name = func.getArgAttrOfType<StringAttr>(arg.getArgNumber(), kTerminalNameAttr))
        return "terminal '" + name.str() + "'";
  return describeValue(indices);
}

/// The op's name in the model (its location's name), or its mnemonic.
static std::string describeSite(Operation *op) {
  std::string site = op->getName().getStringRef().str();
  Location loc = op->getLoc();
  if (auto fused = dyn_cast<FusedLoc>(loc))
    for (Location inner : fused.getLocations())
      if (isa<NameLoc>(inner))
        loc = inner;
  if (auto name = dyn_cast<NameLoc>(loc))
    site += " '" + name.getName().str() + "'";
  return site;
}

/// A pointer (as i64) to `text`, NUL-terminated, in a private constant global
/// of the module.
static Value messagePointer(PatternRewriter &rewriter, Location loc, Operation *op,
                            StringRef text) {
  auto module = op->getParentOfType<ModuleOp>();
  SmallVector<int8_t> bytes(text.begin(), text.end());
  bytes.push_back(0);
  auto type = MemRefType::get({static_cast<int64_t>(bytes.size())}, rewriter.getI8Type());
  auto data = DenseElementsAttr::get(RankedTensorType::get(type.getShape(), rewriter.getI8Type()),
                                     ArrayRef<int8_t>(bytes));
  std::string name;
  for (unsigned n = 0;; ++n) {
    name = "__mithril_index_message_" + std::to_string(n);
    if (!SymbolTable::lookupSymbolIn(module, name))
      break;
  }
  {
    OpBuilder::InsertionGuard guard(rewriter);
    rewriter.setInsertionPointToStart(module.getBody());
    memref::GlobalOp::create(rewriter, loc, name, rewriter.getStringAttr("private"), type, data,
                             /*constant=*/true, /*alignment=*/nullptr);
  }
  Value global = memref::GetGlobalOp::create(rewriter, loc, type, name);
  Value address = memref::ExtractAlignedPointerAsIndexOp::create(rewriter, loc, global);
  return arith::IndexCastOp::create(rewriter, loc, rewriter.getI64Type(), address);
}

void linalg_lowering::reportIndicesOutOfRange(PatternRewriter &rewriter, Location loc,
                                              Operation *op, Value indices, OpFoldResult bound) {
  MLIRContext *ctx = rewriter.getContext();
  RankedTensorType it = tensorType(indices);
  Type i64 = rewriter.getI64Type();
  auto scalar = RankedTensorType::get({}, i64);
  auto filled = [&](int64_t v) {
    Value init = tensor::EmptyOp::create(rewriter, loc, scalar.getShape(), i64);
    Value c = arith::ConstantOp::create(rewriter, loc, rewriter.getI64IntegerAttr(v));
    return linalg::FillOp::create(rewriter, loc, c, init).getResult(0);
  };
  Value minInit = filled(std::numeric_limits<int64_t>::max());
  Value maxInit = filled(std::numeric_limits<int64_t>::min());
  int64_t rank = it.getRank();
  AffineMap toScalar = AffineMap::get(rank, 0, {}, ctx);
  SmallVector<AffineMap> maps = {rewriter.getMultiDimIdentityMap(rank), toScalar, toScalar};
  SmallVector<utils::IteratorType> iterators(rank, utils::IteratorType::reduction);
  auto range = linalg::GenericOp::create(
      rewriter, loc, TypeRange{scalar, scalar}, indices, ValueRange{minInit, maxInit}, maps,
      iterators, [&](OpBuilder &b, Location l, ValueRange a) {
        Value x = a[0];
        if (x.getType() != i64)
          x = arith::ExtSIOp::create(b, l, i64, x);
        linalg::YieldOp::create(b, l,
                                ValueRange{arith::MinSIOp::create(b, l, x, a[1]).getResult(),
                                           arith::MaxSIOp::create(b, l, x, a[2]).getResult()});
      });
  Value lowest = tensor::ExtractOp::create(rewriter, loc, range.getResult(0), ValueRange{});
  Value highest = tensor::ExtractOp::create(rewriter, loc, range.getResult(1), ValueRange{});
  Value limit = arith::IndexCastOp::create(rewriter, loc, i64,
                                           getValueOrCreateConstantIndexOp(rewriter, loc, bound));
  Value zero = arith::ConstantOp::create(rewriter, loc, rewriter.getI64IntegerAttr(0));
  Value negative = arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::slt, lowest, zero);
  Value tooLarge = arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::sge, highest, limit);
  Value bad = arith::OrIOp::create(rewriter, loc, negative, tooLarge);

  declarePrivateFunction(rewriter, op->getParentOfType<ModuleOp>(), kIndexErrorFunction,
                         rewriter.getFunctionType({i64, i64, i64}, {}));
  std::string text = describeSite(op) + ": an index of " + describeIndices(indices);
  auto check = scf::IfOp::create(rewriter, loc, bad, /*withElseRegion=*/false);
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPointToStart(check.thenBlock());
  Value value = arith::SelectOp::create(rewriter, loc, negative, lowest, highest);
  Value message = messagePointer(rewriter, loc, op, text);
  func::CallOp::create(rewriter, loc, kIndexErrorFunction, TypeRange{},
                       ValueRange{value, limit, message});
}

Value linalg_lowering::clampIndex(OpBuilder &b, Location loc, Value index, Value bound) {
  Value i = arith::IndexCastOp::create(b, loc, b.getIndexType(), index);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value last = arith::SubIOp::create(b, loc, bound, one);
  Value below = arith::MinSIOp::create(b, loc, i, last);
  return arith::MaxSIOp::create(b, loc, below, zero);
}

namespace {

/// Embedding gradient: a zero table to which each lookup adds its gradient
/// row, lookup after lookup (a scatter-add: rows looked up more than once
/// sum). O(lookups x width), where comparing every row of the table with
/// every lookup cost O(vocabulary x lookups x width): a GPT-2 vocabulary
/// of 50257 rows makes that 50257 times the work.
struct EmbeddingGradPattern : OpRewritePattern<EmbeddingGradOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(EmbeddingGradOp op, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    RankedTensorType out = op.getType(), it = op.getIndices().getType();
    if (!out.hasStaticShape() || !it.hasStaticShape())
      return rewriter.notifyMatchFailure(op, "dynamic shapes");
    int64_t rank = it.getRank(), lookups = it.getNumElements(), width = out.getDimSize(1);
    // Indices as one axis, gradients as [lookups, width] (free collapses).
    Value indices = op.getIndices(), grad = op.getGrad();
    if (rank == 0) {
      indices = tensor::ExpandShapeOp::create(rewriter, loc,
                                              RankedTensorType::get({1}, it.getElementType()),
                                              indices, ArrayRef<ReassociationIndices>{});
      grad = tensor::ExpandShapeOp::create(rewriter, loc,
                                           RankedTensorType::get({1, width}, out.getElementType()),
                                           grad, ArrayRef<ReassociationIndices>{{0, 1}});
    } else if (rank > 1) {
      SmallVector<ReassociationIndices> rows(1);
      for (int64_t i = 0; i < rank; ++i)
        rows[0].push_back(i);
      indices = tensor::CollapseShapeOp::create(rewriter, loc, indices, rows);
      rows.push_back({rank});
      grad = tensor::CollapseShapeOp::create(rewriter, loc, grad, rows);
    }
    Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
    Value count = arith::ConstantIndexOp::create(rewriter, loc, lookups);
    Value columns = arith::ConstantIndexOp::create(rewriter, loc, width);
    Value tableRows = arith::ConstantIndexOp::create(rewriter, loc, out.getDimSize(0));
    auto table = forLoop(
        rewriter, loc, zero, count, zeroFilled(rewriter, loc, out),
        [&](OpBuilder &b, Location l, Value n, ValueRange carried) -> SmallVector<Value> {
          // The forward lookup reported indices out of range; clamped here
          // so that no store can leave the table.
          Value row = clampIndex(b, l, tensor::ExtractOp::create(b, l, indices, n), tableRows);
          auto added = forLoop(
              b, l, zero, columns, carried[0],
              [&](OpBuilder &cb, Location cl, Value d, ValueRange acc) -> SmallVector<Value> {
                Value sum = arith::AddFOp::create(cb, cl, extract(cb, cl, acc[0], row, d),
                                                  extract(cb, cl, grad, n, d));
                return {tensor::InsertOp::create(cb, cl, sum, acc[0], ValueRange{row, d})};
              });
          return {added.getResult(0)};
        });
    rewriter.replaceOp(op, table.getResult(0));
    return success();
  }
};

struct EmbeddingPattern : OpRewritePattern<EmbeddingOp> {
  EmbeddingPattern(MLIRContext *ctx, bool indexErrors)
      : OpRewritePattern(ctx), indexErrors(indexErrors) {}
  bool indexErrors;
  LogicalResult matchAndRewrite(EmbeddingOp op, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    OpFoldResult rows = dimOf(rewriter, loc, op.getWeight(), 0);
    if (indexErrors)
      reportIndicesOutOfRange(rewriter, loc, op, op.getIndices(), rows);
    Value rowCount = getValueOrCreateConstantIndexOp(rewriter, loc, rows);
    RankedTensorType out = op.getType(), idx = op.getIndices().getType();
    int64_t rank = out.getRank();
    SmallVector<OpFoldResult> sizes;
    for (int64_t i = 0; i < idx.getRank(); ++i)
      sizes.push_back(dimOf(rewriter, loc, op.getIndices(), i));
    sizes.push_back(dimOf(rewriter, loc, op.getWeight(), 1));
    Value init = emptyTensor(rewriter, loc, out, sizes);
    MLIRContext *ctx = rewriter.getContext();
    SmallVector<AffineExpr> ie;
    for (int64_t i = 0; i < idx.getRank(); ++i)
      ie.push_back(getAffineDimExpr(i, ctx));
    SmallVector<AffineMap> maps = {AffineMap::get(rank, 0, ie, ctx),
                                   rewriter.getMultiDimIdentityMap(rank)};
    SmallVector<utils::IteratorType> iterators(rank, utils::IteratorType::parallel);
    Value weight = op.getWeight();
    Value result =
        linalg::GenericOp::create(
            rewriter, loc, TypeRange{out}, ValueRange{op.getIndices()}, init, maps, iterators,
            [&](OpBuilder &b, Location l, ValueRange a) {
              Value row = clampIndex(b, l, a[0], rowCount);
              Value col = linalg::IndexOp::create(b, l, rank - 1);
              linalg::YieldOp::create(
                  b, l, tensor::ExtractOp::create(b, l, weight, ValueRange{row, col}).getResult());
            })
            .getResult(0);
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// one_hot: compare the index with the position along the new axis.
struct OneHotPattern : OpRewritePattern<OneHotOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(OneHotOp op, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    RankedTensorType out = op.getType();
    int64_t rank = out.getRank();
    int64_t axis = normalizeAxis(op.getAxis(), rank);
    SmallVector<OpFoldResult> sizes;
    SmallVector<AffineExpr> idxExprs;
    for (int64_t i = 0, j = 0; i < rank; ++i) {
      if (i == axis) {
        sizes.push_back(rewriter.getIndexAttr(op.getNumClasses()));
        continue;
      }
      sizes.push_back(dimOf(rewriter, loc, op.getIndices(), j++));
      idxExprs.push_back(getAffineDimExpr(i, ctx));
    }
    Value init = emptyTensor(rewriter, loc, out, sizes);
    SmallVector<AffineMap> maps = {AffineMap::get(rank, 0, idxExprs, ctx),
                                   rewriter.getMultiDimIdentityMap(rank)};
    SmallVector<utils::IteratorType> iterators(rank, utils::IteratorType::parallel);
    Type et = out.getElementType();
    Value result =
        linalg::GenericOp::create(
            rewriter, loc, TypeRange{out}, ValueRange{op.getIndices()}, init, maps, iterators,
            [&](OpBuilder &b, Location l, ValueRange a) {
              Value pos = arith::IndexCastOp::create(b, l, a[0].getType(),
                                                     linalg::IndexOp::create(b, l, axis));
              Value hit = arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq, pos, a[0]);
              linalg::YieldOp::create(b, l, oneWhere(b, l, hit, et));
            })
            .getResult(0);
    rewriter.replaceOp(op, result);
    return success();
  }
};

} // namespace

void linalg_lowering::populateIndexingPatterns(RewritePatternSet &patterns, bool indexErrors) {
  MLIRContext *ctx = patterns.getContext();
  patterns.add<EmbeddingPattern>(ctx, indexErrors);
  patterns.add<OneHotPattern, EmbeddingGradPattern>(ctx);
}
