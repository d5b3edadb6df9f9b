//===- MatrixVector.cpp - matrix-vector products on a weight's layout ---===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
// A matmul of a few rows by a transposed weight as partial sums over the
// weight's rows (and vdpbf16ps for bf16), their lanes summed in registers.
//
//===----------------------------------------------------------------------===//

#include "Schedule.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tensor/Utils/Utils.h"
#include "mlir/Dialect/UB/IR/UBOps.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/X86Vector/X86VectorDialect.h"
#include "llvm/ADT/SetVector.h"

#include <cstring>
#include <vector>

using namespace mlir;
using namespace mithril;
using namespace mithril::cpu;
using namespace mithril::cpu::detail;

/// A matmul's right operand that is a constant [k, n] (a Linear layer's
/// weight compiled in, its transpose folded) of fewer than kGemvNarrowColumns
/// columns, or read by at most kGemvConstantMaxRows rows, as a transpose of
/// a new constant [n, k], set as the operand; null otherwise. Otherwise the
/// compiled-in last layer of the MLP 784-512-512-10 took the packed kernels'
/// path, its 10 columns by broadcasts of A's elements gathered down its
/// columns, and the MLP at batch 1 a one-row tile of the packed path on one
/// thread however many it had.
static linalg::TransposeOp transposedConstantWeight(IRRewriter &rewriter, linalg::MatmulOp matmul) {
  OpOperand &right = *matmul.getDpsInputOperand(1);
  auto constant = right.get().getDefiningOp<arith::ConstantOp>();
  auto values = constant ? dyn_cast<DenseElementsAttr>(constant.getValue()) : nullptr;
  auto type = values ? dyn_cast<RankedTensorType>(values.getType()) : nullptr;
  if (!type || type.getRank() != 2 || !type.hasStaticShape() ||
      !isa<FloatType>(type.getElementType()))
    return nullptr;
  int64_t productRows =
      cast<ShapedType>(matmul.getDpsInputOperand(0)->get().getType()).getDimSize(0);
  bool fewRows = !ShapedType::isDynamic(productRows) && productRows <= kGemvConstantMaxRows;
  if (type.getDimSize(1) >= kGemvNarrowColumns && !fewRows)
    return nullptr;
  int64_t k = type.getDimSize(0), n = type.getDimSize(1);
  // Only where the rewrite takes it (whole steps of lanes): otherwise the
  // constant stays as the packed path reads it.
  if (k % kGemvLanes != 0 || k < 2 * kGemvLanes || type.getElementTypeBitWidth() % 8 != 0)
    return nullptr;
  auto rowsType = RankedTensorType::get({n, k}, type.getElementType());
  DenseElementsAttr transposed;
  if (values.isSplat()) {
    transposed = values.reshape(rowsType);
  } else {
    // The bytes moved as they are (an APFloat per element took 60 ms for the
    // MLP's two hidden layers on an Intel Xeon with AMX, avx512f).
    ArrayRef<char> raw = values.getRawData();
    size_t bytes = type.getElementTypeBitWidth() / 8;
    std::vector<char> rows(raw.size());
    for (int64_t i = 0; i < k; ++i)
      for (int64_t j = 0; j < n; ++j)
        std::memcpy(&rows[(j * k + i) * bytes], &raw[(i * n + j) * bytes], bytes);
    transposed = DenseElementsAttr::getFromRawBuffer(rowsType, rows);
  }
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPoint(matmul);
  Location loc = constant.getLoc();
  Value weight = arith::ConstantOp::create(rewriter, loc, transposed);
  Value empty = tensor::EmptyOp::create(rewriter, loc, type.getShape(), type.getElementType());
  auto transpose =
      linalg::TransposeOp::create(rewriter, loc, weight, empty, ArrayRef<int64_t>{1, 0});
  rewriter.modifyOpInPlace(matmul, [&] { right.set(transpose.getResult()[0]); });
  return transpose;
}

/// Rows up to which a product by a weight of kGemvNarrowColumns or more
/// columns whose reduction the lanes do not divide takes the lane sums and
/// a product of the rest; the packed kernels take more. (One Zen 4 core,
/// packed against lane sums: 1 x 1000 by 1000 columns 0.168 -> 0.050 ms, 1 x
/// 100 by 512 0.0095 -> 0.0035, 4 rows 0.0104 -> 0.0062; 8 and 12 rows
/// within 3%; 16 rows 0.0167 against 0.0202, 16 x 1000 by 512 0.146 against
/// 0.152. Narrow ones take it for any rows: 256 x 500 by one column 0.022 ->
/// 0.006 ms, 256 x 100 by 10 the same both ways.)
static constexpr int64_t kGemvRestMaxRows = 8;

/// A float matmul's right operand [k, n] of fewer than kGemvNarrowColumns
/// columns, not a transpose (a product by a few columns the user wrote, `x @
/// w` for w [k, 1]), copied to rows [n, k] (a view where n is 1) and read
/// through a transpose, set as the operand; null where the product is not
/// such, or the lane sums would not take it. The packed kernels read A down
/// its columns, a few rows a step, for each of the few columns: 256 x 512 by
/// one column took 0.022 ms against numpy's 0.007 (one Zen 4 core); the copy
/// is k x n elements, 1/m of the product's work.
static linalg::TransposeOp transposedNarrowOperand(IRRewriter &rewriter, linalg::MatmulOp matmul,
                                                   int64_t lanes) {
  Value a = matmul.getDpsInputOperand(0)->get(), b = matmul.getDpsInputOperand(1)->get();
  auto type = dyn_cast<RankedTensorType>(b.getType());
  Type et = getElementTypeOrSelf(matmul->getResult(0).getType());
  SmallVector<int64_t> ranges = matmul.getStaticLoopRanges();
  if (!type || !(et.isF32() || et.isF64()) || getElementTypeOrSelf(a.getType()) != et ||
      type.getElementType() != et || llvm::any_of(ranges, ShapedType::isDynamic))
    return nullptr;
  int64_t n = ranges[1], k = ranges[2];
  // (A read by rows: A transposed itself would be read down its columns.)
  if (n >= kGemvNarrowColumns || k - k % lanes < 2 * lanes ||
      b.getDefiningOp<arith::ConstantOp>() || a.getDefiningOp<linalg::TransposeOp>())
    return nullptr;
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPoint(matmul);
  Location loc = matmul.getLoc();
  auto rowsType = RankedTensorType::get({n, k}, et);
  Value rows;
  if (n == 1) {
    SmallVector<ReassociationIndices> both = {{0, 1}};
    Value flat = tensor::CollapseShapeOp::create(rewriter, loc, b, both);
    rows = tensor::ExpandShapeOp::create(rewriter, loc, rowsType, flat, both);
  } else {
    Value empty = tensor::EmptyOp::create(rewriter, loc, rowsType.getShape(), et);
    rows = linalg::TransposeOp::create(rewriter, loc, b, empty, ArrayRef<int64_t>{1, 0})
               .getResult()[0];
  }
  Value empty = tensor::EmptyOp::create(rewriter, loc, type.getShape(), et);
  auto transpose = linalg::TransposeOp::create(rewriter, loc, rows, empty, ArrayRef<int64_t>{1, 0});
  rewriter.modifyOpInPlace(matmul,
                           [&] { matmul.getDpsInputOperand(1)->set(transpose.getResult()[0]); });
  return transpose;
}

/// Weight rows of a matrix-vector register tile, for the L1 budget below
/// (4 with AVX-512 and with AVX2).
static constexpr int64_t kGemvTileWeightRows = 4;

/// The parts a matrix-vector product of `rows` rows splits its `steps`
/// steps of `lanes` into: each weight-row group of the product's tiles
/// reads its rows of the weight for every row of A in turn, so A's rows and
/// a group's weight rows over a part stay within two thirds of the L1 (the
/// lane sums, one more per part and tile, cost less than A read from L2).
/// One Zen 5 core (48 KiB L1), a Linear layer's product x @ W^T at batch 16,
/// 512 columns: 784 deep 203 GFLOP/s whole (A 50 KiB), as 400 + 384 246-249;
/// 1024 deep 186, 512 240, 256 231; 8 rows 784 deep 218, in two 236-238.
///
/// Only where the core computes 512 bits a cycle and pipe: a tile of r rows
/// of A by 4 weight rows reads r vectors of A per 4r FMAs, at two FMAs a
/// cycle datapath / 16 bytes of A a cycle whatever r, 32 on 512-bit
/// datapaths, which the L2 does not sustain beside the weight's stream, 16
/// on 256-bit ones (Zen 4's AVX-512, AVX2 code anywhere), which it does:
/// the parts' lane sums and shorter loops then only cost. (One Zen 4 core,
/// the MLP at batch 16, alternated: AVX-512 code 0.196 -> 0.189 ms whole,
/// its 784 in 17 + 16 + 16 steps before; AVX2 code 0.234 -> 0.214, 784 in
/// 33 + 33 + 32 steps of 8 lanes.)
int64_t Scheduler::matrixVectorReductionParts(int64_t rows, int64_t steps, int64_t lanes,
                                              Type element) const {
  if (strategy.datapathBits < 512)
    return 1;
  int64_t bytes = std::max<int64_t>(1, element.getIntOrFloatBitWidth() / 8);
  int64_t stepBytes = (rows + kGemvTileWeightRows) * lanes * bytes;
  int64_t budget = strategy.l1Bytes * 7 / 8;
  if (steps * stepBytes <= budget)
    return 1;
  // At least two steps a part, so that no part is all lane sums.
  int64_t partSteps = std::max<int64_t>(2, budget / stepBytes);
  return std::max<int64_t>(1,
                           std::min<int64_t>(steps / 2, llvm::divideCeilSigned(steps, partSteps)));
}

/// A matmul with at most kGemvMaxRows rows (or fewer than kGemvNarrowColumns
/// columns) whose right operand is a transposed matrix (a Linear layer's
/// weight, stored [out, in]) becomes a
/// matrix-vector product on the weight's own layout: the reduction is split
/// into steps of kGemvLanes lanes of partial sums, so that each step reads
/// contiguous rows of the weight and does full-width FMAs, and the lanes
/// are summed once at the end. The transpose is no longer materialized.
LogicalResult Scheduler::rewriteMatrixVectorProducts(IRRewriter &rewriter,
                                                     ArrayRef<linalg::LinalgOp> ops) {
  for (linalg::LinalgOp op : ops) {
    auto matmul = dyn_cast<linalg::MatmulOp>(op.getOperation());
    if (!matmul || !matmul.hasPureTensorSemantics())
      continue;
    if (succeeded(rewriteInt8MatrixVectorProduct(rewriter, matmul)))
      continue;
    auto transpose = matmul.getDpsInputOperand(1)->get().getDefiningOp<linalg::TransposeOp>();
    if (!transpose)
      transpose = transposedConstantWeight(rewriter, matmul);
    // (Its own copy of the operand's rows, which nothing else reads: the
    // swaps below are for weights.)
    bool narrowOperand = false;
    if (!transpose) {
      transpose = transposedNarrowOperand(rewriter, matmul,
                                          strategy.registers.matrixVectorLanes(getElementTypeOrSelf(
                                              matmul->getResult(0).getType())));
      narrowOperand = static_cast<bool>(transpose);
    }
    if (!transpose || transpose.getPermutation() != ArrayRef<int64_t>{1, 0})
      continue;
    SmallVector<int64_t> ranges = op.getStaticLoopRanges();
    Type et = getElementTypeOrSelf(op->getResult(0).getType());
    // Few rows, or few columns (the packed kernels' panel of a 10-column
    // weight widened it element by element: the last layer of the MLP
    // 784-512-512-10 at batch 256 took 0.26 ms alone, 0.05 ms here, f32 and
    // bf16 alike, Emerald Rapids).
    bool matrixVector = !llvm::any_of(ranges, ShapedType::isDynamic) &&
                        (ranges[0] <= kGemvMaxRows || ranges[1] < kGemvNarrowColumns);
    // Many rows of A computed from a product that swaps: A comes
    // transposed at no cost there, and the product swaps too (the MLP's
    // last layer after two swapped ones, swapWeightProducts).
    if (matrixVector && !narrowOperand && ranges[0] > kGemvMaxRows &&
        swapsAfterSwappedProduct(matmul))
      continue;
    if (matrixVector && ranges[0] > kGemvMaxRows &&
        succeeded(padColumnsForTiles(rewriter, matmul, transpose)))
      continue;
    if (matrixVector && !narrowOperand && swapsOntoTiles(matmul) && weightSwap(matmul))
      continue;
    if (matrixVector && succeeded(rewriteBF16MatrixVectorProduct(rewriter, matmul, transpose)))
      continue;
    // (Lanes of the inputs' type: bf16 products accumulate f32.)
    int64_t lanes = strategy.registers.matrixVectorLanes(
        getElementTypeOrSelf(matmul.getDpsInputOperand(0)->get().getType()));
    // A reduction that the lanes do not divide (a layer of 100 inputs) takes
    // the lanes over its whole steps and a product of the few left after,
    // but on more than kGemvRestMaxRows rows of a wide weight.
    int64_t depth = ranges[2], rest = depth % lanes;
    // At least two steps of lanes, but for one row: the packed kernels'
    // pack of the transposed weight costs it more than the lane sums (1 x 24
    // by 1000 0.0058 -> 0.0037 ms, 1 x 16 by 1000 0.0045 -> 0.0021; 4 rows
    // 0.0057 against 0.0071 and 8 rows 0.0061 against 0.0113 packed).
    int64_t minSteps = ranges[0] == 1 ? 1 : 2;
    if (!matrixVector || depth - rest < minSteps * lanes || !isa<FloatType>(et))
      continue;
    if (rest != 0 && ranges[0] > kGemvRestMaxRows && ranges[1] >= kGemvNarrowColumns)
      continue;
    Location loc = op.getLoc();
    rewriter.setInsertionPoint(op);
    Value a = matmul.getDpsInputOperand(0)->get(), rows = transpose.getInput();
    auto columnsOf = [&](Value matrix, int64_t from, int64_t count) {
      int64_t height = cast<ShapedType>(matrix.getType()).getDimSize(0);
      return tensor::ExtractSliceOp::create(
                 rewriter, loc, matrix,
                 ArrayRef<OpFoldResult>{rewriter.getIndexAttr(0), rewriter.getIndexAttr(from)},
                 ArrayRef<OpFoldResult>{rewriter.getIndexAttr(height),
                                        rewriter.getIndexAttr(count)},
                 ArrayRef<OpFoldResult>{rewriter.getIndexAttr(1), rewriter.getIndexAttr(1)})
          .getResult();
    };
    Value restA, restRows;
    if (rest != 0) {
      restA = columnsOf(a, depth - rest, rest);
      restRows = columnsOf(rows, depth - rest, rest);
    }
    AffineExpr m, n, k;
    bindDims(ctx, m, n, k);
    SmallVector<AffineMap> maps = {AffineMap::get(3, 0, {m, k}, ctx),
                                   AffineMap::get(3, 0, {n, k}, ctx),
                                   AffineMap::get(3, 0, {m, n}, ctx)};
    SmallVector<utils::IteratorType> iterators = {utils::IteratorType::parallel,
                                                  utils::IteratorType::parallel,
                                                  utils::IteratorType::reduction};
    // The whole steps, in parts whose rows of A stay in L1 with a tile's
    // weight rows, each adding its lane sums to the last one's result. (Many
    // rows by few columns read each row of A once: one part.)
    int64_t steps = (depth - rest) / lanes;
    int64_t parts =
        ranges[0] <= kGemvMaxRows ? matrixVectorReductionParts(ranges[0], steps, lanes, et) : 1;
    SmallVector<linalg::GenericOp> products;
    Value result = matmul.getDpsInitOperand(0)->get();
    for (int64_t part = 0, from = 0; part < parts; ++part) {
      int64_t count = (steps / parts + (part < steps % parts ? 1 : 0)) * lanes;
      bool whole = parts == 1 && rest == 0;
      Value partA = whole ? a : columnsOf(a, from, count);
      Value partRows = whole ? rows : columnsOf(rows, from, count);
      products.push_back(linalg::GenericOp::create(rewriter, loc, op->getResultTypes(),
                                                   ValueRange{partA, partRows}, ValueRange{result},
                                                   maps, iterators, mithril::yieldMultiplyAdd));
      result = products.back().getResult(0);
      from += count;
    }
    if (rest != 0) {
      // (The rest's few rows of the weight transposed: [rest, n] elements.)
      auto restType = cast<ShapedType>(restRows.getType());
      Value empty = tensor::EmptyOp::create(
          rewriter, loc, ArrayRef<int64_t>{restType.getDimSize(1), restType.getDimSize(0)},
          restType.getElementType());
      Value restB =
          linalg::TransposeOp::create(rewriter, loc, restRows, empty, ArrayRef<int64_t>{1, 0})
              .getResult()[0];
      result = linalg::MatmulOp::create(rewriter, loc, op->getResultTypes(),
                                        ValueRange{restA, restB}, ValueRange{result})
                   .getResult(0);
    }
    rewriter.replaceOp(op, result);
    if (transpose->use_empty())
      rewriter.eraseOp(transpose);
    for (linalg::GenericOp product : products) {
      rewriter.setInsertionPoint(product);
      FailureOr<linalg::SplitReductionResult> split = linalg::splitReduction(
          rewriter, cast<linalg::LinalgOp>(product.getOperation()), [&](linalg::LinalgOp) {
            return linalg::SplitReductionOptions{lanes, /*index=*/2,
                                                 /*innerParallel=*/true};
          });
      if (failed(split))
        return product.emitError("mithril-cpu-schedule: cannot split this reduction");
      configureTile(split->splitLinalgOp, CpuKernel::MatrixVector, /*beforeSplit=*/true);
      configureTile(split->resultCombiningLinalgOp, CpuKernel::LaneSum, /*beforeSplit=*/true);
    }
  }
  return success();
}

/// (The last layer of the bf16 MLP 784-512-512-10 at batch 256 as lane sums
/// of vdpbf16ps took 0.029 ms on one core of a Xeon with AMX; on a tile of
/// 16 columns, 6 of them zeros, it is 16 tile products of each 16 rows.)
LogicalResult Scheduler::padColumnsForTiles(IRRewriter &rewriter, linalg::MatmulOp matmul,
                                            linalg::TransposeOp transpose) {
  Value a = matmul.getDpsInputOperand(0)->get(), w = transpose.getInput();
  Value init = matmul.getDpsInitOperand(0)->get();
  Type et = getElementTypeOrSelf(a.getType());
  auto resultType = dyn_cast<RankedTensorType>(matmul->getResult(0).getType());
  SmallVector<int64_t> ranges = matmul.getStaticLoopRanges();
  if (!et.isBF16() || !strategy.registers.tilesFor(et) || getElementTypeOrSelf(w.getType()) != et ||
      !resultType || llvm::any_of(ranges, ShapedType::isDynamic))
    return failure();
  int64_t m = ranges[0], n = ranges[1], k = ranges[2];
  // (At least a quarter of the tile's columns real: fewer, and the lane
  // sums' work is a small fraction of the padded tile's.)
  if (m % kAmxTileRows != 0 || n >= kAmxTileRows || 4 * n < kAmxTileRows || k < amxStepElements(et))
    return failure();
  Location loc = matmul.getLoc();
  rewriter.setInsertionPoint(matmul);
  auto zeroOf = [&](Type type) -> Value {
    return arith::ConstantOp::create(rewriter, loc, cast<TypedAttr>(rewriter.getZeroAttr(type)));
  };
  // The weight [n][k] with zero rows to 16 (a constant padded now).
  Value paddedWeight;
  if (auto constant = w.getDefiningOp<arith::ConstantOp>())
    if (auto attr = dyn_cast<DenseElementsAttr>(constant.getValue()))
      if (DenseElementsAttr padded = sliceOfMatrix(attr, {0, 0}, {n, k}, {kAmxTileRows, k}))
        paddedWeight = arith::ConstantOp::create(rewriter, loc, padded);
  if (!paddedWeight)
    paddedWeight = tensor::createPadHighOp(RankedTensorType::get({kAmxTileRows, k}, et), w,
                                           zeroOf(et), /*nofold=*/false, loc, rewriter);
  Value empty = tensor::EmptyOp::create(rewriter, loc, ArrayRef<int64_t>{k, kAmxTileRows}, et);
  Value b = linalg::TransposeOp::create(rewriter, loc, paddedWeight, empty, ArrayRef<int64_t>{1, 0})
                .getResult()[0];
  // The accumulator widened the same way: a fill of its own, or the init's
  // values and zeros.
  auto paddedResultType = RankedTensorType::get({m, kAmxTileRows}, resultType.getElementType());
  Value paddedInit;
  if (auto fill = init.getDefiningOp<linalg::FillOp>()) {
    Value wide = tensor::EmptyOp::create(rewriter, loc, paddedResultType.getShape(),
                                         paddedResultType.getElementType());
    paddedInit = linalg::FillOp::create(rewriter, loc, fill.value(), wide).getResult(0);
  } else {
    paddedInit =
        tensor::createPadHighOp(paddedResultType, init, zeroOf(resultType.getElementType()),
                                /*nofold=*/false, loc, rewriter);
  }
  auto product = linalg::MatmulOp::create(rewriter, loc, TypeRange{paddedResultType},
                                          ValueRange{a, b}, ValueRange{paddedInit});
  Value columns = tensor::ExtractSliceOp::create(
      rewriter, loc, resultType, product.getResult(0), getAsIndexOpFoldResult(ctx, {0, 0}),
      getAsIndexOpFoldResult(ctx, {m, n}), getAsIndexOpFoldResult(ctx, {1, 1}));
  rewriter.replaceOp(matmul, columns);
  if (transpose->use_empty())
    rewriter.eraseOp(transpose);
  return success();
}

/// The bf16 form of a matrix-vector product for vdpbf16ps: A [m][k] and
/// the weight W [n][k] viewed as [.][k / 32][16][2], partial sums P[m][n]
/// [16] accumulating A[m][kk][l][p] * W[n][kk][l][p] over kk and p (one
/// vdpbf16ps per row, column and 32 reduction steps: both operands read
/// contiguously), then summed over the 16 lanes; where vdpbf16ps is slow,
/// A of two rows or more is widened to f32 first (below). Fails (and leaves
/// the matmul) unless both operands are bf16, the target has AVX512-BF16
/// and the reduction is a multiple of 32.
LogicalResult Scheduler::rewriteBF16MatrixVectorProduct(IRRewriter &rewriter,
                                                        linalg::MatmulOp matmul,
                                                        linalg::TransposeOp transpose) {
  Value a = matmul.getDpsInputOperand(0)->get(), w = transpose.getInput();
  Value c = matmul.getDpsInitOperand(0)->get();
  auto at = cast<RankedTensorType>(a.getType());
  auto wt = cast<RankedTensorType>(w.getType());
  auto ct = cast<RankedTensorType>(c.getType());
  if (!strategy.registers.bf16MatrixVectorDots || !at.getElementType().isBF16() ||
      !wt.getElementType().isBF16() || !ct.getElementType().isF32() || !at.hasStaticShape() ||
      !wt.hasStaticShape())
    return failure();
  int64_t m = at.getDimSize(0), k = at.getDimSize(1), n = wt.getDimSize(0);
  constexpr int64_t lanes = 16, pair = 2;
  if (k < 2 * lanes * pair)
    return failure();
  if (k % (lanes * pair) != 0) {
    // 784 = 24 x 32 + 16: the whole groups here, the rest in a second
    // product that accumulates onto this one's result.
    int64_t whole = k - k % (lanes * pair);
    rewriter.setInsertionPoint(matmul);
    Location loc = matmul.getLoc();
    auto slice = [&](Value v, int64_t rowCount, int64_t offset, int64_t size) -> Value {
      return tensor::ExtractSliceOp::create(
          rewriter, loc, v,
          SmallVector<OpFoldResult>{rewriter.getIndexAttr(0), rewriter.getIndexAttr(offset)},
          SmallVector<OpFoldResult>{rewriter.getIndexAttr(rowCount), rewriter.getIndexAttr(size)},
          SmallVector<OpFoldResult>{rewriter.getIndexAttr(1), rewriter.getIndexAttr(1)});
    };
    auto transposed = [&](Value v) -> linalg::TransposeOp {
      auto type = cast<RankedTensorType>(v.getType());
      Value empty = tensor::EmptyOp::create(
          rewriter, loc, ArrayRef<int64_t>{type.getDimSize(1), type.getDimSize(0)},
          type.getElementType());
      return linalg::TransposeOp::create(rewriter, loc, v, empty, ArrayRef<int64_t>{1, 0});
    };
    linalg::TransposeOp headT = transposed(slice(w, n, 0, whole));
    auto head = linalg::MatmulOp::create(rewriter, loc, TypeRange{ct},
                                         ValueRange{slice(a, m, 0, whole), headT.getResult()[0]},
                                         ValueRange{c});
    linalg::TransposeOp tailT = transposed(slice(w, n, whole, k - whole));
    auto tail =
        linalg::MatmulOp::create(rewriter, loc, TypeRange{ct},
                                 ValueRange{slice(a, m, whole, k - whole), tailT.getResult()[0]},
                                 ValueRange{head.getResult(0)});
    rewriter.replaceOp(matmul, tail.getResult(0));
    if (transpose->use_empty())
      rewriter.eraseOp(transpose);
    return rewriteBF16MatrixVectorProduct(rewriter, head, headT);
  }
  int64_t steps = k / (lanes * pair);
  Location loc = matmul.getLoc();
  Type bf16 = rewriter.getBF16Type(), f32 = rewriter.getF32Type();
  rewriter.setInsertionPoint(matmul);
  SmallVector<ReassociationIndices> groups = {{0}, {1, 2, 3}};
  Value aGroups = tensor::ExpandShapeOp::create(
      rewriter, loc, RankedTensorType::get({m, steps, lanes, pair}, bf16), a, groups);
  AffineExpr dm, dn, dk, dl, dp;
  bindDims(ctx, dm, dn, dk, dl, dp);
  using utils::IteratorType;
  // Where the tiles widen bf16 to f32 in registers (addBF16DotProducts), A,
  // the few rows, widens once here rather than in every tile: [m][k / 32]
  // [2][16] f32, each group's even steps, then its odd ones, as the tiles
  // split the weight's. The tiles then widen only the weight's rows, and
  // take 8 rows of A by 2 of the weight (4 widening ops for 32 FMAs).
  Value aOperand = aGroups;
  AffineMap aMap = AffineMap::get(5, 0, {dm, dk, dl, dp}, ctx);
  if (!strategy.registers.bf16DotProduct && m >= 2) {
    auto wideType = RankedTensorType::get({m, steps, pair, lanes}, f32);
    AffineExpr i, s, p, l;
    bindDims(ctx, i, s, p, l);
    auto widened = linalg::GenericOp::create(
        rewriter, loc, TypeRange{wideType}, ValueRange{aGroups},
        ValueRange{tensor::EmptyOp::create(rewriter, loc, wideType.getShape(), f32)},
        SmallVector<AffineMap>{AffineMap::get(4, 0, {i, s, l, p}, ctx),
                               AffineMap::getMultiDimIdentityMap(4, ctx)},
        SmallVector<IteratorType>(4, IteratorType::parallel),
        [&](OpBuilder &b, Location nested, ValueRange args) {
          linalg::YieldOp::create(b, nested,
                                  arith::ExtFOp::create(b, nested, f32, args[0]).getResult());
        });
    aOperand = widened.getResult(0);
    aMap = AffineMap::get(5, 0, {dm, dk, dp, dl}, ctx);
  }
  Value wGroups = tensor::ExpandShapeOp::create(
      rewriter, loc, RankedTensorType::get({n, steps, lanes, pair}, bf16), w, groups);
  Value zero = arith::ConstantOp::create(rewriter, loc, rewriter.getZeroAttr(f32));
  Value partialInit =
      linalg::FillOp::create(
          rewriter, loc, zero,
          tensor::EmptyOp::create(rewriter, loc, ArrayRef<int64_t>{m, n, lanes}, f32).getResult())
          .getResult(0);
  SmallVector<AffineMap> maps = {aMap, AffineMap::get(5, 0, {dn, dk, dl, dp}, ctx),
                                 AffineMap::get(5, 0, {dm, dn, dl}, ctx)};
  SmallVector<IteratorType> iterators = {IteratorType::parallel, IteratorType::parallel,
                                         IteratorType::reduction, IteratorType::parallel,
                                         IteratorType::reduction};
  auto partial = linalg::GenericOp::create(rewriter, loc, TypeRange{partialInit.getType()},
                                           ValueRange{aOperand, wGroups}, ValueRange{partialInit},
                                           maps, iterators, mithril::yieldMultiplyAdd);
  configureTile(partial, CpuKernel::MatrixVector, /*beforeSplit=*/true);
  // The lanes summed into C (which holds the matmul's initial value).
  SmallVector<AffineMap> sumMaps = {AffineMap::get(3, 0, {dm, dn, dk}, ctx),
                                    AffineMap::get(3, 0, {dm, dn}, ctx)};
  auto sum = linalg::GenericOp::create(
      rewriter, loc, TypeRange{ct}, ValueRange{partial.getResult(0)}, ValueRange{c}, sumMaps,
      SmallVector<IteratorType>{IteratorType::parallel, IteratorType::parallel,
                                IteratorType::reduction},
      [](OpBuilder &b, Location l, ValueRange args) {
        linalg::YieldOp::create(b, l, arith::AddFOp::create(b, l, args[1], args[0]).getResult());
      });
  configureTile(sum, CpuKernel::LaneSum, /*beforeSplit=*/true);
  rewriter.replaceOp(matmul, sum.getResult(0));
  if (transpose->use_empty())
    rewriter.eraseOp(transpose);
  return success();
}

LogicalResult Scheduler::rewriteInt8MatrixVectorProduct(IRRewriter &rewriter,
                                                        linalg::MatmulOp matmul) {
  Value a = matmul.getDpsInputOperand(0)->get(), b = matmul.getDpsInputOperand(1)->get();
  Value c = matmul.getDpsInitOperand(0)->get();
  auto at = cast<RankedTensorType>(a.getType());
  auto bt = cast<RankedTensorType>(b.getType());
  auto ct = cast<RankedTensorType>(c.getType());
  auto constant = b.getDefiningOp<arith::ConstantOp>();
  auto levels = constant ? dyn_cast<DenseIntElementsAttr>(constant.getValue()) : nullptr;
  // Levels computed at run time (weights passed each call) come as the
  // transpose of the weight's own [N, K] rows, which the tiles read as they
  // are.
  auto transpose = b.getDefiningOp<linalg::TransposeOp>();
  if (transpose && transpose.getPermutation() != ArrayRef<int64_t>{1, 0})
    transpose = {};
  if (!strategy.registers.int8DotProduct || !(levels || transpose) ||
      !at.getElementType().isInteger(8) || !bt.getElementType().isInteger(8) ||
      !ct.getElementType().isInteger(32) || !at.hasStaticShape() || !bt.hasStaticShape())
    return failure();
  int64_t m = at.getDimSize(0), k = at.getDimSize(1), n = bt.getDimSize(1);
  // Many rows take the packed dot-product kernel, unless the weight has too
  // few columns to fill its registers (a classifier's last layer of 10):
  // the packed form then widened its elements one by one (0.097 ms of the
  // int8 MLP 784-512-512-10 at batch 256 on a Zen 4, against 0.01 here).
  if (m > kGemvMaxRows && n >= kGemvNarrowColumns)
    return failure();
  constexpr int64_t lanes = 16, quad = 4, group = lanes * quad;
  if (k < 2 * group)
    return failure();
  Location loc = matmul.getLoc();
  rewriter.setInsertionPoint(matmul);
  Type i8 = rewriter.getI8Type(), i32 = rewriter.getI32Type();
  // 784 = 12 x 64 + 16: A and the weight padded with zeros to whole groups
  // (13 x 64), which add nothing to the products or to A's row sums. A's
  // padding is a copy of a few rows; a constant weight's is done now.
  int64_t padded = llvm::divideCeil(k, group) * group;
  auto padRows = [&](Value rows, int64_t count) -> Value {
    if (padded == k)
      return rows;
    Value zeroByte = arith::ConstantOp::create(rewriter, loc, rewriter.getI8IntegerAttr(0));
    SmallVector<OpFoldResult> low(2, rewriter.getIndexAttr(0));
    SmallVector<OpFoldResult> high = {rewriter.getIndexAttr(0), rewriter.getIndexAttr(padded - k)};
    return tensor::PadOp::create(rewriter, loc, RankedTensorType::get({count, padded}, i8), rows,
                                 low, high, zeroByte);
  };
  a = padRows(a, m);
  int64_t steps = padded / group;
  auto groupsType = RankedTensorType::get({n, steps, lanes, quad}, i8);
  SmallVector<ReassociationIndices> groups = {{0}, {1, 2, 3}};
  Value wGroups;
  if (levels) {
    // The weight transposed, a row per output column, in the groups the
    // instruction reads.
    SmallVector<int8_t> values(levels.getValues<int8_t>()), transposed(n * padded, 0);
    for (int64_t i = 0; i < k; ++i)
      for (int64_t j = 0; j < n; ++j)
        transposed[j * padded + i] = values[i * n + j];
    wGroups = arith::ConstantOp::create(
        rewriter, loc, DenseElementsAttr::get(groupsType, ArrayRef<int8_t>(transposed)));
  } else {
    wGroups = tensor::ExpandShapeOp::create(rewriter, loc, groupsType,
                                            padRows(transpose.getInput(), n), groups);
  }
  Value aGroups = tensor::ExpandShapeOp::create(
      rewriter, loc, RankedTensorType::get({m, steps, lanes, quad}, i8), a, groups);
  using utils::IteratorType;
  AffineExpr dm, dn, dk, dl, dq;
  bindDims(ctx, dm, dn, dk, dl, dq);
  Value zero = arith::ConstantOp::create(rewriter, loc, rewriter.getZeroAttr(i32));
  auto filled = [&](ArrayRef<int64_t> shape) {
    return linalg::FillOp::create(rewriter, loc, zero,
                                  tensor::EmptyOp::create(rewriter, loc, shape, i32).getResult())
        .getResult(0);
  };
  // 128 times each row's sum of A, which the weight's offset adds.
  auto rowSums = linalg::GenericOp::create(
      rewriter, loc, TypeRange{RankedTensorType::get({m}, i32)}, ValueRange{a},
      ValueRange{filled({m})},
      SmallVector<AffineMap>{AffineMap::get(2, 0, {dm, dn}, ctx), AffineMap::get(2, 0, {dm}, ctx)},
      SmallVector<IteratorType>{IteratorType::parallel, IteratorType::reduction},
      [](OpBuilder &bb, Location l, ValueRange args) {
        Value wide = arith::ExtSIOp::create(bb, l, bb.getI32Type(), args[0]);
        linalg::YieldOp::create(bb, l, arith::AddIOp::create(bb, l, args[1], wide).getResult());
      });
  auto corrected = linalg::GenericOp::create(
      rewriter, loc, TypeRange{ct}, ValueRange{rowSums.getResult(0)}, ValueRange{c},
      SmallVector<AffineMap>{AffineMap::get(2, 0, {dm}, ctx), AffineMap::get(2, 0, {dm, dn}, ctx)},
      SmallVector<IteratorType>{IteratorType::parallel, IteratorType::parallel},
      [](OpBuilder &bb, Location l, ValueRange args) {
        Value offset = arith::ConstantOp::create(bb, l, bb.getI32IntegerAttr(kInt8Offset));
        Value added = arith::MulIOp::create(bb, l, args[0], offset);
        linalg::YieldOp::create(bb, l, arith::SubIOp::create(bb, l, args[1], added).getResult());
      });
  // The partial sums: zext(W ^ 0x80) * sext(A), as vpdpbusd multiplies.
  SmallVector<AffineMap> maps = {AffineMap::get(5, 0, {dm, dk, dl, dq}, ctx),
                                 AffineMap::get(5, 0, {dn, dk, dl, dq}, ctx),
                                 AffineMap::get(5, 0, {dm, dn, dl}, ctx)};
  SmallVector<IteratorType> iterators = {IteratorType::parallel, IteratorType::parallel,
                                         IteratorType::reduction, IteratorType::parallel,
                                         IteratorType::reduction};
  auto partial = linalg::GenericOp::create(
      rewriter, loc, TypeRange{RankedTensorType::get({m, n, lanes}, i32)},
      ValueRange{aGroups, wGroups}, ValueRange{filled({m, n, lanes})}, maps, iterators,
      [](OpBuilder &bb, Location l, ValueRange args) {
        Value signBit = arith::ConstantOp::create(bb, l, bb.getI8IntegerAttr(-128));
        Value w = arith::ExtUIOp::create(bb, l, bb.getI32Type(),
                                         arith::XOrIOp::create(bb, l, args[1], signBit));
        Value x = arith::ExtSIOp::create(bb, l, bb.getI32Type(), args[0]);
        Value product = arith::MulIOp::create(bb, l, w, x);
        linalg::YieldOp::create(bb, l, arith::AddIOp::create(bb, l, args[2], product).getResult());
      });
  configureTile(partial, CpuKernel::MatrixVector, /*beforeSplit=*/true);
  auto sum = linalg::GenericOp::create(
      rewriter, loc, TypeRange{ct}, ValueRange{partial.getResult(0)},
      ValueRange{corrected.getResult(0)},
      SmallVector<AffineMap>{AffineMap::get(3, 0, {dm, dn, dk}, ctx),
                             AffineMap::get(3, 0, {dm, dn}, ctx)},
      SmallVector<IteratorType>{IteratorType::parallel, IteratorType::parallel,
                                IteratorType::reduction},
      [](OpBuilder &bb, Location l, ValueRange args) {
        linalg::YieldOp::create(bb, l, arith::AddIOp::create(bb, l, args[1], args[0]).getResult());
      });
  configureTile(sum, CpuKernel::LaneSum, /*beforeSplit=*/true);
  rewriter.replaceOp(matmul, sum.getResult(0));
  if (transpose && transpose->use_empty())
    rewriter.eraseOp(transpose);
  return success();
}

/// A matrix-vector tile's fill and lane sum stay whole (one vector each), so
/// that the partial sums are forwarded in registers; the partial sums' tile
/// (left alone here) is tiled on its reduction as usual.
static void keepLaneTileWhole(Operation *op) {
  if (hasKernel(op, CpuKernel::MatrixVector))
    return;
  LoweringConfigAttr config = getLoweringConfig(op);
  setLoweringConfig(
      op,
      (config ? config : LoweringConfigAttr::get(op->getContext(), CpuKernel::Default)).asWhole());
}

/// Tiles each lane sum of a matrix-vector product by the product's register
/// tile (rows x columns) and computes the partial sums of the tile inside,
/// from a zero-filled accumulator: the lanes of a tile are summed while
/// still in registers, and the [rows, columns, lanes] partial sums never
/// go to memory (at batch 16 they were a third of the weight's size).
LogicalResult Scheduler::fuseMatrixVectorLanes(IRRewriter &rewriter,
                                               ArrayRef<linalg::LinalgOp> ops) {
  // (The lane sums first: the epilogues tiled with them are erased.)
  SmallVector<linalg::LinalgOp> laneSums;
  for (linalg::LinalgOp op : ops)
    if (hasKernel(op, CpuKernel::LaneSum) && op.getNumDpsInputs() == 1)
      laneSums.push_back(op);
  for (linalg::LinalgOp lanes : laneSums) {
    auto partial = lanes.getDpsInputOperand(0)->get().getDefiningOp<linalg::LinalgOp>();
    if (!partial || !hasKernel(partial, CpuKernel::MatrixVector) || !partial->hasOneUse())
      continue;
    // The element-wise op after the product (a Linear layer's bias and
    // activation) is the root of the tiles where there is one: each tile's
    // sums get it in registers and go to the result once, where the product
    // was first filled with zeros, then summed into, then read again by a
    // pass of its own (the MLP 784-512-512-10 at batch 16: 3.5 us of its 258
    // a call on one Zen 3 core).
    linalg::GenericOp epilogue = productEpilogue(lanes);
    AffineMap lanesOut = lanes.getIndexingMapMatchingResult(lanes->getResult(0));
    if (epilogue && !lanesOut.isProjectedPermutation())
      epilogue = nullptr;
    Operation *root = epilogue ? epilogue.getOperation() : lanes.getOperation();
    // The partial sums' register tile on the rows and columns of the result.
    SmallVector<int64_t> partialTile = cpu::configuredRegisterTile(partial, strategy.registers);
    AffineMap out = partial.getIndexingMapMatchingResult(partial->getResult(0));
    AffineMap lanesIn = lanes.getMatchingIndexingMap(lanes.getDpsInputOperand(0));
    SmallVector<int64_t> sizes(lanes.getNumLoops(), 0);
    for (unsigned r = 0; r < out.getNumResults() && r < lanesIn.getNumResults(); ++r) {
      auto pd = dyn_cast<AffineDimExpr>(out.getResult(r));
      auto ld = dyn_cast<AffineDimExpr>(lanesIn.getResult(r));
      if (pd && ld &&
          lanes.getIteratorTypesArray()[ld.getPosition()] == utils::IteratorType::parallel)
        sizes[ld.getPosition()] = partialTile[pd.getPosition()];
    }
    std::optional<unsigned> rowLoop;
    if (auto ld = dyn_cast<AffineDimExpr>(lanesIn.getResult(0)))
      rowLoop = ld.getPosition();
    if (epilogue) {
      // On the epilogue's loops, which read the sums element for element:
      // its loop r is the sums' dimension r.
      SmallVector<int64_t> onEpilogue;
      for (AffineExpr result : lanesOut.getResults())
        onEpilogue.push_back(sizes[cast<AffineDimExpr>(result).getPosition()]);
      if (rowLoop)
        rowLoop = lanesOut.getResultPosition(getAffineDimExpr(*rowLoop, ctx));
      sizes = std::move(onEpilogue);
    }
    auto rootOp = cast<linalg::LinalgOp>(root);
    SmallVector<int64_t> ranges = rootOp.getStaticLoopRanges();
    // Rows in tiles that do not divide them (AVX2's 3 rows: 16 = 3 x 4 + 2
    // x 2): the weight rows' tiles first, then in each the rows split into
    // whole tiles of 3 and a rest of tiles of 2, so that every tile reads
    // the weight rows while they are in L1.
    int64_t splitRowsAt = 0;
    if (rowLoop && sizes[*rowLoop] > 1 && !ShapedType::isDynamic(ranges[*rowLoop]) &&
        ranges[*rowLoop] > sizes[*rowLoop] && ranges[*rowLoop] % sizes[*rowLoop] != 0)
      splitRowsAt = matrixVectorRowSplit(ranges[*rowLoop], sizes[*rowLoop]);
    SmallVector<int64_t> rowTileSize;
    if (splitRowsAt > 0) {
      rowTileSize.assign(sizes.size(), 0);
      rowTileSize[*rowLoop] = sizes[*rowLoop];
      sizes[*rowLoop] = 0;
    }
    fitTilesToLoops(sizes, ranges, /*tileDynamic=*/false);
    if (llvm::all_of(sizes, [](int64_t size) { return size == 0; }) && splitRowsAt == 0)
      continue;
    // The sums' fill too (each tile's starts in registers rather than from
    // a pass of zeros over the whole result).
    llvm::DenseSet<Operation *> fusible = {partial.getOperation()};
    for (linalg::LinalgOp op : {partial, lanes})
      for (OpOperand &init : op.getDpsInitsMutable())
        if (auto fill = init.get().getDefiningOp<linalg::FillOp>())
          fusible.insert(fill);
    if (epilogue)
      fusible.insert(lanes);
    SmallVector<Operation *> tiledOps = {root};
    tiledOps.append(fusible.begin(), fusible.end());
    if (llvm::any_of(sizes, [](int64_t size) { return size != 0; })) {
      scf::SCFTileAndFuseOptions options;
      options.tilingOptions.setTileSizes(getAsIndexOpFoldResult(ctx, sizes));
      // Weight rows (the result's columns) outermost, as the partial sums'
      // own tiling had them.
      SmallVector<int64_t> interchange;
      for (unsigned i = 0; i < rootOp.getNumLoops(); ++i)
        interchange.push_back(i);
      if (rootOp.getNumParallelLoops() >= 2)
        std::swap(interchange[0], interchange[1]);
      options.tilingOptions.setInterchange(interchange);
      FailureOr<scf::SCFTileAndFuseResult> tiled = tileAndFuse(rewriter, root, options, fusible);
      if (failed(tiled))
        return lanes.emitError("mithril-cpu-schedule: cannot fuse a matrix-vector product");
      tiledOps.assign(tiled->tiledAndFusedOps.begin(), tiled->tiledAndFusedOps.end());
      rewriter.eraseOp(root);
      if (epilogue && lanes->use_empty())
        rewriter.eraseOp(lanes);
      if (partial->use_empty())
        rewriter.eraseOp(partial);
    }
    if (splitRowsAt == 0) {
      for (Operation *op : tiledOps)
        keepLaneTileWhole(op);
      continue;
    }
    if (failed(splitMatrixVectorRows(rewriter, tiledOps, *rowLoop, splitRowsAt, rowTileSize)))
      return tiledOps.front()->emitError("mithril-cpu-schedule: cannot split a matrix-vector "
                                         "product's rows");
  }
  return success();
}

LogicalResult Scheduler::splitMatrixVectorRows(IRRewriter &rewriter, ArrayRef<Operation *> tile,
                                               unsigned rowLoop, int64_t at,
                                               ArrayRef<int64_t> rowTileSize) {
  // The root of the tile's fusion (its lane sum, or the epilogue after it),
  // which no other op of the tile reads, and the ops fused into it.
  linalg::LinalgOp root;
  llvm::DenseSet<Operation *> fusible;
  for (Operation *op : tile) {
    bool readInTile = llvm::any_of(op->getUsers(),
                                   [&](Operation *user) { return llvm::is_contained(tile, user); });
    if (!readInTile && !root)
      root = dyn_cast<linalg::LinalgOp>(op);
    else
      fusible.insert(op);
  }
  if (!root)
    return failure();
  rewriter.setInsertionPoint(root);
  auto [whole, rest] = linalg::splitOp(rewriter, cast<TilingInterface>(root.getOperation()),
                                       rowLoop, rewriter.getIndexAttr(at));
  // Each part tiled by its own rows (3, then the rest's 2), the partial sums
  // fused through the slices the split took of them.
  RewritePatternSet merge(ctx);
  tensor::populateMergeConsecutiveInsertExtractSlicePatterns(merge);
  FrozenRewritePatternSet cleanup(std::move(merge));
  for (TilingInterface part : {whole, rest}) {
    if (!part)
      continue;
    auto partOp = cast<linalg::LinalgOp>(part.getOperation());
    int64_t partRows = partOp.getStaticLoopRanges()[rowLoop];
    SmallVector<int64_t> sizes(rowTileSize);
    // (Each divides its part; a part of one tile still gets its loop, of
    // one step, for the partial sums to fuse into.)
    sizes[rowLoop] = std::min(partRows, part == whole ? rowTileSize[rowLoop]
                                                      : matrixVectorRowSplitRest(partRows));
    scf::SCFTileAndFuseOptions options;
    options.tilingOptions.setTileSizes(getAsIndexOpFoldResult(ctx, sizes));
    options.cleanupPatterns = cleanup;
    FailureOr<scf::SCFTileAndFuseResult> tiled = tileAndFuse(rewriter, partOp, options, fusible);
    if (failed(tiled))
      return failure();
    for (Operation *op : tiled->tiledAndFusedOps) {
      if (hasKernel(op, CpuKernel::MatrixVector))
        configureTile(op, CpuKernel::MatrixVector, /*beforeSplit=*/false);
      else
        keepLaneTileWhole(op);
    }
    rewriter.eraseOp(partOp);
  }
  // The whole tile's ops fused into its root (lane sums, partial sums and
  // fills), now read by nothing but the split's slices of them, and by each
  // other (erased in turn, once unread).
  for (bool erased = true; erased;) {
    erased = false;
    for (Operation *op : llvm::to_vector(fusible)) {
      llvm::SetVector<Operation *> users(op->user_begin(), op->user_end());
      for (Operation *user : users)
        if (!fusible.contains(user) && isOpTriviallyDead(user))
          rewriter.eraseOp(user);
      if (op->use_empty()) {
        rewriter.eraseOp(op);
        fusible.erase(op);
        erased = true;
      }
    }
  }
  return success();
}

/// Writes the register tiles of rewriteBF16MatrixVectorProduct's partial
/// sums as vdpbf16ps: a tile over (rows, columns, one step, 16 lanes,
/// pair) reads each row of A and of the weight as 32 contiguous bf16 and
/// adds their pairwise products to the (row, column) lanes; with A widened
/// beforehand (32 f32 a row, its even steps then its odd ones), as FMAs.
void Scheduler::lowerBF16MatrixVectorTiles(IRRewriter &rewriter, ModuleOp module) const {
  SmallVector<linalg::GenericOp> tiles;
  module.walk([&](linalg::GenericOp op) {
    if (hasKernel(op, CpuKernel::MatrixVector) && op.hasPureTensorSemantics() &&
        op.getNumLoops() == 5 && op.getNumDpsInputs() == 2 &&
        getElementTypeOrSelf(op.getDpsInputOperand(1)->get().getType()).isBF16())
      tiles.push_back(op);
  });
  for (linalg::GenericOp op : tiles) {
    SmallVector<int64_t> ranges = op.getStaticLoopRanges();
    if (llvm::any_of(ranges, ShapedType::isDynamic) || ranges[2] != 1 || ranges[3] != 16 ||
        ranges[4] != 2)
      continue;
    Type aType = getElementTypeOrSelf(op.getDpsInputOperand(0)->get().getType());
    if (!aType.isBF16() && !aType.isF32())
      continue;
    int64_t rows = ranges[0], cols = ranges[1];
    Location loc = op.getLoc();
    rewriter.setInsertionPoint(op);
    Type bf16 = rewriter.getBF16Type(), f32 = rewriter.getF32Type();
    auto read = [&](Value tensor, ArrayRef<int64_t> shape, Type type) {
      return readWholeTile(rewriter, loc, tensor, VectorType::get(shape, type));
    };
    // [rows][1][16][2] -> [rows][32]: each row's 32 reduction steps.
    auto rowsOf = [&](Value tile, int64_t count) {
      Value flat = tensor::CollapseShapeOp::create(
          rewriter, loc, tile, SmallVector<ReassociationIndices>{{0}, {1, 2, 3}});
      return read(flat, {count, 32}, bf16);
    };
    // A widened beforehand: [rows][1][2][16] f32 -> [rows][2][16].
    Value a = aType.isF32() ? read(tensor::CollapseShapeOp::create(
                                       rewriter, loc, op.getDpsInputOperand(0)->get(),
                                       SmallVector<ReassociationIndices>{{0}, {1, 2}, {3}}),
                                   {rows, 2, 16}, f32)
                            : rowsOf(op.getDpsInputOperand(0)->get(), rows);
    Value w = rowsOf(op.getDpsInputOperand(1)->get(), cols);
    Value p = read(op.getDpsInitOperand(0)->get(), {rows, cols, 16}, f32);
    p = addBF16DotProducts(rewriter, loc, p, a, w);
    rewriter.replaceOp(op, writeWholeTile(rewriter, loc, p, op.getDpsInitOperand(0)->get()));
  }
}

/// The even and odd elements of `pairs` (32 bf16: 16 lanes of two), each
/// as 16 f32: a bf16 is the upper half of the f32 it widens to, so the odd
/// ones (each 32-bit word's upper half) need only their lower halves
/// cleared, and the even ones a shift up.
static std::pair<Value, Value> widenPairHalves(IRRewriter &rewriter, Location loc, Value pairs) {
  Type i32 = rewriter.getI32Type(), f32 = rewriter.getF32Type();
  auto words = VectorType::get({16}, i32), floats = VectorType::get({16}, f32);
  Value bits = vector::BitCastOp::create(rewriter, loc, words, pairs);
  auto splat = [&](int32_t value) {
    return arith::ConstantOp::create(rewriter, loc, DenseElementsAttr::get(words, value));
  };
  Value even = arith::ShLIOp::create(rewriter, loc, bits, splat(16));
  Value odd = arith::AndIOp::create(rewriter, loc, bits, splat(static_cast<int32_t>(0xFFFF0000u)));
  return {vector::BitCastOp::create(rewriter, loc, floats, even),
          vector::BitCastOp::create(rewriter, loc, floats, odd)};
}

Value Scheduler::addBF16DotProducts(IRRewriter &rewriter, Location loc, Value sums, Value left,
                                    Value right) const {
  auto sumsType = cast<VectorType>(sums.getType());
  int64_t rows = sumsType.getDimSize(0), cols = sumsType.getDimSize(1);
  SmallVector<Value> leftRows, rightRows;
  for (int64_t r = 0; r < rows; ++r)
    leftRows.push_back(vector::ExtractOp::create(rewriter, loc, left, ArrayRef<int64_t>{r}));
  for (int64_t c = 0; c < cols; ++c)
    rightRows.push_back(vector::ExtractOp::create(rewriter, loc, right, ArrayRef<int64_t>{c}));
  // Rows of `left` widened to f32 beforehand ([rows][2][16]: each row's even
  // steps, then its odd ones; rewriteBF16MatrixVectorProduct does so where
  // vdpbf16ps is slow, about 0.45 a cycle on those cores) take two FMAs a
  // pair of rows, each row of `right` widened here once: an 8 x 2 tile
  // issues 4 widening ops and 32 FMAs (18 cycles on two FMA ports) where 16
  // vdpbf16ps took about 36.
  bool widen = cast<VectorType>(left.getType()).getRank() == 3;
  SmallVector<std::pair<Value, Value>> leftHalves, rightHalves;
  if (widen) {
    for (Value row : leftRows)
      leftHalves.push_back({vector::ExtractOp::create(rewriter, loc, row, ArrayRef<int64_t>{0}),
                            vector::ExtractOp::create(rewriter, loc, row, ArrayRef<int64_t>{1})});
    for (Value row : rightRows)
      rightHalves.push_back(widenPairHalves(rewriter, loc, row));
  }
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      Value acc = vector::ExtractOp::create(rewriter, loc, sums, ArrayRef<int64_t>{r, c});
      Value dot;
      if (widen) {
        auto [leftEven, leftOdd] = leftHalves[r];
        auto [rightEven, rightOdd] = rightHalves[c];
        // In vdpbf16ps's order (the odd products first): the same sums,
        // but for its flushing of subnormals.
        dot = vector::FMAOp::create(rewriter, loc, leftOdd, rightOdd, acc);
        dot = vector::FMAOp::create(rewriter, loc, leftEven, rightEven, dot);
      } else {
        dot = x86vector::DotBF16Op::create(rewriter, loc, acc.getType(), acc, leftRows[r],
                                           rightRows[c]);
      }
      sums = vector::InsertOp::create(rewriter, loc, dot, sums, ArrayRef<int64_t>{r, c});
    }
  return sums;
}

void Scheduler::lowerFloatMatrixVectorTiles(IRRewriter &rewriter, ModuleOp module) {
  SmallVector<linalg::GenericOp> tiles;
  module.walk([&](linalg::GenericOp op) {
    if (hasKernel(op, CpuKernel::MatrixVector) && op.hasPureTensorSemantics() &&
        op.getNumLoops() == 4 && op.getNumDpsInputs() == 2 && op.getNumDpsInits() == 1)
      tiles.push_back(op);
  });
  for (linalg::GenericOp op : tiles) {
    MLIRContext *ctx = op.getContext();
    Type et = getElementTypeOrSelf(op->getResult(0).getType());
    if (!et.isF32() && !et.isF64())
      continue;
    if (llvm::any_of(op->getOperands(),
                     [&](Value v) { return getElementTypeOrSelf(v.getType()) != et; }))
      continue;
    AffineExpr m, n, k, lane;
    bindDims(ctx, m, n, k, lane);
    SmallVector<AffineMap> expected = {AffineMap::get(4, 0, {m, k, lane}, ctx),
                                       AffineMap::get(4, 0, {n, k, lane}, ctx),
                                       AffineMap::get(4, 0, {m, n, lane}, ctx)};
    SmallVector<int64_t> ranges = op.getStaticLoopRanges();
    // A multiply-add body (yieldMultiplyAdd's) over one reduction step.
    if (op.getIndexingMapsArray() != expected || llvm::any_of(ranges, ShapedType::isDynamic) ||
        ranges[2] != 1 || !linalg::isaContractionOpInterface(op))
      continue;
    int64_t rows = ranges[0], cols = ranges[1], lanes = ranges[3];
    Location loc = op.getLoc();
    rewriter.setInsertionPoint(op);
    Value a = readWholeTile(rewriter, loc, op.getDpsInputOperand(0)->get(),
                            VectorType::get({rows, 1, lanes}, et));
    // The weight's rows in one read, [cols, 1, lanes], as the vectorizer
    // reads them (mithril-prefetch-next-rows finds it).
    Value weight = readWholeTile(rewriter, loc, op.getDpsInputOperand(1)->get(),
                                 VectorType::get({cols, 1, lanes}, et));
    Value p = readWholeTile(rewriter, loc, op.getDpsInitOperand(0)->get(),
                            VectorType::get({rows, cols, lanes}, et));
    SmallVector<Value> aRows;
    for (int64_t r = 0; r < rows; ++r)
      aRows.push_back(vector::ExtractOp::create(rewriter, loc, a, ArrayRef<int64_t>{r, 0}));
    // Column by column: each weight row taken just before the FMAs that
    // share it, so that one register holds it (a 3 x 4 tile of AVX2 keeps
    // its 12 accumulators and 3 rows of A in the other 15).
    for (int64_t c = 0; c < cols; ++c) {
      Value w = vector::ExtractOp::create(rewriter, loc, weight, ArrayRef<int64_t>{c, 0});
      for (int64_t r = 0; r < rows; ++r) {
        Value acc = vector::ExtractOp::create(rewriter, loc, p, ArrayRef<int64_t>{r, c});
        Value sum = vector::FMAOp::create(rewriter, loc, aRows[r], w, acc);
        p = vector::InsertOp::create(rewriter, loc, sum, p, ArrayRef<int64_t>{r, c});
      }
    }
    rewriter.replaceOp(op, writeWholeTile(rewriter, loc, p, op.getDpsInitOperand(0)->get()));
  }
}

void Scheduler::lowerInt8MatrixVectorTiles(IRRewriter &rewriter, ModuleOp module) {
  SmallVector<linalg::GenericOp> tiles;
  module.walk([&](linalg::GenericOp op) {
    if (hasKernel(op, CpuKernel::MatrixVector) && op.hasPureTensorSemantics() &&
        op.getNumLoops() == 5 && op.getNumDpsInputs() == 2 &&
        getElementTypeOrSelf(op.getDpsInputOperand(0)->get().getType()).isInteger(8))
      tiles.push_back(op);
  });
  for (linalg::GenericOp op : tiles) {
    SmallVector<int64_t> ranges = op.getStaticLoopRanges();
    if (llvm::any_of(ranges, ShapedType::isDynamic) || ranges[2] != 1 || ranges[3] != 16 ||
        ranges[4] != 4)
      continue;
    int64_t rows = ranges[0], cols = ranges[1];
    MLIRContext *ctx = op.getContext();
    Location loc = op.getLoc();
    rewriter.setInsertionPoint(op);
    Type i8 = rewriter.getI8Type(), i32 = rewriter.getI32Type();
    auto read = [&](Value tensor, ArrayRef<int64_t> shape, Type type) {
      return readWholeTile(rewriter, loc, tensor, VectorType::get(shape, type));
    };
    // [rows][1][16][4] -> [rows][64]: each row's 64 reduction steps, one
    // contiguous read (a read of [rows][16][4] becomes 16 per row).
    auto rowsOf = [&](Value tile, int64_t count) {
      Value flat = tensor::CollapseShapeOp::create(
          rewriter, loc, tile, SmallVector<ReassociationIndices>{{0}, {1, 2, 3}});
      return read(flat, {count, 64}, i8);
    };
    Value a = rowsOf(op.getDpsInputOperand(0)->get(), rows);
    Value w = rowsOf(op.getDpsInputOperand(1)->get(), cols);
    Value p = read(op.getDpsInitOperand(0)->get(), {rows, cols, 16}, i32);
    auto quads = VectorType::get({16, 4}, i8), wide = VectorType::get({16, 4}, i32);
    auto quadsOf = [&](Value rowsVector, int64_t i) -> Value {
      return vector::ShapeCastOp::create(
          rewriter, loc, quads,
          vector::ExtractOp::create(rewriter, loc, rowsVector, ArrayRef<int64_t>{i}));
    };
    Value signBits =
        arith::ConstantOp::create(rewriter, loc, DenseElementsAttr::get(quads, int8_t(-128)));
    SmallVector<Value> aRows, wRows;
    for (int64_t r = 0; r < rows; ++r)
      aRows.push_back(arith::ExtSIOp::create(rewriter, loc, wide, quadsOf(a, r)));
    for (int64_t col = 0; col < cols; ++col)
      wRows.push_back(arith::ExtUIOp::create(
          rewriter, loc, wide, arith::XOrIOp::create(rewriter, loc, quadsOf(w, col), signBits)));
    AffineExpr lane, step;
    bindDims(ctx, lane, step);
    auto maps = rewriter.getAffineMapArrayAttr({AffineMap::get(2, 0, {lane, step}, ctx),
                                                AffineMap::get(2, 0, {lane, step}, ctx),
                                                AffineMap::get(2, 0, {lane}, ctx)});
    auto iterators = rewriter.getArrayAttr(
        {vector::IteratorTypeAttr::get(ctx, vector::IteratorType::parallel),
         vector::IteratorTypeAttr::get(ctx, vector::IteratorType::reduction)});
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t col = 0; col < cols; ++col) {
        Value acc = vector::ExtractOp::create(rewriter, loc, p, ArrayRef<int64_t>{r, col});
        Value dot = vector::ContractionOp::create(rewriter, loc, wRows[col], aRows[r], acc, maps,
                                                  iterators);
        p = vector::InsertOp::create(rewriter, loc, dot, p, ArrayRef<int64_t>{r, col});
      }
    rewriter.replaceOp(op, writeWholeTile(rewriter, loc, p, op.getDpsInitOperand(0)->get()));
  }
}
