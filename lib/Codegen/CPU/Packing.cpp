//===- Packing.cpp - packed panels and dot-product kernels --------------===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
// Matmul blocks on a right operand packed into panels of one register tile's
// columns (pairs of bf16 and quads of i8 for vdpbf16ps and vpdpbusd), and the
// register tiles of those dot products.
//
//===----------------------------------------------------------------------===//

#include "Schedule.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tensor/Utils/Utils.h"
#include "mlir/Dialect/UB/IR/UBOps.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/X86Vector/X86VectorDialect.h"

#include <cstring>

using namespace mlir;
using namespace mithril;
using namespace mithril::cpu;
using namespace mithril::cpu::detail;

/// When `b` is a unit-stride block of a 2-D linalg.transpose's result, the
/// same block of the transpose's input (columns and rows swapped); null
/// otherwise.
Value Scheduler::transposedSource(IRRewriter &rewriter, Value b) {
  auto slice = b.getDefiningOp<tensor::ExtractSliceOp>();
  if (!slice || slice.getSourceType().getRank() != 2 || slice.getType().getRank() != 2)
    return Value();
  auto unitStrides = [](tensor::ExtractSliceOp op) {
    return llvm::all_of(op.getMixedStrides(),
                        [](OpFoldResult stride) { return isConstantIntValue(stride, 1); });
  };
  if (!unitStrides(slice))
    return Value();
  SmallVector<OpFoldResult> offsets = slice.getMixedOffsets(), sizes = slice.getMixedSizes();
  // Through slices of slices (a thread's share of the matrix, then a block
  // of it), their offsets added.
  Value source = slice.getSource();
  while (auto outer = source.getDefiningOp<tensor::ExtractSliceOp>()) {
    if (outer.getSourceType().getRank() != 2 || outer.getType().getRank() != 2 ||
        !unitStrides(outer))
      return Value();
    AffineExpr d0, d1;
    bindDims(rewriter.getContext(), d0, d1);
    for (auto [offset, outerOffset] : llvm::zip(offsets, outer.getMixedOffsets()))
      offset = affine::makeComposedFoldedAffineApply(rewriter, slice.getLoc(), d0 + d1,
                                                     {outerOffset, offset});
    source = outer.getSource();
  }
  auto transpose = source.getDefiningOp<linalg::TransposeOp>();
  if (!transpose || !transpose.hasPureTensorSemantics() ||
      transpose.getPermutation() != ArrayRef<int64_t>{1, 0})
    return Value();
  RankedTensorType type = slice.getType();
  return tensor::ExtractSliceOp::create(
      rewriter, slice.getLoc(),
      RankedTensorType::get({type.getDimSize(1), type.getDimSize(0)}, type.getElementType()),
      transpose.getInput(), SmallVector<OpFoldResult>{offsets[1], offsets[0]},
      SmallVector<OpFoldResult>{sizes[1], sizes[0]},
      SmallVector<OpFoldResult>{rewriter.getIndexAttr(1), rewriter.getIndexAttr(1)});
}

/// Whether the rows of the matrix block `a` (a slice of a static matrix,
/// possibly through slices of slices, or a matrix) lie a multiple of 2 KiB
/// apart: then they map to at most two of L1's 64 sets of 64-byte lines.
static bool rowsShareL1Sets(Value a) {
  auto type = cast<RankedTensorType>(a.getType());
  while (auto slice = a.getDefiningOp<tensor::ExtractSliceOp>()) {
    if (slice.getSourceType().getRank() != 2)
      break;
    type = slice.getSourceType();
    a = slice.getSource();
  }
  if (type.isDynamicDim(1))
    return false;
  return type.getDimSize(1) * (type.getElementTypeBitWidth() / 8) % 2048 == 0;
}

/// A copy of the matrix block `a` whose rows are 64 bytes further apart
/// than its columns need (a slice of a padded tensor that does not fold).
static Value copyWithPaddedRows(IRRewriter &rewriter, Location loc, Value a) {
  auto type = cast<RankedTensorType>(a.getType());
  int64_t m = type.getDimSize(0), k = type.getDimSize(1);
  Type et = type.getElementType();
  int64_t pad = 64 / (et.getIntOrFloatBitWidth() / 8);
  Value zero = arith::ConstantOp::create(rewriter, loc, rewriter.getZeroAttr(et));
  Value padded = tensor::createPadHighOp(RankedTensorType::get({m, k + pad}, et), a, zero,
                                         /*nofold=*/true, loc, rewriter);
  OpFoldResult zeroIndex = rewriter.getIndexAttr(0), one = rewriter.getIndexAttr(1);
  return tensor::ExtractSliceOp::create(
      rewriter, loc, type, padded, ArrayRef<OpFoldResult>{zeroIndex, zeroIndex},
      ArrayRef<OpFoldResult>{rewriter.getIndexAttr(m), rewriter.getIndexAttr(k)},
      ArrayRef<OpFoldResult>{one, one});
}

/// The matrix the block `a` is a slice of (through slices of slices), if
/// the block takes whole rows of it (its reduction not split into blocks).
static std::optional<RankedTensorType> wholeRowsSource(Value a) {
  auto type = cast<RankedTensorType>(a.getType());
  int64_t k = type.getDimSize(1);
  while (auto slice = a.getDefiningOp<tensor::ExtractSliceOp>()) {
    if (slice.getSourceType().getRank() != 2 || slice.getSourceType().getDimSize(1) != k)
      return std::nullopt;
    type = slice.getSourceType();
    a = slice.getSource();
  }
  return type;
}

/// The smallest left operand whose blocks a thread's chunk copies with
/// padded rows (packRightOperand): smaller ones lost or stayed level.
constexpr int64_t kMinPaddedOperandBytes = 2 << 20;

/// Rewrites a matmul block C += A * B so that B is first copied into
/// panels of one register tile's columns, [columns / cols][k][cols]: the
/// register tiles then read a panel contiguously (32 KiB that stay in L1
/// while the row tiles pass) instead of rows a whole matrix apart, which
/// share a few L1 sets. The product becomes a generic over (m, panel,
/// column in panel, k) of kernel packed_matmul, on C viewed as
/// [m][panel][cols]. False when the block does not qualify.
bool Scheduler::packRightOperand(IRRewriter &rewriter, linalg::MatmulOp block, bool startsAtZero,
                                 bool *fillUnneeded, int64_t rowsServed) {
  if (!block.hasPureTensorSemantics())
    return false;
  Value a = block.getDpsInputOperand(0)->get(), b = block.getDpsInputOperand(1)->get();
  Value c = block.getDpsInitOperand(0)->get();
  auto bt = dyn_cast<RankedTensorType>(b.getType());
  auto ct = dyn_cast<RankedTensorType>(c.getType());
  int64_t cols = strategy.registers.matmulColumns(cast<linalg::LinalgOp>(block.getOperation()));
  if (!bt || !ct || !bt.hasStaticShape() || !ct.hasStaticShape() || bt.getDimSize(1) % cols != 0)
    return false;
  Type et = bt.getElementType();
  Type at = getElementTypeOrSelf(a.getType()), accumulator = ct.getElementType();
  bool bf16Dot =
      strategy.registers.bf16DotProduct && et.isBF16() && at.isBF16() && accumulator.isF32();
  // Fewer than 16 rows read B fewer times than packing it would. What
  // counts is every row the packed block serves: a row block of 12 (1056
  // rows in 6-row AVX2 tiles) packed once for all 88 of them. (Unpacked,
  // the tiles read B's rows a matrix row apart, a page each: AVX2 sgemm
  // 1056 ran at 0.75x of 1024's speed.) bf16 on pair products packs
  // whatever its rows: unpacked, B is widened to float32 instead, twice
  // the bytes written (a swapped last layer of 10 columns, Zen 5: 19 ->
  // 13 us).
  if (std::max(ct.getDimSize(0), rowsServed) < 16 && !bf16Dot)
    return false;
  Location loc = block.getLoc();
  int64_t k = bt.getDimSize(0), n = bt.getDimSize(1), m = ct.getDimSize(0), panels = n / cols;
  rewriter.setInsertionPoint(block);
  bool int8Dot = strategy.registers.int8DotProduct && et.isInteger(8) && at.isInteger(8) &&
                 accumulator.isInteger(32);
  // Dot products read their groups packed even from a single panel (a
  // thread's half of a 64-column int8 convolution: widened to 32-bit
  // products instead, it ran 3 times slower than one thread's whole).
  if ((bf16Dot || int8Dot) && k % dotProductGroup(et) == 0 && cols % 16 == 0) {
    bool overwrites = packDotProductGroups(rewriter, block, a, b, c, startsAtZero);
    if (fillUnneeded)
      *fillUnneeded = overwrites;
    return true;
  }
  // A single panel is read in place.
  if (n <= cols)
    return false;
  // Integers without a dot product stay unpacked (widenUnpackedOperands).
  if (!isa<FloatType>(et))
    return false;
  SmallVector<ReassociationIndices> split = {{0}, {1, 2}};
  Value weightBlock = transposedSource(rewriter, b);
  // A weight compiled in is packed when compiling (the whole matrix): per
  // call, only the block's slice of it is taken.
  Value packed =
      packedConstantPanels(rewriter, loc, weightBlock ? weightBlock : b, !weightBlock, cols, 1);
  if (!packed) {
    Value empty = tensor::EmptyOp::create(rewriter, loc, ArrayRef<int64_t>{panels, k, cols}, et);
    if (weightBlock) {
      // B is a block of a transposed matrix (a Linear layer's weight): pack
      // straight from the matrix, [panels][cols][k] transposed in registers,
      // and the transposed copy of the whole matrix is no longer needed.
      Value wPanels = tensor::ExpandShapeOp::create(
          rewriter, loc, RankedTensorType::get({panels, cols, k}, et), weightBlock,
          SmallVector<ReassociationIndices>{{0, 1}, {2}});
      packed =
          linalg::TransposeOp::create(rewriter, loc, wPanels, empty, ArrayRef<int64_t>{0, 2, 1})
              .getResult()[0];
    } else {
      Value bPanels = tensor::ExpandShapeOp::create(
          rewriter, loc, RankedTensorType::get({k, panels, cols}, et), b, split);
      packed =
          linalg::TransposeOp::create(rewriter, loc, bPanels, empty, ArrayRef<int64_t>{1, 0, 2})
              .getResult()[0];
    }
  }
  // Narrow operands without a dot product for their type (f16, or bf16
  // without AVX512-BF16) widen once here: the packed panels, and A's block
  // (reused by every panel), rather than each element in the kernel.
  packed = widenElements(rewriter, loc, packed, accumulator);
  a = widenElements(rewriter, loc, a, accumulator);
  // AVX2's 6-row tiles, rows outermost, keep their rows of A in L1 while
  // they sweep the panels; rows a multiple of 2 KiB apart (512 or 1024
  // float32 deep) fall into the same L1 sets and evict each other. In a
  // thread's chunk of a split product whose left operand is at least 2 MiB,
  // a block of whole rows (its reduction not split) is copied with 64 more
  // bytes a row first, as for AMX tiles. Zen 3, two threads, paired in one
  // process against OpenBLAS on a contended host: sgemm 1024 18.5-21.2 ->
  // 14.8-18.7 ms (OpenBLAS 14.5-16.8), 1024 x 512 by 512 x 1024 9.9-10.3
  // -> 8.2-8.9 (8.4-9.7), 1024 x 1024 by 1024 x 2048 41.1 -> 32.9 (33.6).
  // Left alone: reductions split in blocks (sgemm 1536 and 2048 level;
  // dgemm 1024, 512-step blocks, 22.3 -> 19.1 in one run), smaller
  // operands (sgemm 512: 13% slower to 5% faster; the MLP 784-512-512-10
  // at batch 256 level), one thread (sgemm 1024 level to 4% slower), and
  // AVX-512's wider tiles (slower on one core: the twenty-fourth session in
  // docs/performance.md).
  if (strategy.registers.bits < 512 && at == accumulator &&
      (accumulator.isF32() || accumulator.isF64()) && block->getParentOfType<scf::ForallOp>())
    if (std::optional<RankedTensorType> source = wholeRowsSource(a);
        source && source->hasStaticShape() && rowsShareL1Sets(a) &&
        source->getNumElements() * (accumulator.getIntOrFloatBitWidth() / 8) >=
            kMinPaddedOperandBytes)
      a = copyWithPaddedRows(rewriter, loc, a);
  auto panelsType = RankedTensorType::get({m, panels, cols}, accumulator);
  Value cPanels;
  auto fill = c.getDefiningOp<linalg::FillOp>();
  if (fill && fill->hasOneUse()) {
    // A block with a fill of its own (tileWithEpilogue): the fill on the
    // panels, which the register tiles then take as their first value.
    Value dest = tensor::ExpandShapeOp::create(rewriter, loc, panelsType,
                                               fill.getDpsInitOperand(0)->get(), split);
    cPanels = linalg::FillOp::create(rewriter, loc, fill.value(), dest).getResult(0);
  } else {
    cPanels = tensor::ExpandShapeOp::create(rewriter, loc, panelsType, c, split);
  }
  AffineExpr dm, dj, dn, dk;
  bindDims(ctx, dm, dj, dn, dk);
  SmallVector<AffineMap> maps = {AffineMap::get(4, 0, {dm, dk}, ctx),
                                 AffineMap::get(4, 0, {dj, dk, dn}, ctx),
                                 AffineMap::get(4, 0, {dm, dj, dn}, ctx)};
  SmallVector<utils::IteratorType> iterators(3, utils::IteratorType::parallel);
  iterators.push_back(utils::IteratorType::reduction);
  auto product =
      linalg::GenericOp::create(rewriter, loc, TypeRange{cPanels.getType()}, ValueRange{a, packed},
                                ValueRange{cPanels}, maps, iterators, mithril::yieldMultiplyAdd);
  configureTile(product, CpuKernel::PackedMatmul);
  // AVX2's 6 x 16 float32 tiles whose result, with the packed block, does
  // not stay in L2 take their rows outermost: each row tile's C rows are
  // then read and written line after line, panel after panel, and its 6 KiB
  // of A stay in L1, where panels outermost read C a row tile at a time, 6
  // lines 4 KiB apart, and A's rows from L2. Paired in one process, one Zen
  // 4 core: sgemm 1024 +3.4-4.9%, 2048 +2.3%, two threads 1024 +6.6%; 512
  // (C in L2) +0.4%; float64's 6 x 8 tiles lost 2-8% (dgemm 512, 1024),
  // AVX-512's 8 x 32 float32 gained 0.7%.
  if (takesRowTilesOuter(et, accumulator, std::max(m, rowsServed), n, k, strategy))
    product->setAttr(kRowTilesOuterAttr, rewriter.getUnitAttr());
  rewriter.replaceOp(
      block,
      tensor::CollapseShapeOp::create(rewriter, loc, ct, product.getResult(0), split).getResult());
  if (fill && fill->use_empty())
    rewriter.eraseOp(fill);
  splitRowRemainder(rewriter, product);
  return true;
}

void Scheduler::splitRowRemainder(IRRewriter &rewriter, linalg::LinalgOp op) {
  int64_t rows = strategy.registers.matmulRows(op);
  int64_t m = op.getStaticLoopRanges()[0];
  if (ShapedType::isDynamic(m) || m <= rows || m % rows == 0)
    return;
  CpuKernel kernel = kernelOf(op);
  // Each part starts from a fill of its own, which fuses into its register
  // tiles (a fill of the whole block was written first and read back).
  linalg::FillOp fill = detachAccumulatorFill(op);
  rewriter.setInsertionPoint(op);
  // (Split strictly inside the rows: both parts exist.)
  auto [whole, rest] = linalg::splitOp(rewriter, cast<TilingInterface>(op.getOperation()), 0,
                                       rewriter.getIndexAttr(m - m % rows));
  fillEachPart(rewriter, fill, {whole, rest});
  // Each part gets the tiles of its own rows (the rest: the divisor of
  // its rows that fitTilesToLoops picks), in the product's order.
  bool rowTilesOuter = op->hasAttr(kRowTilesOuterAttr);
  for (TilingInterface part : {whole, rest})
    if (part) {
      configureTile(part, kernel);
      if (rowTilesOuter)
        part->setAttr(kRowTilesOuterAttr, rewriter.getUnitAttr());
    }
}

/// Matmuls that kept narrow operands (bf16 or f16 into f32) but were not
/// packed (too few columns: a Linear layer of 10 outputs) read them
/// widened: extending each element inside the register tile made a 256 x
/// 512 x 10 bf16 product 10 times slower than in f32.
void Scheduler::widenUnpackedOperands(IRRewriter &rewriter, ArrayRef<linalg::LinalgOp> ops) {
  for (linalg::LinalgOp op : ops) {
    if (!isa<linalg::MatmulOp, linalg::BatchMatmulOp>(op.getOperation()))
      continue;
    Type accumulator = getElementTypeOrSelf(op->getResult(0).getType());
    SmallVector<Value> inputs;
    for (OpOperand *input : op.getDpsInputOperands())
      inputs.push_back(input->get());
    if (llvm::all_of(inputs, [&](Value v) { return getElementTypeOrSelf(v) == accumulator; }))
      continue;
    rewriter.setInsertionPoint(op);
    for (Value &v : inputs)
      v = widenElements(rewriter, op.getLoc(), v, accumulator);
    Operation *wide;
    if (isa<linalg::MatmulOp>(op.getOperation()))
      wide = linalg::MatmulOp::create(rewriter, op.getLoc(), op->getResultTypes(), inputs,
                                      op.getDpsInits());
    else
      wide = linalg::BatchMatmulOp::create(rewriter, op.getLoc(), op->getResultTypes(), inputs,
                                           op.getDpsInits());
    wide->setDiscardableAttrs(op->getDiscardableAttrDictionary());
    rewriter.replaceOp(op, wide->getResults());
  }
}

/// `v` with its elements extended to `type` (a float at least as wide).
Value Scheduler::widenElements(IRRewriter &rewriter, Location loc, Value v, Type type) {
  auto tensor = cast<RankedTensorType>(v.getType());
  if (tensor.getElementType() == type)
    return v;
  // (With v's dynamic sizes: an int8 product of a dynamic batch.)
  Value empty =
      tensor::EmptyOp::create(rewriter, loc, tensor::getMixedSizes(rewriter, loc, v), type);
  SmallVector<AffineMap> maps(2, rewriter.getMultiDimIdentityMap(tensor.getRank()));
  SmallVector<utils::IteratorType> iterators(tensor.getRank(), utils::IteratorType::parallel);
  return linalg::GenericOp::create(
             rewriter, loc, TypeRange{empty.getType()}, ValueRange{v}, ValueRange{empty}, maps,
             iterators,
             [&](OpBuilder &b, Location l, ValueRange args) {
               Value wide = isa<FloatType>(type)
                                ? arith::ExtFOp::create(b, l, type, args[0]).getResult()
                                : arith::ExtSIOp::create(b, l, type, args[0]).getResult();
               linalg::YieldOp::create(b, l, wide);
             })
      .getResult(0);
}

/// The dot-product form of packRightOperand (vdpbf16ps for bf16, vpdpbusd
/// for i8): B is packed in groups of g consecutive reduction steps side by
/// side (g = 2 for bf16, 4 for i8), [columns / cols][k / g][cols][g], so
/// that one 32-bit lane holds the g elements an instruction multiplies by a
/// broadcast group of A (A viewed as [m][k / g][g]). The product is a
/// generic over (m, panel, column in panel, k / g, group) that
/// lowerDotProductTiles writes as dot products. For i8, A's bytes enter the
/// unsigned operand offset by 128, and 128 times each column's sum of B is
/// subtracted from the block's sums.
bool Scheduler::packDotProductGroups(IRRewriter &rewriter, linalg::MatmulOp block, Value a, Value b,
                                     Value c, bool startsAtZero) {
  Location loc = block.getLoc();
  auto ct = cast<RankedTensorType>(c.getType());
  auto bt = cast<RankedTensorType>(b.getType());
  Type et = bt.getElementType(), accumulator = ct.getElementType();
  int64_t group = dotProductGroup(et);
  int64_t cols = strategy.registers.matmulColumns(cast<linalg::LinalgOp>(block.getOperation()));
  int64_t k = bt.getDimSize(0), n = bt.getDimSize(1), m = ct.getDimSize(0);
  int64_t panels = n / cols, groups = k / group;
  Value empty =
      tensor::EmptyOp::create(rewriter, loc, ArrayRef<int64_t>{panels, groups, cols, group}, et);
  // The source's two dimensions split in two each, then permuted into
  // [panels][k / g][cols][g].
  auto pack = [&](Value source, ArrayRef<int64_t> split, ArrayRef<int64_t> permutation) {
    Value view =
        tensor::ExpandShapeOp::create(rewriter, loc, RankedTensorType::get(split, et), source,
                                      SmallVector<ReassociationIndices>{{0, 1}, {2, 3}});
    return linalg::TransposeOp::create(rewriter, loc, view, empty, permutation).getResult()[0];
  };
  // W [n][k] (a transposed weight): each group is already contiguous in a
  // row of W; B [k][n]: rows g apart are interleaved.
  Value weightBlock = transposedSource(rewriter, b);
  // i8 weights compiled in are packed when compiling, with their column
  // sums; only the block's slice of them is taken here.
  Value packed, constantSums;
  if (et.isInteger(8))
    std::tie(packed, constantSums) =
        packedConstant(rewriter, loc, weightBlock ? weightBlock : b, !weightBlock, cols, group);
  else
    packed = packedConstantPanels(rewriter, loc, weightBlock ? weightBlock : b, !weightBlock, cols,
                                  group);
  if (!packed)
    packed = weightBlock ? pack(weightBlock, {panels, cols, groups, group}, {0, 2, 1, 3})
                         : pack(b, {groups, group, panels, cols}, {2, 0, 3, 1});
  // i8: A's block with its sign bits flipped once (a + 128 as unsigned
  // bytes, vpdpbusd's left operand), not at every use in every panel: the
  // tiles then take each row's quad as a broadcast memory operand.
  if (et.isInteger(8))
    a = flipSignBits(rewriter, loc, a);
  // AMX tiles read A's rows 16 at a time: rows a multiple of 2 KiB apart
  // (a 1024 or 2048 bf16 matrix) fall into at most two of L1's 64 sets and
  // evict each other (12 ways), so the block is copied with 64 more bytes a
  // row (bf16 sgemm 2048: 463 -> 533 GFLOP/s, Emerald Rapids).
  if (strategy.registers.tilesFor(et) && m % kAmxTileRows == 0 && rowsShareL1Sets(a))
    a = copyWithPaddedRows(rewriter, loc, a);
  Value aGroups =
      tensor::ExpandShapeOp::create(rewriter, loc, RankedTensorType::get({m, groups, group}, et), a,
                                    SmallVector<ReassociationIndices>{{0}, {1, 2}});
  SmallVector<ReassociationIndices> split = {{0}, {1, 2}};
  auto panelsType = RankedTensorType::get({m, panels, cols}, accumulator);
  Value cPanels = tensor::ExpandShapeOp::create(rewriter, loc, panelsType, c, split);
  // bf16 pair products whose block starts at zero, its reduction whole
  // (startsAtZero): a zero fill of the block's panels, which fuses into the
  // register tiles (fusibleAccumulatorFill), whose accumulators then start
  // at zero in registers; the caller drops the fill of the whole C, which
  // was written first and read back (512 x 256 f32 C^T of the MLP's first
  // layer at batch 256: 4 us of its 0.37 ms on a Zen 5 core).
  bool zeroPanels = startsAtZero && et.isBF16() && !strategy.registers.tilesFor(et);
  if (zeroPanels) {
    Value zero = arith::ConstantOp::create(rewriter, loc,
                                           cast<TypedAttr>(rewriter.getZeroAttr(accumulator)));
    cPanels = linalg::FillOp::create(rewriter, loc, zero, cPanels).getResult(0);
  }
  AffineExpr dm, dj, dn, dk, dp;
  bindDims(ctx, dm, dj, dn, dk, dp);
  if (et.isInteger(8))
    cPanels = subtractOffsetProducts(rewriter, loc, packed, cPanels, startsAtZero, constantSums);
  SmallVector<AffineMap> maps = {AffineMap::get(5, 0, {dm, dk, dp}, ctx),
                                 AffineMap::get(5, 0, {dj, dk, dn, dp}, ctx),
                                 AffineMap::get(5, 0, {dm, dj, dn}, ctx)};
  SmallVector<utils::IteratorType> iterators(3, utils::IteratorType::parallel);
  iterators.append(2, utils::IteratorType::reduction);
  auto product = linalg::GenericOp::create(
      rewriter, loc, TypeRange{cPanels.getType()}, ValueRange{aGroups, packed}, ValueRange{cPanels},
      maps, iterators, [&](OpBuilder &b, Location l, ValueRange args) {
        if (!et.isInteger(8))
          return mithril::yieldMultiplyAdd(b, l, args);
        // What the kernel computes: (a + 128) * b, the offset's products
        // taken off beforehand (subtractOffsetProducts); a + 128 is the
        // flipped byte read as unsigned. The generic says so too, for
        // whoever lowers it other than lowerDotProductTiles.
        Value lhs = arith::ExtUIOp::create(b, l, accumulator, args[0]);
        Value rhs = arith::ExtSIOp::create(b, l, accumulator, args[1]);
        linalg::YieldOp::create(
            b, l,
            arith::AddIOp::create(b, l, args[2], arith::MulIOp::create(b, l, lhs, rhs))
                .getResult());
      });
  configureTile(product, CpuKernel::PackedMatmul);
  rewriter.replaceOp(
      block,
      tensor::CollapseShapeOp::create(rewriter, loc, ct, product.getResult(0), split).getResult());
  if (et.isInteger(8))
    return startsAtZero;
  if (zeroPanels)
    return true;
  // On AMX tiles from zero: tilezero, not a load of zeros (and no fill).
  if (startsAtZero &&
      onAmxTiles(cast<linalg::LinalgOp>(product.getOperation()), strategy.registers)) {
    product->setAttr(kZeroAccumulatorAttr, rewriter.getUnitAttr());
    return true;
  }
  return false;
}

/// The i8 tensor `v` with each element's sign bit flipped: v + 128 as an
/// unsigned byte.
Value Scheduler::flipSignBits(IRRewriter &rewriter, Location loc, Value v) {
  auto tensor = cast<RankedTensorType>(v.getType());
  Value empty = tensor::EmptyOp::create(rewriter, loc, tensor::getMixedSizes(rewriter, loc, v),
                                        tensor.getElementType());
  SmallVector<AffineMap> maps(2, rewriter.getMultiDimIdentityMap(tensor.getRank()));
  SmallVector<utils::IteratorType> iterators(tensor.getRank(), utils::IteratorType::parallel);
  return linalg::GenericOp::create(
             rewriter, loc, TypeRange{tensor}, ValueRange{v}, ValueRange{empty}, maps, iterators,
             [&](OpBuilder &b, Location l, ValueRange args) {
               Value signBit = arith::ConstantOp::create(b, l, b.getI8IntegerAttr(-128));
               linalg::YieldOp::create(b, l,
                                       arith::XOrIOp::create(b, l, args[0], signBit).getResult());
             })
      .getResult(0);
}

/// When `block` is a unit-stride slice of a rank-2 constant, possibly through
/// slices of slices (a thread's columns, then a cache block of them): the
/// constant and the block's offsets in it.
static std::optional<std::pair<arith::ConstantOp, SmallVector<OpFoldResult>>>
constantSlice(IRRewriter &rewriter, Location loc, Value block) {
  auto slice = block.getDefiningOp<tensor::ExtractSliceOp>();
  auto unitStrides = [](tensor::ExtractSliceOp op) {
    return op.getSourceType().getRank() == 2 && op.getType().getRank() == 2 &&
           llvm::all_of(op.getMixedStrides(),
                        [](OpFoldResult stride) { return isConstantIntValue(stride, 1); });
  };
  if (!slice || !unitStrides(slice) || !slice.getType().hasStaticShape())
    return std::nullopt;
  SmallVector<OpFoldResult> offsets = slice.getMixedOffsets();
  Value source = slice.getSource();
  while (auto outer = source.getDefiningOp<tensor::ExtractSliceOp>()) {
    if (!unitStrides(outer))
      return std::nullopt;
    AffineExpr d0, d1;
    bindDims(rewriter.getContext(), d0, d1);
    for (auto [offset, outerOffset] : llvm::zip(offsets, outer.getMixedOffsets()))
      offset = affine::makeComposedFoldedAffineApply(rewriter, loc, d0 + d1, {outerOffset, offset});
    source = outer.getSource();
  }
  auto constant = source.getDefiningOp<arith::ConstantOp>();
  if (!constant || !isa<DenseElementsAttr>(constant.getValue()))
    return std::nullopt;
  return std::make_pair(constant, offsets);
}

/// offset / by, folded where it is constant.
static OpFoldResult dividedOffset(IRRewriter &rewriter, Location loc, OpFoldResult offset,
                                  int64_t by) {
  AffineExpr d0 = rewriter.getAffineDimExpr(0);
  return affine::makeComposedFoldedAffineApply(rewriter, loc, d0.floorDiv(by), {offset});
}

/// The whole `constant` ([k][n] when `kByN`, else [n][k]) packed in panels of
/// `cols` columns and groups of `group` reduction steps, as a constant after
/// it, and the slice of it that a block of type `blockType` at `offsets`
/// reads. Null when the sizes do not divide.
static Value slicePackedConstant(IRRewriter &rewriter, Location loc, arith::ConstantOp constant,
                                 ArrayRef<OpFoldResult> offsets, RankedTensorType blockType,
                                 bool kByN, int64_t cols, int64_t group) {
  auto attr = cast<DenseElementsAttr>(constant.getValue());
  auto st = cast<RankedTensorType>(constant.getType());
  Type et = st.getElementType();
  if (!et.isIntOrFloat() || et.getIntOrFloatBitWidth() % 8 != 0)
    return nullptr;
  int64_t kDim = kByN ? 0 : 1, nDim = 1 - kDim;
  int64_t kTotal = st.getDimSize(kDim), nTotal = st.getDimSize(nDim);
  int64_t kBlock = blockType.getDimSize(kDim), nBlock = blockType.getDimSize(nDim);
  if (nTotal % cols != 0 || nBlock % cols != 0 || kTotal % group != 0 || kBlock % group != 0)
    return nullptr;
  int64_t panels = nTotal / cols, groups = kTotal / group;
  // [panels][k][cols], or [panels][k / g][cols][g] for groups of g > 1.
  SmallVector<int64_t> wholeShape = {panels, groups, cols};
  SmallVector<int64_t> blockShape = {nBlock / cols, kBlock / group, cols};
  if (group > 1) {
    wholeShape.push_back(group);
    blockShape.push_back(group);
  }
  auto wholeType = RankedTensorType::get(wholeShape, et);
  DenseElementsAttr whole;
  if (attr.isSplat()) {
    whole = DenseElementsAttr::get(wholeType, attr.getSplatValue<Attribute>());
  } else {
    // B[k][n] to [n / cols][k / g][n % cols][k % g], moved as raw bytes.
    int64_t bytes = et.getIntOrFloatBitWidth() / 8;
    ArrayRef<char> raw = attr.getRawData();
    std::vector<char> packed(raw.size());
    for (int64_t nn = 0; nn < nTotal; ++nn)
      for (int64_t kk = 0; kk < kTotal; ++kk) {
        int64_t from = kByN ? kk * nTotal + nn : nn * kTotal + kk;
        int64_t to = (((nn / cols) * groups + kk / group) * cols + nn % cols) * group + kk % group;
        std::memcpy(packed.data() + to * bytes, raw.data() + from * bytes, bytes);
      }
    whole = DenseElementsAttr::getFromRawBuffer(wholeType, packed);
  }
  OpBuilder::InsertPoint here = rewriter.saveInsertionPoint();
  rewriter.setInsertionPointAfter(constant);
  Value wholePacked = arith::ConstantOp::create(rewriter, loc, whole);
  rewriter.restoreInsertionPoint(here);
  OpFoldResult zero = rewriter.getIndexAttr(0), one = rewriter.getIndexAttr(1);
  SmallVector<OpFoldResult> blockOffsets = {dividedOffset(rewriter, loc, offsets[nDim], cols),
                                            dividedOffset(rewriter, loc, offsets[kDim], group),
                                            zero};
  if (group > 1)
    blockOffsets.push_back(zero);
  return tensor::ExtractSliceOp::create(rewriter, loc, RankedTensorType::get(blockShape, et),
                                        wholePacked, blockOffsets,
                                        getAsIndexOpFoldResult(rewriter.getContext(), blockShape),
                                        SmallVector<OpFoldResult>(blockShape.size(), one));
}

Value Scheduler::packedConstantPanels(IRRewriter &rewriter, Location loc, Value block, bool kByN,
                                      int64_t cols, int64_t group) {
  auto found = constantSlice(rewriter, loc, block);
  if (!found)
    return nullptr;
  return slicePackedConstant(rewriter, loc, found->first, found->second,
                             cast<RankedTensorType>(block.getType()), kByN, cols, group);
}

/// The i8 constant `block` (a static slice of a rank-2 constant, [k][n] when
/// `kByN`, else [n][k]) as packDotProductGroups packs it, and its column
/// sums ([n / cols][cols] i32), as slices of the whole matrix packed when
/// compiling: [n / cols][k / g][cols][g], and the sums of each reduction
/// block the size of this one, [k / block][n / cols][cols]. Null values when
/// `block` is not such a slice.
std::pair<Value, Value> Scheduler::packedConstant(IRRewriter &rewriter, Location loc, Value block,
                                                  bool kByN, int64_t cols, int64_t group) {
  auto found = constantSlice(rewriter, loc, block);
  if (!found)
    return {};
  auto [constant, offsets] = *found;
  auto attr = dyn_cast<DenseIntElementsAttr>(constant.getValue());
  auto st = cast<RankedTensorType>(constant.getType());
  auto bt = cast<RankedTensorType>(block.getType());
  int64_t kDim = kByN ? 0 : 1, nDim = 1 - kDim;
  int64_t kTotal = st.getDimSize(kDim), nTotal = st.getDimSize(nDim);
  int64_t kBlock = bt.getDimSize(kDim), nBlock = bt.getDimSize(nDim);
  if (!attr || !attr.getElementType().isInteger(8) || kTotal % kBlock != 0)
    return {};
  Value packedBlock = slicePackedConstant(rewriter, loc, constant, offsets, bt, kByN, cols, group);
  if (!packedBlock)
    return {};
  // Each column's sum over each reduction block of this block's size.
  SmallVector<int8_t> values(attr.getValues<int8_t>());
  SmallVector<int32_t> sums((kTotal / kBlock) * nTotal, 0);
  for (int64_t nn = 0; nn < nTotal; ++nn)
    for (int64_t kk = 0; kk < kTotal; ++kk)
      sums[(kk / kBlock) * nTotal + nn] +=
          kByN ? values[kk * nTotal + nn] : values[nn * kTotal + kk];
  OpBuilder::InsertPoint here = rewriter.saveInsertionPoint();
  rewriter.setInsertionPointAfter(constant);
  Type i32 = rewriter.getI32Type();
  Value wholeSums = arith::ConstantOp::create(
      rewriter, loc,
      DenseElementsAttr::get(RankedTensorType::get({kTotal / kBlock, nTotal / cols, cols}, i32),
                             ArrayRef<int32_t>(sums)));
  rewriter.restoreInsertionPoint(here);
  OpFoldResult zero = rewriter.getIndexAttr(0), one = rewriter.getIndexAttr(1);
  Value sumsBlock = tensor::ExtractSliceOp::create(
      rewriter, loc, RankedTensorType::get({nBlock / cols, cols}, i32), wholeSums,
      SmallVector<OpFoldResult>{dividedOffset(rewriter, loc, offsets[kDim], kBlock),
                                dividedOffset(rewriter, loc, offsets[nDim], cols), zero},
      SmallVector<OpFoldResult>{one, rewriter.getIndexAttr(nBlock / cols),
                                rewriter.getIndexAttr(cols)},
      SmallVector<OpFoldResult>(3, one));
  return {packedBlock, sumsBlock};
}

/// `cPanels` [m][panel][col] minus 128 times each column's sum of the
/// packed i8 block [panel][k / 4][col][4]: the products of vpdpbusd's
/// offset, which the block's dot products add.
Value Scheduler::subtractOffsetProducts(IRRewriter &rewriter, Location loc, Value packed,
                                        Value cPanels, bool overwrite, Value sums) {
  MLIRContext *ctx = rewriter.getContext();
  auto ct = cast<RankedTensorType>(cPanels.getType());
  if (!sums)
    sums = columnSums(rewriter, loc, packed);
  AffineExpr d0, d1, d2;
  bindDims(ctx, d0, d1, d2);
  // Loops (m, panel, col).
  SmallVector<AffineMap> maps = {AffineMap::get(3, 0, {d1, d2}, ctx),
                                 AffineMap::get(3, 0, {d0, d1, d2}, ctx)};
  SmallVector<utils::IteratorType> iterators(3, utils::IteratorType::parallel);
  return linalg::GenericOp::create(
             rewriter, loc, TypeRange{ct}, ValueRange{sums}, ValueRange{cPanels}, maps, iterators,
             [&](OpBuilder &b, Location l, ValueRange args) {
               // C - 128 * sum, or -128 * sum when C starts at zero.
               Value factor = arith::ConstantOp::create(
                   b, l, b.getI32IntegerAttr(overwrite ? -kInt8Offset : kInt8Offset));
               Value products = arith::MulIOp::create(b, l, args[0], factor);
               linalg::YieldOp::create(
                   b, l,
                   overwrite ? products
                             : arith::SubIOp::create(b, l, args[1], products).getResult());
             })
      .getResult(0);
}

/// Each column's sum of the packed i8 block [panel][k / 4][col][4], as
/// [panel][col] i32.
Value Scheduler::columnSums(IRRewriter &rewriter, Location loc, Value packed) {
  MLIRContext *ctx = rewriter.getContext();
  auto pt = cast<RankedTensorType>(packed.getType());
  Type i32 = rewriter.getI32Type();
  int64_t panels = pt.getDimSize(0), cols = pt.getDimSize(2), group = pt.getDimSize(3);
  AffineExpr d0, d1, d2, d3;
  bindDims(ctx, d0, d1, d2, d3);
  Value zero = arith::ConstantOp::create(rewriter, loc, rewriter.getZeroAttr(i32));
  auto filled = [&](ArrayRef<int64_t> shape) {
    Value empty = tensor::EmptyOp::create(rewriter, loc, shape, i32);
    return linalg::FillOp::create(rewriter, loc, zero, empty).getResult(0);
  };
  // The quads' lanes summed over k / 4 first, loops (panel, k / 4, col, 4):
  // a panel's [col][4] bytes are contiguous, so each step adds one row of
  // vectors (a reduction over (k / 4, 4) together read each column's bytes
  // one by one, 18% of an int8 MLP's time at batch 256).
  SmallVector<AffineMap> laneMaps = {AffineMap::get(4, 0, {d0, d1, d2, d3}, ctx),
                                     AffineMap::get(4, 0, {d0, d2, d3}, ctx)};
  SmallVector<utils::IteratorType> laneIterators = {
      utils::IteratorType::parallel, utils::IteratorType::reduction, utils::IteratorType::parallel,
      utils::IteratorType::parallel};
  auto laneSums = linalg::GenericOp::create(
      rewriter, loc, TypeRange{RankedTensorType::get({panels, cols, group}, i32)},
      ValueRange{packed}, ValueRange{filled({panels, cols, group})}, laneMaps, laneIterators,
      [&](OpBuilder &b, Location l, ValueRange args) {
        Value wide = arith::ExtSIOp::create(b, l, i32, args[0]);
        linalg::YieldOp::create(b, l, arith::AddIOp::create(b, l, args[1], wide).getResult());
      });
  // A panel's row of quads per register tile.
  setLoweringConfig(
      laneSums,
      LoweringConfigAttr::get(ctx, CpuKernel::Default).withRegisterTile({1, 1, cols, group}));
  // Then each column's quad, loops (panel, col, 4).
  SmallVector<AffineMap> sumMaps = {AffineMap::get(3, 0, {d0, d1, d2}, ctx),
                                    AffineMap::get(3, 0, {d0, d1}, ctx)};
  SmallVector<utils::IteratorType> sumIterators = {
      utils::IteratorType::parallel, utils::IteratorType::parallel, utils::IteratorType::reduction};
  return linalg::GenericOp::create(
             rewriter, loc, TypeRange{RankedTensorType::get({panels, cols}, i32)},
             ValueRange{laneSums.getResult(0)}, ValueRange{filled({panels, cols})}, sumMaps,
             sumIterators,
             [&](OpBuilder &b, Location l, ValueRange args) {
               linalg::YieldOp::create(b, l,
                                       arith::AddIOp::create(b, l, args[1], args[0]).getResult());
             })
      .getResult(0);
}

/// All of a static tile as one vector (the dot-product lowerings read
/// their operands and accumulators whole).
Value Scheduler::readWholeTile(IRRewriter &rewriter, Location loc, Value tensor, VectorType type) {
  Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
  Value pad = ub::PoisonOp::create(rewriter, loc, type.getElementType());
  return vector::TransferReadOp::create(rewriter, loc, type, tensor,
                                        SmallVector<Value>(type.getRank(), zero), pad,
                                        SmallVector<bool>(type.getRank(), true));
}

/// `vector` written over all of the static tile `tensor`; the new tensor.
Value Scheduler::writeWholeTile(IRRewriter &rewriter, Location loc, Value vector, Value tensor) {
  int64_t rank = cast<VectorType>(vector.getType()).getRank();
  Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
  return vector::TransferWriteOp::create(rewriter, loc, vector, tensor,
                                         SmallVector<Value>(rank, zero),
                                         SmallVector<bool>(rank, true))
      .getResult();
}

/// Whether `op`, a register tile of packDotProductGroups' product with the
/// reduction whole (loops m, n, k / group, group), can run on AMX tiles: A
/// [m][k / g][g] and B [k / g][n][g] of the target's tile types, static, in
/// whole tiles (rows and columns multiples of 16, the reduction of 64-byte
/// steps). mithril-x86-tile-matmuls writes it.
bool Scheduler::isTileMatmul(linalg::GenericOp op) const {
  Type et = getElementTypeOrSelf(op.getDpsInputOperand(0)->get().getType());
  if (!strategy.registers.tilesFor(et) ||
      getElementTypeOrSelf(op.getDpsInputOperand(1)->get().getType()) != et)
    return false;
  int64_t group = dotProductGroup(et);
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  return op.getIndexingMapsArray() == tileMatmulMaps(op.getContext()) &&
         !ShapedType::isDynamicShape(ranges) && ranges[0] % kAmxTileRows == 0 &&
         ranges[1] % kAmxTileRows == 0 && ranges[2] % (amxStepElements(et) / group) == 0 &&
         ranges[3] == group;
}

/// Writes the register tiles of packDotProductGroups' products as dot
/// products: per row, the row's group of A (a pair of bf16, or a quad of i8
/// offset to unsigned) broadcast to every 32-bit lane, times 16 columns'
/// groups of B, summed into 16 accumulators by one vdpbf16ps or vpdpbusd.
/// Each tile is (after dropTileUnitDims) a generic over (m, n, group)
/// reading A[m][g], B[n][g] and accumulating C[m][n]; one that is not stays
/// for the vectorizer, which computes the same numbers element by element.
void Scheduler::lowerDotProductTiles(IRRewriter &rewriter, ModuleOp module) const {
  SmallVector<linalg::GenericOp> tiles, zeroStarts;
  module.walk([&](linalg::GenericOp op) {
    if (!hasKernel(op, CpuKernel::PackedMatmul) || !op.hasPureTensorSemantics() ||
        op.getNumDpsInputs() != 2)
      return;
    if (op.getNumLoops() == 4 && isTileMatmul(op))
      return setCpuKernel(op, CpuKernel::TileMatmul);
    // A tile whose fill was dropped for tilezero (kZeroAccumulatorAttr) but
    // is not on tiles after all gets the zeros back.
    if (op->hasAttr(kZeroAccumulatorAttr))
      zeroStarts.push_back(op);
    if (op.getNumLoops() != 3)
      return;
    Type et = getElementTypeOrSelf(op.getDpsInputOperand(0)->get().getType());
    if (et.isBF16() || et.isInteger(8))
      tiles.push_back(op);
  });
  for (linalg::GenericOp op : zeroStarts)
    restoreZeroAccumulator(rewriter, op);
  for (linalg::GenericOp op : tiles) {
    MLIRContext *ctx = op.getContext();
    Type et = getElementTypeOrSelf(op.getDpsInputOperand(0)->get().getType());
    Type accumulator = getElementTypeOrSelf(op->getResult(0).getType());
    int64_t group = dotProductGroup(et);
    AffineExpr dm, dn, dg;
    bindDims(ctx, dm, dn, dg);
    SmallVector<AffineMap> expected = {AffineMap::get(3, 0, {dm, dg}, ctx),
                                       AffineMap::get(3, 0, {dn, dg}, ctx),
                                       AffineMap::get(3, 0, {dm, dn}, ctx)};
    SmallVector<int64_t> ranges = op.getStaticLoopRanges();
    if (op.getIndexingMapsArray() != expected || ranges[2] != group ||
        ShapedType::isDynamic(ranges[0]) || ShapedType::isDynamic(ranges[1]) || ranges[1] % 16 != 0)
      continue;
    int64_t rows = ranges[0], cols = ranges[1];
    Location loc = op.getLoc();
    rewriter.setInsertionPoint(op);
    Type i32 = rewriter.getI32Type();
    auto read = [&](Value tensor, ArrayRef<int64_t> shape, Type type) {
      return readWholeTile(rewriter, loc, tensor, VectorType::get(shape, type));
    };
    Value a = read(op.getDpsInputOperand(0)->get(), {rows, group}, et);
    // B's tile is contiguous: one 1-D read (a 2-D one becomes a read per
    // column).
    Value bFlat = tensor::CollapseShapeOp::create(rewriter, loc, op.getDpsInputOperand(1)->get(),
                                                  SmallVector<ReassociationIndices>{{0, 1}});
    Value b = read(bFlat, {cols * group}, et);
    Value c = read(op.getDpsInitOperand(0)->get(), {rows, cols}, accumulator);
    // A row's group as one 32-bit lane, and B's groups of 16 columns as one
    // 512-bit vector each.
    auto operandType = VectorType::get({16 * group}, et);
    Value aLanes = vector::BitCastOp::create(rewriter, loc, VectorType::get({rows, 1}, i32), a);
    Value bChunks =
        vector::ShapeCastOp::create(rewriter, loc, VectorType::get({cols / 16, 16 * group}, et), b);
    SmallVector<Value> bChunk;
    for (int64_t j = 0; j < cols / 16; ++j)
      bChunk.push_back(vector::ExtractOp::create(rewriter, loc, bChunks, ArrayRef<int64_t>{j}));
    // i8: the products of 16 columns as the contraction vpdpbusd computes,
    // unsigned bytes of A (offset by 128: their sign bits flipped) times
    // signed bytes of B, each quad summed into an i32 lane; the contraction
    // becomes the instruction after bufferization (mithril-x86-dot-
    // products), as an intrinsic call here would stop bufferization.
    Value quads;
    SmallVector<Value> bWide;
    AffineExpr column, step;
    bindDims(ctx, column, step);
    auto quadMaps = rewriter.getAffineMapArrayAttr({AffineMap::get(2, 0, {step}, ctx),
                                                    AffineMap::get(2, 0, {column, step}, ctx),
                                                    AffineMap::get(2, 0, {column}, ctx)});
    auto quadIterators = rewriter.getArrayAttr(
        {vector::IteratorTypeAttr::get(ctx, vector::IteratorType::parallel),
         vector::IteratorTypeAttr::get(ctx, vector::IteratorType::reduction)});
    if (et.isInteger(8)) {
      quads = a;
      for (Value chunk : bChunk)
        bWide.push_back(arith::ExtSIOp::create(
            rewriter, loc, VectorType::get({16, group}, i32),
            vector::ShapeCastOp::create(rewriter, loc, VectorType::get({16, group}, et), chunk)));
    }
    Value result = c;
    for (int64_t i = 0; i < rows; ++i) {
      Value row = vector::ExtractOp::create(rewriter, loc, result, ArrayRef<int64_t>{i});
      Value broadcast, quad;
      if (et.isBF16()) {
        Value lane = vector::ExtractOp::create(rewriter, loc, aLanes, ArrayRef<int64_t>{i, 0});
        broadcast = vector::BitCastOp::create(
            rewriter, loc, operandType,
            vector::BroadcastOp::create(rewriter, loc, VectorType::get({16}, i32), lane));
      } else {
        Value bytes = vector::ExtractOp::create(rewriter, loc, quads, ArrayRef<int64_t>{i});
        // The bytes were offset to unsigned when packing (flipSignBits).
        quad = arith::ExtUIOp::create(rewriter, loc, VectorType::get({group}, i32), bytes);
      }
      for (int64_t j = 0; j < cols / 16; ++j) {
        Value acc =
            vector::ExtractStridedSliceOp::create(rewriter, loc, row, ArrayRef<int64_t>{16 * j},
                                                  ArrayRef<int64_t>{16}, ArrayRef<int64_t>{1});
        Value dot;
        if (et.isBF16())
          dot =
              x86vector::DotBF16Op::create(rewriter, loc, acc.getType(), acc, broadcast, bChunk[j]);
        else
          dot = vector::ContractionOp::create(rewriter, loc, quad, bWide[j], acc, quadMaps,
                                              quadIterators);
        row = vector::InsertStridedSliceOp::create(rewriter, loc, dot, row,
                                                   ArrayRef<int64_t>{16 * j}, ArrayRef<int64_t>{1});
      }
      result = vector::InsertOp::create(rewriter, loc, row, result, ArrayRef<int64_t>{i});
    }
    rewriter.replaceOp(op, writeWholeTile(rewriter, loc, result, op.getDpsInitOperand(0)->get()));
  }
}
