//===- X86TileMatmuls.cpp - AMX matmul tiles as tile loads and products ---===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//

#include "mithril/Codegen/CPU/Passes.h"

#include "mithril/Codegen/CPU/CpuStrategy.h"
#include "mithril/Dialect/Mithril/IR/LoweringConfig.h"

#include "mlir/Dialect/AMX/AMXDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/PatternMatch.h"

namespace mithril {
#define GEN_PASS_DEF_MITHRILX86TILEMATMULS
#include "mithril/Codegen/CPU/Passes.h.inc"
} // namespace mithril

using namespace mlir;

namespace {
using mithril::cpu::amxStepElements;
using mithril::cpu::kAmxTileRows;
using mithril::cpu::kZeroAccumulatorAttr;

/// The shapes of a tile_matmul generic on buffers: A [m][k / g][g], B
/// [k / g][n][g], C [m][n], static, of AMX's element types.
struct TileMatmulShape {
  int64_t m, n, groups, group;
  Type element, accumulator;
};

/// Whether the body of `op` yields acc + ext(a) * ext(b): float extensions
/// for bf16; for i8, A zero-extended (its bytes offset to unsigned) and B
/// sign-extended, as tdpbusd multiplies them.
bool isTileProduct(linalg::GenericOp op, bool int8) {
  Block &body = op.getRegion().front();
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  Value acc = body.getArgument(2);
  Operation *sum = yield.getValues()[0].getDefiningOp();
  if (!sum || !isa<arith::AddFOp, arith::AddIOp>(sum) || sum->getNumOperands() != 2)
    return false;
  Value product = sum->getOperand(0) == acc ? sum->getOperand(1) : sum->getOperand(0);
  if (sum->getOperand(0) != acc && sum->getOperand(1) != acc)
    return false;
  Operation *mul = product.getDefiningOp();
  if (!mul || !isa<arith::MulFOp, arith::MulIOp>(mul))
    return false;
  Operation *lhs = mul->getOperand(0).getDefiningOp();
  Operation *rhs = mul->getOperand(1).getDefiningOp();
  if (!lhs || !rhs || lhs->getOperand(0) != body.getArgument(0) ||
      rhs->getOperand(0) != body.getArgument(1))
    return false;
  if (int8)
    return isa<arith::ExtUIOp>(lhs) && isa<arith::ExtSIOp>(rhs);
  return isa<arith::ExtFOp>(lhs) && isa<arith::ExtFOp>(rhs);
}

/// Whether the innermost dimension of `type` is contiguous: tile rows are
/// read and written that way.
bool innermostContiguous(MemRefType type) {
  int64_t offset;
  SmallVector<int64_t> strides;
  return succeeded(type.getStridesAndOffset(strides, offset)) && strides.back() == 1;
}

/// acc + a * b on tiles of `element`: tdpbf16ps for bf16; for i8, A's bytes
/// offset to unsigned (vpdpbusd's form) and B's signed: tdpbusd.
Value multiplyTiles(OpBuilder &b, Location loc, Type element, amx::TileType accumulator, Value a,
                    Value bTile, Value acc) {
  if (element.isBF16())
    return amx::TileMulFOp::create(b, loc, accumulator, a, bTile, acc);
  return amx::TileMulIOp::create(b, loc, accumulator, a, bTile, acc, /*isZextLhs=*/true,
                                 /*isZextRhs=*/false);
}

FailureOr<TileMatmulShape> tileMatmulShape(linalg::GenericOp op) {
  if (!op.hasPureBufferSemantics() || op.getNumDpsInputs() != 2 || op.getNumDpsInits() != 1)
    return failure();
  auto a = dyn_cast<MemRefType>(op.getDpsInputOperand(0)->get().getType());
  auto b = dyn_cast<MemRefType>(op.getDpsInputOperand(1)->get().getType());
  auto c = dyn_cast<MemRefType>(op.getDpsInitOperand(0)->get().getType());
  if (!a || !b || !c || a.getRank() != 3 || b.getRank() != 3 || c.getRank() != 2 ||
      !a.hasStaticShape() || !b.hasStaticShape() || !c.hasStaticShape())
    return failure();
  TileMatmulShape shape{a.getDimSize(0), b.getDimSize(1),    a.getDimSize(1),
                        a.getDimSize(2), a.getElementType(), c.getElementType()};
  bool bf16 = shape.element.isBF16() && shape.accumulator.isF32() && shape.group == 2;
  bool int8 = shape.element.isInteger(8) && shape.accumulator.isInteger(32) && shape.group == 4;
  if ((!bf16 && !int8) || b.getElementType() != shape.element || b.getDimSize(0) != shape.groups ||
      b.getDimSize(2) != shape.group || c.getDimSize(0) != shape.m || c.getDimSize(1) != shape.n)
    return failure();
  // Whole tiles only: one tile shape in the function (LLVM's tile register
  // allocation keeps one shape per register).
  if (shape.m % kAmxTileRows != 0 || shape.n % kAmxTileRows != 0 ||
      shape.groups % (amxStepElements(shape.element) / shape.group) != 0)
    return failure();
  if (op.getIndexingMapsArray() != mithril::cpu::tileMatmulMaps(op.getContext()) ||
      !isTileProduct(op, int8))
    return failure();
  // Tile rows are read with the innermost dimension contiguous.
  if (!innermostContiguous(a) || !innermostContiguous(b) || !innermostContiguous(c))
    return failure();
  return shape;
}

/// Writes `op` as AMX tiles (see the pass's description).
void writeTiles(IRRewriter &rewriter, linalg::GenericOp op, const TileMatmulShape &shape) {
  Location loc = op.getLoc();
  rewriter.setInsertionPoint(op);
  auto index = [&](OpBuilder &builder, int64_t v) -> Value {
    return arith::ConstantIndexOp::create(builder, loc, v);
  };
  // A as [m][k] and B as [k / g][n * g]: a tile row of A is 16 groups of one
  // row, a tile row of B one group of 16 columns.
  SmallVector<ReassociationIndices> rowsAndRest = {{0}, {1, 2}};
  Value a =
      memref::CollapseShapeOp::create(rewriter, loc, op.getDpsInputOperand(0)->get(), rowsAndRest);
  Value b =
      memref::CollapseShapeOp::create(rewriter, loc, op.getDpsInputOperand(1)->get(), rowsAndRest);
  Value c = op.getDpsInitOperand(0)->get();
  // C's values are not read when it starts at zero (its fill was dropped).
  bool zeroAccumulator = op->hasAttr(kZeroAccumulatorAttr);
  int64_t rowElements = amxStepElements(shape.element);
  int64_t stepGroups = rowElements / shape.group;
  // Every tile is 16 rows of 64 bytes: accumulators, A's rows and B's groups.
  auto accumulatorTile = amx::TileType::get({kAmxTileRows, kAmxTileRows}, shape.accumulator);
  auto operandTile = amx::TileType::get({kAmxTileRows, rowElements}, shape.element);
  // Blocks of 2 x 2 accumulator tiles (fewer at the edges): with their two
  // A and two B tiles, the eight tile registers.
  for (int64_t row = 0; row < shape.m; row += 2 * kAmxTileRows) {
    SmallVector<int64_t> rowTiles;
    for (int64_t r = row; r < std::min(shape.m, row + 2 * kAmxTileRows); r += kAmxTileRows)
      rowTiles.push_back(r);
    for (int64_t column = 0; column < shape.n; column += 2 * kAmxTileRows) {
      SmallVector<int64_t> columnTiles;
      for (int64_t j = column; j < std::min(shape.n, column + 2 * kAmxTileRows); j += kAmxTileRows)
        columnTiles.push_back(j);
      SmallVector<Value> accumulators;
      for (int64_t r : rowTiles)
        for (int64_t j : columnTiles)
          accumulators.push_back(
              zeroAccumulator
                  ? amx::TileZeroOp::create(rewriter, loc, accumulatorTile).getResult()
                  : amx::TileLoadOp::create(rewriter, loc, accumulatorTile, c,
                                            ValueRange{index(rewriter, r), index(rewriter, j)})
                        .getResult());
      auto loop = scf::ForOp::create(
          rewriter, loc, index(rewriter, 0), index(rewriter, shape.groups),
          index(rewriter, stepGroups), accumulators,
          [&](OpBuilder &builder, Location l, Value k, ValueRange in) {
            Value aColumn = arith::MulIOp::create(builder, l, k, index(builder, shape.group));
            SmallVector<Value> aTiles, bTiles;
            for (int64_t r : rowTiles)
              aTiles.push_back(amx::TileLoadOp::create(builder, l, operandTile, a,
                                                       ValueRange{index(builder, r), aColumn}));
            // Columns j.. of B are groups j * g.. of its rows.
            for (int64_t j : columnTiles)
              bTiles.push_back(amx::TileLoadOp::create(
                  builder, l, operandTile, b, ValueRange{k, index(builder, j * shape.group)}));
            SmallVector<Value> out;
            for (auto [i, aTile] : llvm::enumerate(aTiles))
              for (auto [j, bTile] : llvm::enumerate(bTiles))
                out.push_back(multiplyTiles(builder, l, shape.element, accumulatorTile, aTile,
                                            bTile, in[i * bTiles.size() + j]));
            scf::YieldOp::create(builder, l, out);
          });
      int64_t next = 0;
      for (int64_t r : rowTiles)
        for (int64_t j : columnTiles)
          amx::TileStoreOp::create(rewriter, loc, c,
                                   ValueRange{index(rewriter, r), index(rewriter, j)},
                                   loop.getResult(next++));
    }
  }
  rewriter.eraseOp(op);
}

/// The shapes of a tile_conv generic on buffers: input [1][rows + kh - 1][16
/// + kw - 1][c / g][g], weight [kh][kw][c / g][f][g], result [1][rows][16][f],
/// static, of AMX's element types.
struct TileConvShape {
  int64_t rows, channels, kh, kw, groups, group;
  Type element, accumulator;
};

/// Whether the last two dimensions of `type` are one contiguous run.
bool pairsContiguous(MemRefType type) {
  int64_t offset;
  SmallVector<int64_t> strides;
  if (failed(type.getStridesAndOffset(strides, offset)))
    return false;
  int64_t rank = type.getRank();
  return strides[rank - 1] == 1 && strides[rank - 2] == type.getDimSize(rank - 1);
}

FailureOr<TileConvShape> tileConvShape(linalg::GenericOp op) {
  if (!op.hasPureBufferSemantics() || op.getNumDpsInputs() != 2 || op.getNumDpsInits() != 1)
    return failure();
  auto x = dyn_cast<MemRefType>(op.getDpsInputOperand(0)->get().getType());
  auto w = dyn_cast<MemRefType>(op.getDpsInputOperand(1)->get().getType());
  auto y = dyn_cast<MemRefType>(op.getDpsInitOperand(0)->get().getType());
  if (!x || !w || !y || x.getRank() != 5 || w.getRank() != 5 || y.getRank() != 4 ||
      !x.hasStaticShape() || !w.hasStaticShape() || !y.hasStaticShape())
    return failure();
  TileConvShape shape{y.getDimSize(1), y.getDimSize(3), w.getDimSize(0),    w.getDimSize(1),
                      w.getDimSize(2), w.getDimSize(4), x.getElementType(), y.getElementType()};
  bool bf16 = shape.element.isBF16() && shape.accumulator.isF32() && shape.group == 2;
  bool int8 = shape.element.isInteger(8) && shape.accumulator.isInteger(32) && shape.group == 4;
  if ((!bf16 && !int8) || w.getElementType() != shape.element)
    return failure();
  // One sample, up to two rows of 16 columns, whole tiles of channels: with
  // the rows' A tiles and the channels' B tiles, at most eight tile
  // registers. The reduction in whole 64-byte steps.
  int64_t columnTiles = shape.channels / kAmxTileRows;
  if (y.getDimSize(0) != 1 || y.getDimSize(2) != kAmxTileRows ||
      shape.channels % kAmxTileRows != 0 ||
      shape.rows * columnTiles + shape.rows + columnTiles > 8 ||
      shape.groups % (amxStepElements(shape.element) / shape.group) != 0)
    return failure();
  if (x.getShape() != ArrayRef<int64_t>{1, shape.rows + shape.kh - 1, kAmxTileRows + shape.kw - 1,
                                        shape.groups, shape.group} ||
      w.getDimSize(3) != shape.channels)
    return failure();
  if (op.getIndexingMapsArray() != mithril::tileConvMaps(op.getContext()) ||
      !isTileProduct(op, int8))
    return failure();
  // Tile rows are read with their elements contiguous: a row of the input's
  // channels, a column's groups of the weight, a row of the result.
  if (!pairsContiguous(x) || !pairsContiguous(w) || !innermostContiguous(y))
    return failure();
  return shape;
}

/// Writes a tile convolution (see the pass's description).
void writeConvTiles(IRRewriter &rewriter, linalg::GenericOp op, const TileConvShape &shape) {
  Location loc = op.getLoc();
  rewriter.setInsertionPoint(op);
  auto index = [&](OpBuilder &builder, int64_t v) -> Value {
    return arith::ConstantIndexOp::create(builder, loc, v);
  };
  auto attr = [&](int64_t v) -> OpFoldResult { return rewriter.getIndexAttr(v); };
  Value x = op.getDpsInputOperand(0)->get();
  Value w = op.getDpsInputOperand(1)->get();
  Value y = op.getDpsInitOperand(0)->get();
  auto xType = cast<MemRefType>(x.getType());
  int64_t inputColumns = xType.getDimSize(2);
  // Row `r` of the result as [16 columns][channels].
  auto resultRow = [&](int64_t r) {
    Value row = memref::SubViewOp::create(
        rewriter, loc, y, ArrayRef<OpFoldResult>{attr(0), attr(r), attr(0), attr(0)},
        ArrayRef<OpFoldResult>{attr(1), attr(1), attr(kAmxTileRows), attr(shape.channels)},
        ArrayRef<OpFoldResult>{attr(1), attr(1), attr(1), attr(1)});
    return memref::CollapseShapeOp::create(rewriter, loc, row,
                                           SmallVector<ReassociationIndices>{{0, 1, 2}, {3}})
        .getResult();
  };
  bool zeroAccumulator = op->hasAttr(kZeroAccumulatorAttr);
  int64_t rowElements = amxStepElements(shape.element);
  int64_t stepGroups = rowElements / shape.group;
  int64_t columnTiles = shape.channels / kAmxTileRows;
  auto accumulatorTile = amx::TileType::get({kAmxTileRows, kAmxTileRows}, shape.accumulator);
  auto operandTile = amx::TileType::get({kAmxTileRows, rowElements}, shape.element);
  SmallVector<Value> resultRows, accumulators;
  for (int64_t r = 0; r < shape.rows; ++r) {
    resultRows.push_back(resultRow(r));
    for (int64_t j = 0; j < columnTiles; ++j)
      accumulators.push_back(
          zeroAccumulator ? amx::TileZeroOp::create(rewriter, loc, accumulatorTile).getResult()
                          : amx::TileLoadOp::create(
                                rewriter, loc, accumulatorTile, resultRows.back(),
                                ValueRange{index(rewriter, 0), index(rewriter, j * kAmxTileRows)})
                                .getResult());
  }
  // One step: kernel position (i, j) and channel groups k.. of a 64-byte
  // step. Row r's A tile: input row r + i from column j, [16][step].
  auto step = [&](OpBuilder &b, Location l, Value i, Value j, Value k, ValueRange in) {
    SmallVector<Value> aTiles, bTiles;
    for (int64_t r = 0; r < shape.rows; ++r) {
      Value inputRow = arith::AddIOp::create(b, l, i, index(b, r));
      Value view = memref::SubViewOp::create(
          b, l, x, ArrayRef<OpFoldResult>{attr(0), inputRow, attr(0), attr(0), attr(0)},
          ArrayRef<OpFoldResult>{attr(1), attr(1), attr(inputColumns), attr(shape.groups),
                                 attr(shape.group)},
          ArrayRef<OpFoldResult>{attr(1), attr(1), attr(1), attr(1), attr(1)});
      Value rows = memref::CollapseShapeOp::create(
          b, l, view, SmallVector<ReassociationIndices>{{0, 1, 2}, {3, 4}});
      Value column = arith::MulIOp::create(b, l, k, index(b, shape.group));
      aTiles.push_back(amx::TileLoadOp::create(b, l, operandTile, rows, ValueRange{j, column}));
    }
    // The weight at (i, j) as [c / g][f * g]: a tile row is one group of 16
    // output channels.
    Value view = memref::SubViewOp::create(
        b, l, w, ArrayRef<OpFoldResult>{i, j, attr(0), attr(0), attr(0)},
        ArrayRef<OpFoldResult>{attr(1), attr(1), attr(shape.groups), attr(shape.channels),
                               attr(shape.group)},
        ArrayRef<OpFoldResult>{attr(1), attr(1), attr(1), attr(1), attr(1)});
    Value groups = memref::CollapseShapeOp::create(
        b, l, view, SmallVector<ReassociationIndices>{{0, 1, 2}, {3, 4}});
    for (int64_t t = 0; t < columnTiles; ++t)
      bTiles.push_back(amx::TileLoadOp::create(
          b, l, operandTile, groups, ValueRange{k, index(b, t * kAmxTileRows * shape.group)}));
    SmallVector<Value> out;
    for (auto [r, aTile] : llvm::enumerate(aTiles))
      for (auto [t, bTile] : llvm::enumerate(bTiles))
        out.push_back(multiplyTiles(b, l, shape.element, accumulatorTile, aTile, bTile,
                                    in[r * bTiles.size() + t]));
    return out;
  };
  Value zero = index(rewriter, 0), one = index(rewriter, 1);
  auto rowsLoop = scf::ForOp::create(
      rewriter, loc, zero, index(rewriter, shape.kh), one, accumulators,
      [&](OpBuilder &b, Location l, Value i, ValueRange rowIn) {
        auto columnsLoop = scf::ForOp::create(
            b, l, zero, index(b, shape.kw), one, rowIn,
            [&](OpBuilder &b2, Location l2, Value j, ValueRange columnIn) {
              auto stepsLoop = scf::ForOp::create(
                  b2, l2, zero, index(b2, shape.groups), index(b2, stepGroups), columnIn,
                  [&](OpBuilder &b3, Location l3, Value k, ValueRange in) {
                    scf::YieldOp::create(b3, l3, step(b3, l3, i, j, k, in));
                  });
              scf::YieldOp::create(b2, l2, stepsLoop.getResults());
            });
        scf::YieldOp::create(b, l, columnsLoop.getResults());
      });
  int64_t next = 0;
  for (int64_t r = 0; r < shape.rows; ++r)
    for (int64_t j = 0; j < columnTiles; ++j)
      amx::TileStoreOp::create(rewriter, loc, resultRows[r],
                               ValueRange{index(rewriter, 0), index(rewriter, j * kAmxTileRows)},
                               rowsLoop.getResult(next++));
  rewriter.eraseOp(op);
}

struct X86TileMatmulsPass : public mithril::impl::MithrilX86TileMatmulsBase<X86TileMatmulsPass> {
  void runOnOperation() override {
    SmallVector<linalg::GenericOp> tiles;
    getOperation().walk([&](linalg::GenericOp op) {
      mithril::CpuKernel kernel = mithril::getCpuKernel(op);
      if (kernel == mithril::CpuKernel::TileMatmul || kernel == mithril::CpuKernel::TileConv)
        tiles.push_back(op);
    });
    IRRewriter rewriter(&getContext());
    for (linalg::GenericOp op : tiles) {
      if (mithril::getCpuKernel(op) == mithril::CpuKernel::TileConv) {
        if (FailureOr<TileConvShape> shape = tileConvShape(op); succeeded(shape)) {
          writeConvTiles(rewriter, op, *shape);
          continue;
        }
      } else if (FailureOr<TileMatmulShape> shape = tileMatmulShape(op); succeeded(shape)) {
        writeTiles(rewriter, op, *shape);
        continue;
      }
      // Left to the loops, a product whose accumulator was to start at zero
      // gets its zeros.
      if (op->hasAttr(kZeroAccumulatorAttr))
        mithril::cpu::restoreZeroAccumulator(rewriter, op);
    }
  }
};
} // namespace
