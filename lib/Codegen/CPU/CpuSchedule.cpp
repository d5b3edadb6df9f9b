//===- CpuSchedule.cpp - tiling and vectorization for the host ------------===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
// The schedule is a transform-dialect script, kept as text so that it can be
// read and tried with mithril-opt's --transform-interpreter as well.
//
//===----------------------------------------------------------------------===//

#include "mithril/Codegen/CPU/CpuStrategy.h"
#include "mithril/Codegen/CPU/Passes.h"
#include "mithril/Conversion/MithrilToLinalg/MithrilToLinalg.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/Dialect/Tensor/Transforms/Transforms.h"
#include "mlir/Dialect/Transform/IR/TransformDialect.h"
#include "mlir/Dialect/Transform/Transforms/TransformInterpreterUtils.h"
#include "mlir/Dialect/UB/IR/UBOps.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/X86Vector/X86VectorDialect.h"
#include "mlir/Interfaces/TilingInterface.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "mlir/Transforms/LoopInvariantCodeMotionUtils.h"

namespace mithril {
#define GEN_PASS_DEF_MITHRILCPUSCHEDULE
#include "mithril/Codegen/CPU/Passes.h.inc"
} // namespace mithril

using namespace mlir;
using namespace mithril;
using namespace mithril::cpu;

/// After tiling and vectorization, clean up the vector code (reductions of
/// products become contractions) and hoist the matmul accumulators out of
/// the reduction loops while still on tensors.
static constexpr llvm::StringLiteral kVectorize = R"mlir(
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    transform.apply_patterns to %root {
      transform.apply_patterns.canonicalization
      transform.apply_patterns.vector.reduction_to_contract
      transform.apply_patterns.vector.transfer_permutation_patterns
      transform.apply_patterns.tensor.fold_tensor_subset_ops_into_vector_transfers
    } : !transform.any_op
    %loops = transform.structured.match ops{["scf.for"]} in %root
        : (!transform.any_op) -> !transform.any_op
    transform.loop.hoist_loop_invariant_subsets %loops : !transform.any_op
    transform.yield
  }
  transform.named_sequence @__transposes(%root: !transform.any_op {transform.readonly}) {
    transform.apply_patterns to %root {
      transform.apply_patterns.vector.lower_transpose lowering_strategy = "shuffle_16x16"
    } : !transform.any_op
    transform.yield
  }
  transform.named_sequence @__hoist(%root: !transform.any_op {transform.readonly}) {
    %loops = transform.structured.match ops{["scf.for"]} in %root
        : (!transform.any_op) -> !transform.any_op
    transform.loop.hoist_loop_invariant_subsets %loops : !transform.any_op
    transform.yield
  }
}
)mlir";

/// The elements one 32-bit lane of a dot-product instruction multiplies and
/// sums along the reduction: pairs of bf16 (vdpbf16ps), quads of i8
/// (vpdpbusd).
static int64_t dotProductGroup(Type element) { return element.isBF16() ? 2 : 4; }
/// vpdpbusd multiplies unsigned by signed bytes: the signed activations are
/// offset by this (their sign bit flipped), and the products of the offset by
/// each column's weights are subtracted again.
static constexpr int64_t kInt8Offset = 128;

/// The loop order of a matrix-vector tile nest: columns (weight rows)
/// outermost, so that each block of the weight is read once while the few
/// rows of the left operand stay in cache.
static SmallVector<int64_t> gemvInterchange(linalg::LinalgOp op) {
  AffineMap out = op.getIndexingMapMatchingResult(op->getResult(0));
  SmallVector<int64_t> order = {out.getDimPosition(1), out.getDimPosition(0)};
  for (int64_t i = 0, e = op.getNumLoops(); i < e; ++i)
    if (!llvm::is_contained(order, i))
      order.push_back(i);
  return order;
}

/// Convolutions (and packed matmul blocks) are tiled in two levels
/// (tileForRegisters) and with their unit loops dropped before vectorization.
static bool isConvolutionTile(Operation *op) {
  CpuKernel kernel = getCpuKernel(op);
  return kernel == CpuKernel::ConvSpatial || kernel == CpuKernel::ConvFlat ||
         kernel == CpuKernel::ConvFlatWeightGrad || kernel == CpuKernel::PackedMatmul;
}

static bool hasKernel(Operation *op, CpuKernel kernel) { return getCpuKernel(op) == kernel; }

/// Fits tile sizes to static loop ranges: a loop no longer than its tile is
/// not tiled (0), and other tiles shrink to the largest size that divides
/// the loop, since a partial tile would have a dynamic shape and stay scalar.
/// Dynamic loops keep their tile when `tileDynamic`, and are left whole
/// otherwise.
static void fitTilesToLoops(MutableArrayRef<int64_t> sizes, ArrayRef<int64_t> ranges,
                            bool tileDynamic) {
  for (auto [size, range] : llvm::zip(sizes, ranges)) {
    if (size == 0)
      continue;
    if (ShapedType::isDynamic(range)) {
      size = tileDynamic ? size : 0;
      continue;
    }
    if (range <= size) {
      size = 0;
      continue;
    }
    while (range % size != 0)
      --size;
  }
}

static bool touchesBooleans(Operation *op) {
  auto isBool = [](Type t) { return getElementTypeOrSelf(t).isInteger(1); };
  return llvm::any_of(op->getOperandTypes(), isBool) ||
         llvm::any_of(op->getResultTypes(), isBool);
}

/// The last op of the elementwise chain that consumes `op`: single uses into
/// all-parallel linalg ops with an identity output map and the same result
/// type (a matmul's bias and activation, say).
static SmallVector<linalg::LinalgOp> elementwiseChain(linalg::LinalgOp op) {
  SmallVector<linalg::LinalgOp> chain = {op};
  while (chain.back()->getNumResults() == 1 && chain.back()->hasOneUse()) {
    auto user = dyn_cast<linalg::LinalgOp>(*chain.back()->getUsers().begin());
    if (!user || !user.hasPureTensorSemantics() || user->getNumResults() != 1 ||
        user.getNumParallelLoops() != user.getNumLoops() ||
        !user.getIndexingMapMatchingResult(user->getResult(0)).isIdentity() ||
        user->getResult(0).getType() != chain.back()->getResult(0).getType())
      break;
    chain.push_back(user);
  }
  return chain;
}

namespace {
/// Drops a unit dimension of a vector.transfer_write that lands on a tensor
/// dimension of size 1: the write then has the shape and the permutation of
/// the read of the same subset (a convolution tile's accumulator), which lets
/// the pair be hoisted out of the reduction loops.
struct DropUnitDimOfTransferWrite : OpRewritePattern<vector::TransferWriteOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(vector::TransferWriteOp write,
                                PatternRewriter &rewriter) const override {
    auto tensor = dyn_cast<RankedTensorType>(write.getBase().getType());
    VectorType vector = write.getVectorType();
    AffineMap map = write.getPermutationMap();
    if (!tensor || write.getMask() || vector.getRank() < 2 || vector.isScalable())
      return failure();

    for (int64_t i = 0; i < vector.getRank(); ++i) {
      auto dim = dyn_cast<AffineDimExpr>(map.getResult(i));
      if (vector.getDimSize(i) != 1 || !dim || tensor.getDimSize(dim.getPosition()) != 1 ||
          !write.isDimInBounds(i))
        continue;
      SmallVector<int64_t> shape(vector.getShape());
      shape.erase(shape.begin() + i);
      SmallVector<bool> inBounds = write.getInBoundsValues();
      inBounds.erase(inBounds.begin() + i);
      Value narrow = vector::ShapeCastOp::create(
          rewriter, write.getLoc(), VectorType::get(shape, vector.getElementType()),
          write.getVector());
      rewriter.replaceOpWithNewOp<vector::TransferWriteOp>(
          write, narrow, write.getBase(), write.getIndices(),
          AffineMapAttr::get(map.dropResult(i)), rewriter.getBoolArrayAttr(inBounds));
      return success();
    }
    return failure();
  }
};

struct CpuSchedulePass : public mithril::impl::MithrilCpuScheduleBase<CpuSchedulePass> {
  using MithrilCpuScheduleBase::MithrilCpuScheduleBase;

  /// What the strategy sizes the tiles for (the target's registers and L2,
  /// and the pass options).
  cpu::StrategyOptions strategy;

  /// Gives an op the schedule creates the config of `kernel` that the
  /// strategy chooses for it: the register tile, and before the ops are split
  /// across threads (`beforeSplit`) the thread split.
  void configureTile(Operation *op, CpuKernel kernel, bool beforeSplit = false) const {
    setCpuKernel(op, kernel);
    auto linalgOp = cast<linalg::LinalgOp>(op);
    if (beforeSplit)
      setLoweringConfig(op, cpu::selectLoweringConfig(linalgOp, strategy));
    else
      setLoweringConfig(op, getLoweringConfig(op).withRegisterTile(
                                cpu::registerTile(linalgOp, strategy.registers)));
  }

  /// A matmul with at most kGemvMaxRows rows whose right operand is a
  /// transposed matrix (a Linear layer's weight, stored [out, in]) becomes a
  /// matrix-vector product on the weight's own layout: the reduction is split
  /// into steps of kGemvLanes lanes of partial sums, so that each step reads
  /// contiguous rows of the weight and does full-width FMAs, and the lanes
  /// are summed once at the end. The transpose is no longer materialized.
  LogicalResult rewriteMatrixVectorProducts(IRRewriter &rewriter,
                                            ArrayRef<linalg::LinalgOp> ops) {
    MLIRContext *ctx = &getContext();
    for (linalg::LinalgOp op : ops) {
      auto matmul = dyn_cast<linalg::MatmulOp>(op.getOperation());
      if (!matmul || !matmul.hasPureTensorSemantics())
        continue;
      auto transpose = matmul.getDpsInputOperand(1)->get().getDefiningOp<linalg::TransposeOp>();
      if (!transpose || transpose.getPermutation() != ArrayRef<int64_t>{1, 0})
        continue;
      SmallVector<int64_t> ranges = op.getStaticLoopRanges();
      Type et = getElementTypeOrSelf(op->getResult(0).getType());
      if (!llvm::any_of(ranges, ShapedType::isDynamic) && ranges[0] <= kGemvMaxRows &&
          succeeded(rewriteBF16MatrixVectorProduct(rewriter, matmul, transpose)))
        continue;
      if (llvm::any_of(ranges, ShapedType::isDynamic) || ranges[0] > kGemvMaxRows ||
          ranges[2] % kGemvLanes != 0 || ranges[2] < 2 * kGemvLanes || !isa<FloatType>(et))
        continue;
      Location loc = op.getLoc();
      AffineExpr m, n, k;
      bindDims(ctx, m, n, k);
      SmallVector<AffineMap> maps = {AffineMap::get(3, 0, {m, k}, ctx),
                                     AffineMap::get(3, 0, {n, k}, ctx),
                                     AffineMap::get(3, 0, {m, n}, ctx)};
      SmallVector<utils::IteratorType> iterators = {utils::IteratorType::parallel,
                                                    utils::IteratorType::parallel,
                                                    utils::IteratorType::reduction};
      rewriter.setInsertionPoint(op);
      auto product = linalg::GenericOp::create(
          rewriter, loc, op->getResultTypes(),
          ValueRange{matmul.getDpsInputOperand(0)->get(), transpose.getInput()},
          ValueRange{matmul.getDpsInitOperand(0)->get()}, maps, iterators,
          mithril::yieldMultiplyAdd);
      rewriter.replaceOp(op, product->getResults());
      if (transpose->use_empty())
        rewriter.eraseOp(transpose);
      rewriter.setInsertionPoint(product);
      FailureOr<linalg::SplitReductionResult> split = linalg::splitReduction(
          rewriter, cast<linalg::LinalgOp>(product.getOperation()), [](linalg::LinalgOp) {
            return linalg::SplitReductionOptions{kGemvLanes, /*index=*/2,
                                                 /*innerParallel=*/true};
          });
      if (failed(split))
        return product.emitError("mithril-cpu-schedule: cannot split this reduction");
      configureTile(split->splitLinalgOp, CpuKernel::MatrixVector, /*beforeSplit=*/true);
      configureTile(split->resultCombiningLinalgOp, CpuKernel::LaneSum, /*beforeSplit=*/true);
    }
    return success();
  }

  /// The bf16 form of a matrix-vector product for vdpbf16ps: A [m][k] and
  /// the weight W [n][k] viewed as [.][k / 32][16][2], partial sums P[m][n]
  /// [16] accumulating A[m][kk][l][p] * W[n][kk][l][p] over kk and p (one
  /// vdpbf16ps per row, column and 32 reduction steps: both operands read
  /// contiguously), then summed over the 16 lanes. Fails (and leaves the
  /// matmul) unless both operands are bf16, the target has AVX512-BF16 and
  /// the reduction is a multiple of 32.
  LogicalResult rewriteBF16MatrixVectorProduct(IRRewriter &rewriter, linalg::MatmulOp matmul,
                                               linalg::TransposeOp transpose) {
    MLIRContext *ctx = &getContext();
    Value a = matmul.getDpsInputOperand(0)->get(), w = transpose.getInput();
    Value c = matmul.getDpsInitOperand(0)->get();
    auto at = cast<RankedTensorType>(a.getType());
    auto wt = cast<RankedTensorType>(w.getType());
    auto ct = cast<RankedTensorType>(c.getType());
    if (!strategy.registers.bf16DotProduct || !at.getElementType().isBF16() ||
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
    Value wGroups = tensor::ExpandShapeOp::create(
        rewriter, loc, RankedTensorType::get({n, steps, lanes, pair}, bf16), w, groups);
    Value zero = arith::ConstantOp::create(rewriter, loc, rewriter.getZeroAttr(f32));
    Value partialInit =
        linalg::FillOp::create(
            rewriter, loc, zero,
            tensor::EmptyOp::create(rewriter, loc, ArrayRef<int64_t>{m, n, lanes}, f32).getResult())
            .getResult(0);
    AffineExpr dm, dn, dk, dl, dp;
    bindDims(ctx, dm, dn, dk, dl, dp);
    SmallVector<AffineMap> maps = {AffineMap::get(5, 0, {dm, dk, dl, dp}, ctx),
                                   AffineMap::get(5, 0, {dn, dk, dl, dp}, ctx),
                                   AffineMap::get(5, 0, {dm, dn, dl}, ctx)};
    using utils::IteratorType;
    SmallVector<IteratorType> iterators = {IteratorType::parallel, IteratorType::parallel,
                                           IteratorType::reduction, IteratorType::parallel,
                                           IteratorType::reduction};
    auto partial = linalg::GenericOp::create(rewriter, loc, TypeRange{partialInit.getType()},
                                             ValueRange{aGroups, wGroups}, ValueRange{partialInit},
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

  /// Splits a matmul whose sizes the register tiles and cache blocks do not
  /// divide into the part they divide and the rest, until they do: columns
  /// at a multiple of the register tile's (784 = 24 x 32 + 16), then of the
  /// cache block's (992 = 3 x 256 + 224), and rows at a multiple of the
  /// register tile's. Tiles must divide their loop to keep static shapes,
  /// and with the largest divisor instead (28 columns for 784, 248 x 31 for
  /// 1000 x 992) a 512 x 64 x 784 matmul took 8 ms instead of 0.25, and a
  /// 1000^3 one ran at 5 GFLOP/s (partial vectors, and no packing).
  LogicalResult peelMatmulRemainders(IRRewriter &rewriter, ArrayRef<linalg::LinalgOp> ops) {
    int64_t blockColumns = strategy.cacheTile[1];
    SmallVector<Operation *> work;
    for (linalg::LinalgOp op : ops)
      if (isa<linalg::MatmulOp>(op.getOperation()) && !hasKernel(op, CpuKernel::MatrixVector))
        work.push_back(op);
    while (!work.empty()) {
      auto op = cast<linalg::LinalgOp>(work.pop_back_val());
      SmallVector<int64_t> ranges = op.getStaticLoopRanges();
      if (ranges.size() != 3 || ShapedType::isDynamic(ranges[0]) ||
          ShapedType::isDynamic(ranges[1]) || ranges[0] < 8)
        continue;
      int64_t rows = strategy.registers.rows(), cols = strategy.registers.columns(op);
      unsigned dimension;
      int64_t split;
      if (ranges[1] > cols && ranges[1] % cols != 0) {
        dimension = 1, split = ranges[1] - ranges[1] % cols;
      } else if (ranges[1] > blockColumns && ranges[1] % blockColumns != 0 &&
                 blockColumns % cols == 0) {
        dimension = 1, split = ranges[1] - ranges[1] % blockColumns;
      } else if (ranges[0] > rows && ranges[0] % rows != 0) {
        dimension = 0, split = ranges[0] - ranges[0] % rows;
      } else {
        continue;
      }
      rewriter.setInsertionPoint(op);
      auto [whole, rest] = linalg::splitOp(rewriter, cast<TilingInterface>(op.getOperation()),
                                           dimension, rewriter.getIndexAttr(split));
      for (TilingInterface part : {whole, rest}) {
        if (!part)
          continue;
        // The original's config was chosen for its sizes: each part gets
        // its own.
        part->removeAttr(LoweringConfigAttr::opAttrName);
        if (isa<linalg::MatmulOp>(part.getOperation()))
          work.push_back(part);
      }
    }
    return success();
  }

  static SmallVector<linalg::LinalgOp> collectTensorOps(ModuleOp module) {
    SmallVector<linalg::LinalgOp> ops;
    module.walk([&](linalg::LinalgOp op) {
      if (op.hasPureTensorSemantics() && op.getNumLoops() > 0)
        ops.push_back(op);
    });
    return ops;
  }

  /// The tile levels of a convolution's weight gradient (loops f, c, kh, kw,
  /// lane, n, block): first channel tiles over a few images, whose rows of
  /// input and output gradient then stay in L1 while all kernel positions
  /// (the second level) read them; then the reductions. Without the image
  /// chunks every kernel position streams all images from L2.
  static SmallVector<SmallVector<int64_t>> weightGradLevels(linalg::LinalgOp op,
                                                            ArrayRef<int64_t> parallel,
                                                            ArrayRef<int64_t> reduction) {
    SmallVector<int64_t> outer(parallel.begin(), parallel.end()), kernel(parallel.size(), 0);
    SmallVector<int64_t> ranges = op.getStaticLoopRanges();
    if (ranges.size() != 7 || llvm::any_of(ranges, ShapedType::isDynamic))
      return {SmallVector<int64_t>(parallel), SmallVector<int64_t>(reduction)};
    std::swap(outer[2], kernel[2]);
    std::swap(outer[3], kernel[3]);
    // Bytes of one image's rows that a channel tile reads: input rows (the
    // flat input's last dimension) and output-gradient rows (blocks x lanes).
    auto shapeOf = [&](unsigned i) {
      return cast<ShapedType>(op->getOperand(i).getType()).getShape();
    };
    Type et = getElementTypeOrSelf(op->getResult(0).getType());
    int64_t bytes = et.getIntOrFloatBitWidth() / 8;
    int64_t channels = std::max<int64_t>(parallel[0], 1) + std::max<int64_t>(parallel[1], 1);
    int64_t perImage = channels * (shapeOf(0).back() + ranges[6] * ranges[4]) * bytes / 2;
    int64_t images = std::max<int64_t>(1, (16 << 10) / std::max<int64_t>(perImage, 1));
    outer[5] = std::min(images, ranges[5]);
    SmallVector<int64_t> outerSizes = outer;
    fitTilesToLoops(outerSizes, ranges, /*tileDynamic=*/false);
    if (outer[5] < ranges[5] && outerSizes[5] == 0)
      outerSizes[5] = 1;
    return {outerSizes, kernel, SmallVector<int64_t>(reduction)};
  }

  /// Tiles every op to its config's register tile. A convolution is
  /// tiled in two levels: its parallel loops, then the reductions of the
  /// tile, whose loops then carry just the tile's accumulator (and hoisting
  /// keeps it in registers).
  LogicalResult tileForRegisters(IRRewriter &rewriter, ArrayRef<linalg::LinalgOp> ops) {
    for (linalg::LinalgOp op : ops) {
      if (LoweringConfigAttr config = getLoweringConfig(op); config && config.getWhole())
        continue;
      SmallVector<int64_t> sizes = cpu::configuredRegisterTile(op, strategy.registers);
      fitTilesToLoops(sizes, op.getStaticLoopRanges(), /*tileDynamic=*/true);
      SmallVector<SmallVector<int64_t>> levels = {sizes};
      if (isConvolutionTile(op)) {
        SmallVector<int64_t> parallel = sizes, reduction(sizes.size(), 0);
        for (auto [i, it] : llvm::enumerate(op.getIteratorTypesArray()))
          if (it == utils::IteratorType::reduction)
            std::swap(parallel[i], reduction[i]);
        levels = {parallel, reduction};
        if (hasKernel(op, CpuKernel::ConvFlatWeightGrad))
          levels = weightGradLevels(op, parallel, reduction);
      }
      Operation *current = op;
      for (ArrayRef<int64_t> level : levels) {
        if (llvm::all_of(level, [](int64_t size) { return size == 0; }))
          continue;
        scf::SCFTilingOptions options;
        options.setTileSizes(getAsIndexOpFoldResult(&getContext(), level));
        if (hasKernel(current, CpuKernel::MatrixVector))
          options.setInterchange(gemvInterchange(cast<linalg::LinalgOp>(current)));
        // Panels outermost: one packed panel serves every row tile in turn.
        if (hasKernel(current, CpuKernel::PackedMatmul))
          options.setInterchange({1, 0, 2, 3});
        rewriter.setInsertionPoint(current);
        FailureOr<scf::SCFTilingResult> tiled =
            scf::tileUsingSCF(rewriter, cast<TilingInterface>(current), options);
        if (failed(tiled))
          return current->emitError("mithril-cpu-schedule: cannot tile this op");
        rewriter.replaceOp(current, tiled->replacements);
        current = tiled->tiledOps.front();
      }
    }
    return success();
  }

  /// Tiles `root` with `options`, fusing into its tiles the producers in
  /// `fusible` (and only those), and points the uses of its results at the
  /// tiled ones.
  static FailureOr<scf::SCFTileAndFuseResult>
  tileAndFuse(IRRewriter &rewriter, Operation *root, scf::SCFTileAndFuseOptions options,
              const llvm::DenseSet<Operation *> &fusible) {
    options.setFusionControlFn(
        [&](tensor::ExtractSliceOp, OpResult producer,
            bool) -> std::optional<scf::SCFTileAndFuseOptions::ControlFnResult> {
          if (fusible.contains(producer.getOwner()))
            return scf::SCFTileAndFuseOptions::ControlFnResult{};
          return std::nullopt;
        });
    rewriter.setInsertionPoint(root);
    FailureOr<scf::SCFTileAndFuseResult> tiled =
        scf::tileConsumerAndFuseProducersUsingSCF(rewriter, cast<TilingInterface>(root), options);
    if (succeeded(tiled))
      for (OpResult result : root->getResults())
        rewriter.replaceAllUsesWith(result, tiled->replacements.lookup(result));
    return tiled;
  }

  /// Tiles each lane sum of a matrix-vector product by the product's register
  /// tile (rows x columns) and computes the partial sums of the tile inside,
  /// from a zero-filled accumulator: the lanes of a tile are summed while
  /// still in registers, and the [rows, columns, lanes] partial sums never
  /// go to memory (at batch 16 they were a third of the weight's size).
  LogicalResult fuseMatrixVectorLanes(IRRewriter &rewriter, ArrayRef<linalg::LinalgOp> ops) {
    for (linalg::LinalgOp lanes : ops) {
      if (!hasKernel(lanes, CpuKernel::LaneSum) || lanes.getNumDpsInputs() != 1)
        continue;
      auto partial = lanes.getDpsInputOperand(0)->get().getDefiningOp<linalg::LinalgOp>();
      if (!partial || !hasKernel(partial, CpuKernel::MatrixVector) || !partial->hasOneUse())
        continue;
      // The partial sums' register tile on the rows and columns of the result.
      SmallVector<int64_t> partialTile = cpu::configuredRegisterTile(partial, strategy.registers);
      AffineMap out = partial.getIndexingMapMatchingResult(partial->getResult(0));
      AffineMap lanesIn = lanes.getMatchingIndexingMap(lanes.getDpsInputOperand(0));
      SmallVector<int64_t> sizes(lanes.getNumLoops(), 0);
      for (unsigned r = 0; r < out.getNumResults() && r < lanesIn.getNumResults(); ++r) {
        auto pd = dyn_cast<AffineDimExpr>(out.getResult(r));
        auto ld = dyn_cast<AffineDimExpr>(lanesIn.getResult(r));
        if (pd && ld && lanes.getIteratorTypesArray()[ld.getPosition()] ==
                            utils::IteratorType::parallel)
          sizes[ld.getPosition()] = partialTile[pd.getPosition()];
      }
      fitTilesToLoops(sizes, lanes.getStaticLoopRanges(), /*tileDynamic=*/false);
      if (llvm::all_of(sizes, [](int64_t size) { return size == 0; }))
        continue;
      llvm::DenseSet<Operation *> fusible = {partial.getOperation()};
      for (OpOperand &init : partial.getDpsInitsMutable())
        if (auto fill = init.get().getDefiningOp<linalg::FillOp>())
          fusible.insert(fill);
      scf::SCFTileAndFuseOptions options;
      options.tilingOptions.setTileSizes(getAsIndexOpFoldResult(&getContext(), sizes));
      // Weight rows (the result's columns) outermost, as the partial sums'
      // own tiling had them.
      SmallVector<int64_t> interchange;
      for (unsigned i = 0; i < lanes.getNumLoops(); ++i)
        interchange.push_back(i);
      if (lanes.getNumParallelLoops() >= 2)
        std::swap(interchange[0], interchange[1]);
      options.tilingOptions.setInterchange(interchange);
      FailureOr<scf::SCFTileAndFuseResult> tiled =
          tileAndFuse(rewriter, lanes, options, fusible);
      if (failed(tiled))
        return lanes.emitError("mithril-cpu-schedule: cannot fuse a matrix-vector product");
      // The tile's fill and lane sum stay whole (one vector each), so that
      // the partial sums are forwarded in registers; the partial sums' tile
      // is tiled on its reduction as usual.
      for (Operation *op : tiled->tiledAndFusedOps)
        if (!hasKernel(op, CpuKernel::MatrixVector)) {
          LoweringConfigAttr config = getLoweringConfig(op);
          setLoweringConfig(
              op, (config ? config : LoweringConfigAttr::get(op->getContext(), CpuKernel::Default))
                      .asWhole());
        }
      rewriter.eraseOp(lanes);
      if (partial->use_empty())
        rewriter.eraseOp(partial);
    }
    return success();
  }

  /// Tiles matmuls larger than a cache block into blocks of their config's
  /// cache tile (rows, columns, reduction): the register tiles then reuse a
  /// block of the right operand from L2 instead of streaming it from memory.
  LogicalResult tileForCache(IRRewriter &rewriter, ArrayRef<linalg::LinalgOp> ops) {
    for (linalg::LinalgOp op : ops) {
      if (!isa<linalg::MatmulOp>(op.getOperation()))
        continue;
      LoweringConfigAttr config = getLoweringConfig(op);
      SmallVector<int64_t> block(config && !config.getCacheTile().empty()
                                     ? config.getCacheTile()
                                     : ArrayRef<int64_t>(strategy.cacheTile));
      SmallVector<int64_t> sizes = block;
      SmallVector<int64_t> ranges = op.getStaticLoopRanges();
      fitTilesToLoops(sizes, ranges, /*tileDynamic=*/false);
      // Row blocks of whole register tiles (1000 rows: 40, not 125, which
      // would leave tiles of 5 rows).
      int64_t rows = strategy.registers.rows();
      if (sizes[0] % rows != 0 && !ShapedType::isDynamic(ranges[0]) && ranges[0] % rows == 0)
        for (int64_t m = block[0] / rows * rows; m >= rows; m -= rows)
          if (ranges[0] % m == 0) {
            sizes[0] = m;
            break;
          }
      // Reduction blocks of whole 16-element rows when the reduction allows
      // one of at least 64 (784 -> 112 rather than 196): packing a
      // transposed operand then moves 16 x 16 register blocks.
      if (sizes[2] % 16 != 0 && !ShapedType::isDynamic(ranges[2]))
        for (int64_t k = block[2] / 16 * 16; k >= 64; k -= 16)
          if (ranges[2] % k == 0) {
            sizes[2] = k;
            break;
          }
      if (llvm::all_of(sizes, [](int64_t size) { return size == 0; }))
        continue;
      scf::SCFTilingOptions options;
      options.setTileSizes(getAsIndexOpFoldResult(&getContext(), sizes));
      // Reduction blocks outermost-but-one: each (rows, k) block of the left
      // operand and (k, columns) block of the right one is reused.
      options.setInterchange({1, 2, 0});
      rewriter.setInsertionPoint(op);
      FailureOr<scf::SCFTilingResult> tiled =
          scf::tileUsingSCF(rewriter, cast<TilingInterface>(op.getOperation()), options);
      if (failed(tiled))
        return op.emitError("mithril-cpu-schedule: cannot tile this matmul for the cache");
      rewriter.replaceOp(op, tiled->replacements);
      auto tiledBlock = dyn_cast<linalg::MatmulOp>(tiled->tiledOps.front());
      if (tiledBlock && packRightOperand(rewriter, tiledBlock))
        // The packing depends on the column and reduction blocks only: out of
        // the row loop, so that each packed block serves every row block.
        for (LoopLikeOpInterface loop : llvm::reverse(tiled->loops))
          moveLoopInvariantCode(loop);
    }
    return success();
  }

  /// When `b` is a unit-stride block of a 2-D linalg.transpose's result, the
  /// same block of the transpose's input (columns and rows swapped); null
  /// otherwise.
  static Value transposedSource(IRRewriter &rewriter, Value b) {
    auto slice = b.getDefiningOp<tensor::ExtractSliceOp>();
    if (!slice || slice.getSourceType().getRank() != 2 || slice.getType().getRank() != 2)
      return Value();
    auto transpose = slice.getSource().getDefiningOp<linalg::TransposeOp>();
    if (!transpose || !transpose.hasPureTensorSemantics() ||
        transpose.getPermutation() != ArrayRef<int64_t>{1, 0} ||
        !llvm::all_of(slice.getMixedStrides(), [](OpFoldResult stride) {
          return isConstantIntValue(stride, 1);
        }))
      return Value();
    SmallVector<OpFoldResult> offsets = slice.getMixedOffsets(), sizes = slice.getMixedSizes();
    RankedTensorType type = slice.getType();
    return tensor::ExtractSliceOp::create(
        rewriter, slice.getLoc(),
        RankedTensorType::get({type.getDimSize(1), type.getDimSize(0)}, type.getElementType()),
        transpose.getInput(), SmallVector<OpFoldResult>{offsets[1], offsets[0]},
        SmallVector<OpFoldResult>{sizes[1], sizes[0]},
        SmallVector<OpFoldResult>{rewriter.getIndexAttr(1), rewriter.getIndexAttr(1)});
  }

  /// Rewrites a matmul block C += A * B so that B is first copied into
  /// panels of one register tile's columns, [columns / cols][k][cols]: the
  /// register tiles then read a panel contiguously (32 KiB that stay in L1
  /// while the row tiles pass) instead of rows a whole matrix apart, which
  /// share a few L1 sets. The product becomes a generic over (m, panel,
  /// column in panel, k) of kernel packed_matmul, on C viewed as
  /// [m][panel][cols]. False when the block does not qualify.
  bool packRightOperand(IRRewriter &rewriter, linalg::MatmulOp block) {
    if (!block.hasPureTensorSemantics())
      return false;
    Value a = block.getDpsInputOperand(0)->get(), b = block.getDpsInputOperand(1)->get();
    Value c = block.getDpsInitOperand(0)->get();
    auto bt = dyn_cast<RankedTensorType>(b.getType());
    auto ct = dyn_cast<RankedTensorType>(c.getType());
    int64_t cols = strategy.registers.columns(cast<linalg::LinalgOp>(block.getOperation()));
    if (!bt || !ct || !bt.hasStaticShape() || !ct.hasStaticShape() ||
        bt.getDimSize(1) % cols != 0 || bt.getDimSize(1) <= cols || ct.getDimSize(0) < 16)
      return false;
    MLIRContext *ctx = &getContext();
    Location loc = block.getLoc();
    Type et = bt.getElementType();
    int64_t k = bt.getDimSize(0), n = bt.getDimSize(1), m = ct.getDimSize(0), panels = n / cols;
    rewriter.setInsertionPoint(block);
    Type at = getElementTypeOrSelf(a.getType()), accumulator = ct.getElementType();
    bool bf16Dot =
        strategy.registers.bf16DotProduct && et.isBF16() && at.isBF16() && accumulator.isF32();
    bool int8Dot = strategy.registers.int8DotProduct && et.isInteger(8) && at.isInteger(8) &&
                   accumulator.isInteger(32);
    if ((bf16Dot || int8Dot) && k % dotProductGroup(et) == 0 && cols % 16 == 0)
      return packDotProductGroups(rewriter, block, a, b, c), true;
    // Integers without a dot product stay unpacked (widenUnpackedOperands).
    if (!isa<FloatType>(et))
      return false;
    SmallVector<ReassociationIndices> split = {{0}, {1, 2}};
    Value empty = tensor::EmptyOp::create(rewriter, loc, ArrayRef<int64_t>{panels, k, cols}, et);
    Value packed;
    if (Value weightBlock = transposedSource(rewriter, b)) {
      // B is a block of a transposed matrix (a Linear layer's weight): pack
      // straight from the matrix, [panels][cols][k] transposed in registers,
      // and the transposed copy of the whole matrix is no longer needed.
      Value wPanels = tensor::ExpandShapeOp::create(
          rewriter, loc, RankedTensorType::get({panels, cols, k}, et), weightBlock,
          SmallVector<ReassociationIndices>{{0, 1}, {2}});
      packed = linalg::TransposeOp::create(rewriter, loc, wPanels, empty,
                                           ArrayRef<int64_t>{0, 2, 1})
                   .getResult()[0];
    } else {
      Value bPanels = tensor::ExpandShapeOp::create(
          rewriter, loc, RankedTensorType::get({k, panels, cols}, et), b, split);
      packed = linalg::TransposeOp::create(rewriter, loc, bPanels, empty,
                                           ArrayRef<int64_t>{1, 0, 2})
                   .getResult()[0];
    }
    // Narrow operands without a dot product for their type (f16, or bf16
    // without AVX512-BF16) widen once here: the packed panels, and A's block
    // (reused by every panel), rather than each element in the kernel.
    packed = widenElements(rewriter, loc, packed, accumulator);
    a = widenElements(rewriter, loc, a, accumulator);
    Value cPanels = tensor::ExpandShapeOp::create(
        rewriter, loc, RankedTensorType::get({m, panels, cols}, accumulator), c, split);
    AffineExpr dm, dj, dn, dk;
    bindDims(ctx, dm, dj, dn, dk);
    SmallVector<AffineMap> maps = {AffineMap::get(4, 0, {dm, dk}, ctx),
                                   AffineMap::get(4, 0, {dj, dk, dn}, ctx),
                                   AffineMap::get(4, 0, {dm, dj, dn}, ctx)};
    SmallVector<utils::IteratorType> iterators(3, utils::IteratorType::parallel);
    iterators.push_back(utils::IteratorType::reduction);
    auto product = linalg::GenericOp::create(
        rewriter, loc, TypeRange{cPanels.getType()}, ValueRange{a, packed}, ValueRange{cPanels},
        maps, iterators, mithril::yieldMultiplyAdd);
    configureTile(product, CpuKernel::PackedMatmul);
    rewriter.replaceOp(block, tensor::CollapseShapeOp::create(rewriter, loc, ct,
                                                              product.getResult(0), split)
                                  .getResult());
    return true;
  }

  /// Matmuls that kept narrow operands (bf16 or f16 into f32) but were not
  /// packed (too few columns: a Linear layer of 10 outputs) read them
  /// widened: extending each element inside the register tile made a 256 x
  /// 512 x 10 bf16 product 10 times slower than in f32.
  static void widenUnpackedOperands(IRRewriter &rewriter, ArrayRef<linalg::LinalgOp> ops) {
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
  static Value widenElements(IRRewriter &rewriter, Location loc, Value v, Type type) {
    auto tensor = cast<RankedTensorType>(v.getType());
    if (tensor.getElementType() == type)
      return v;
    Value empty = tensor::EmptyOp::create(rewriter, loc, tensor.getShape(), type);
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
  void packDotProductGroups(IRRewriter &rewriter, linalg::MatmulOp block, Value a, Value b,
                            Value c) {
    MLIRContext *ctx = &getContext();
    Location loc = block.getLoc();
    auto ct = cast<RankedTensorType>(c.getType());
    auto bt = cast<RankedTensorType>(b.getType());
    Type et = bt.getElementType(), accumulator = ct.getElementType();
    int64_t group = dotProductGroup(et);
    int64_t cols = strategy.registers.columns(cast<linalg::LinalgOp>(block.getOperation()));
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
    Value packed = weightBlock ? pack(weightBlock, {panels, cols, groups, group}, {0, 2, 1, 3})
                               : pack(b, {groups, group, panels, cols}, {2, 0, 3, 1});
    Value aGroups =
        tensor::ExpandShapeOp::create(rewriter, loc, RankedTensorType::get({m, groups, group}, et),
                                      a, SmallVector<ReassociationIndices>{{0}, {1, 2}});
    SmallVector<ReassociationIndices> split = {{0}, {1, 2}};
    Value cPanels = tensor::ExpandShapeOp::create(
        rewriter, loc, RankedTensorType::get({m, panels, cols}, accumulator), c, split);
    AffineExpr dm, dj, dn, dk, dp;
    bindDims(ctx, dm, dj, dn, dk, dp);
    if (et.isInteger(8))
      cPanels = subtractOffsetProducts(rewriter, loc, packed, cPanels);
    SmallVector<AffineMap> maps = {AffineMap::get(5, 0, {dm, dk, dp}, ctx),
                                   AffineMap::get(5, 0, {dj, dk, dn, dp}, ctx),
                                   AffineMap::get(5, 0, {dm, dj, dn}, ctx)};
    SmallVector<utils::IteratorType> iterators(3, utils::IteratorType::parallel);
    iterators.append(2, utils::IteratorType::reduction);
    auto product = linalg::GenericOp::create(
        rewriter, loc, TypeRange{cPanels.getType()}, ValueRange{aGroups, packed},
        ValueRange{cPanels}, maps, iterators, [&](OpBuilder &b, Location l, ValueRange args) {
          if (!et.isInteger(8))
            return mithril::yieldMultiplyAdd(b, l, args);
          // What the kernel computes: (a + 128) * b, the offset's products
          // taken off beforehand (subtractOffsetProducts). The generic says
          // so too, for whoever lowers it other than lowerDotProductTiles.
          Value offset = arith::ConstantOp::create(b, l, b.getI32IntegerAttr(kInt8Offset));
          Value lhs = arith::AddIOp::create(
              b, l, arith::ExtSIOp::create(b, l, accumulator, args[0]), offset);
          Value rhs = arith::ExtSIOp::create(b, l, accumulator, args[1]);
          linalg::YieldOp::create(
              b, l,
              arith::AddIOp::create(b, l, args[2], arith::MulIOp::create(b, l, lhs, rhs))
                  .getResult());
        });
    configureTile(product, CpuKernel::PackedMatmul);
    rewriter.replaceOp(
        block, tensor::CollapseShapeOp::create(rewriter, loc, ct, product.getResult(0), split)
                   .getResult());
  }

  /// `cPanels` [m][panel][col] minus 128 times each column's sum of the
  /// packed i8 block [panel][k / 4][col][4]: the products of vpdpbusd's
  /// offset, which the block's dot products add.
  static Value subtractOffsetProducts(IRRewriter &rewriter, Location loc, Value packed,
                                      Value cPanels) {
    MLIRContext *ctx = rewriter.getContext();
    auto pt = cast<RankedTensorType>(packed.getType());
    auto ct = cast<RankedTensorType>(cPanels.getType());
    Type i32 = ct.getElementType();
    int64_t panels = pt.getDimSize(0), cols = pt.getDimSize(2);
    AffineExpr d0, d1, d2, d3;
    bindDims(ctx, d0, d1, d2, d3);
    Value zero = arith::ConstantOp::create(rewriter, loc, rewriter.getZeroAttr(i32));
    Value sumsInit = linalg::FillOp::create(rewriter, loc, zero,
                                            tensor::EmptyOp::create(
                                                rewriter, loc, ArrayRef<int64_t>{panels, cols}, i32)
                                                .getResult())
                         .getResult(0);
    // Loops (panel, col, k / 4, 4).
    SmallVector<AffineMap> sumMaps = {AffineMap::get(4, 0, {d0, d2, d1, d3}, ctx),
                                      AffineMap::get(4, 0, {d0, d1}, ctx)};
    SmallVector<utils::IteratorType> sumIterators = {
        utils::IteratorType::parallel, utils::IteratorType::parallel,
        utils::IteratorType::reduction, utils::IteratorType::reduction};
    Value sums =
        linalg::GenericOp::create(
            rewriter, loc, TypeRange{sumsInit.getType()}, ValueRange{packed}, ValueRange{sumsInit},
            sumMaps, sumIterators,
            [&](OpBuilder &b, Location l, ValueRange args) {
              Value wide = arith::ExtSIOp::create(b, l, i32, args[0]);
              linalg::YieldOp::create(b, l, arith::AddIOp::create(b, l, args[1], wide).getResult());
            })
            .getResult(0);
    // Loops (m, panel, col).
    SmallVector<AffineMap> maps = {AffineMap::get(3, 0, {d1, d2}, ctx),
                                   AffineMap::get(3, 0, {d0, d1, d2}, ctx)};
    SmallVector<utils::IteratorType> iterators(3, utils::IteratorType::parallel);
    return linalg::GenericOp::create(
               rewriter, loc, TypeRange{ct}, ValueRange{sums}, ValueRange{cPanels}, maps, iterators,
               [&](OpBuilder &b, Location l, ValueRange args) {
                 Value offset = arith::ConstantOp::create(b, l, b.getI32IntegerAttr(kInt8Offset));
                 Value products = arith::MulIOp::create(b, l, args[0], offset);
                 linalg::YieldOp::create(
                     b, l, arith::SubIOp::create(b, l, args[1], products).getResult());
               })
        .getResult(0);
  }

  /// Splits each op with enough work, together with the elementwise chain
  /// that consumes it and the fill that initializes it, into `threads`
  /// chunks of one scf.forall: one parallel region per chain, and the chain
  /// stays fusible inside each chunk.
  LogicalResult splitAcrossThreads(IRRewriter &rewriter, ArrayRef<linalg::LinalgOp> ops) {
    llvm::DenseSet<Operation *> done;
    for (linalg::LinalgOp op : ops) {
      if (done.contains(op.getOperation()))
        continue;
      // A fill is split with the op whose initial value it is.
      if (isa<linalg::FillOp>(op.getOperation()))
        continue;
      LoweringConfigAttr config = getLoweringConfig(op);
      if (!config || config.getThreads().size() != 2)
        continue;
      auto split =
          std::make_pair(static_cast<unsigned>(config.getThreads()[0]), config.getThreads()[1]);
      if (split.first >= op.getNumLoops())
        continue;
      SmallVector<linalg::LinalgOp> chain = elementwiseChain(op);
      // A matrix-vector product's chunks also sum their own lanes.
      if (hasKernel(op, CpuKernel::MatrixVector) && op->hasOneUse())
        if (auto lanes = dyn_cast<linalg::LinalgOp>(*op->getUsers().begin()))
          if (hasKernel(lanes, CpuKernel::LaneSum))
            chain = {op, lanes};
      // The split loop in the chain's last op: the result dimension it maps to.
      std::optional<unsigned> dim = split.first;
      if (chain.size() > 1 && op->getNumResults() == 1)
        dim = op.getIndexingMapMatchingResult(op->getResult(0))
                  .getResultPosition(getAffineDimExpr(split.first, &getContext()));
      if (!dim || op->getNumResults() != 1)
        chain.resize(1), dim = split.first;
      linalg::LinalgOp root = chain.back();
      llvm::DenseSet<Operation *> fusible;
      for (linalg::LinalgOp member : ArrayRef(chain).drop_back())
        fusible.insert(member);
      for (OpOperand &init : op.getDpsInitsMutable())
        if (auto fill = init.get().getDefiningOp<linalg::FillOp>())
          fusible.insert(fill);

      SmallVector<int64_t> sizes(root.getNumLoops(), 0);
      sizes[*dim] = split.second;
      scf::SCFTileAndFuseOptions options;
      options.tilingOptions.setLoopType(scf::SCFTilingOptions::LoopType::ForallOp);
      options.tilingOptions.setTileSizes(getAsIndexOpFoldResult(&getContext(), sizes));
      FailureOr<scf::SCFTileAndFuseResult> tiled = tileAndFuse(rewriter, root, options, fusible);
      if (failed(tiled))
        return op.emitError("mithril-cpu-schedule: cannot split this op across threads");
      // The originals are dead now: erase them, consumers first.
      for (linalg::LinalgOp member : llvm::reverse(chain))
        done.insert(member);
      for (Operation *member : llvm::reverse(chain)) {
        if (member->use_empty())
          rewriter.eraseOp(member);
      }
      for (Operation *fused : fusible)
        if (!done.contains(fused) && fused->use_empty()) {
          done.insert(fused);
          rewriter.eraseOp(fused);
        }
    }
    return success();
  }

  /// A convolution tile reads its input at output + kernel position, which
  /// is no permutation of the loops and does not vectorize; with the unit
  /// kernel, channel and row loops dropped, it reads along the output columns
  /// only, as a matmul tile does. Transpose tiles with unit dimensions (a
  /// 1 x 16 x 16 block of packed panels) likewise become 2-D transposes in
  /// registers.
  static void dropTileUnitDims(IRRewriter &rewriter, ModuleOp module) {
    SmallVector<linalg::TransposeOp> transposeTiles;
    module.walk([&](linalg::TransposeOp op) {
      if (op.hasPureTensorSemantics() && op->getParentOfType<scf::ForOp>() &&
          op.getInit().getType().getRank() > 2)
        transposeTiles.push_back(op);
    });
    for (linalg::TransposeOp op : transposeTiles) {
      rewriter.setInsertionPoint(op);
      FailureOr<linalg::GenericOp> generic = linalg::generalizeNamedOp(rewriter, op);
      if (succeeded(generic))
        setCpuKernel(*generic, CpuKernel::Transpose);
    }
    SmallVector<linalg::GenericOp> tiles;
    module.walk([&](linalg::GenericOp op) {
      if ((isConvolutionTile(op) || hasKernel(op, CpuKernel::Transpose)) &&
          op.hasPureTensorSemantics() && op->getParentOfType<scf::ForOp>())
        tiles.push_back(op);
    });
    linalg::ControlDropUnitDims dropUnit;
    dropUnit.rankReductionStrategy =
        linalg::ControlDropUnitDims::RankReductionStrategy::ExtractInsertSlice;
    for (linalg::GenericOp op : tiles) {
      rewriter.setInsertionPoint(op);
      FailureOr<linalg::DropUnitDimsResult> dropped = linalg::dropUnitDims(rewriter, op, dropUnit);
      if (failed(dropped))
        continue;
      // A packed product's tile keeps its kernel (lowerDotProductTiles).
      if (hasKernel(op, CpuKernel::PackedMatmul) && dropped->resultOp)
        setCpuKernel(dropped->resultOp, CpuKernel::PackedMatmul);
      rewriter.replaceOp(op, dropped->replacements);
    }
  }

  /// All of a static tile as one vector (the dot-product lowerings read
  /// their operands and accumulators whole).
  static Value readWholeTile(IRRewriter &rewriter, Location loc, Value tensor, VectorType type) {
    Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
    Value pad = ub::PoisonOp::create(rewriter, loc, type.getElementType());
    return vector::TransferReadOp::create(rewriter, loc, type, tensor,
                                          SmallVector<Value>(type.getRank(), zero), pad,
                                          SmallVector<bool>(type.getRank(), true));
  }

  /// `vector` written over all of the static tile `tensor`; the new tensor.
  static Value writeWholeTile(IRRewriter &rewriter, Location loc, Value vector, Value tensor) {
    int64_t rank = cast<VectorType>(vector.getType()).getRank();
    Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
    return vector::TransferWriteOp::create(rewriter, loc, vector, tensor,
                                           SmallVector<Value>(rank, zero),
                                           SmallVector<bool>(rank, true))
        .getResult();
  }

  /// Writes the register tiles of packDotProductGroups' products as dot
  /// products: per row, the row's group of A (a pair of bf16, or a quad of i8
  /// offset to unsigned) broadcast to every 32-bit lane, times 16 columns'
  /// groups of B, summed into 16 accumulators by one vdpbf16ps or vpdpbusd.
  /// Each tile is (after dropTileUnitDims) a generic over (m, n, group)
  /// reading A[m][g], B[n][g] and accumulating C[m][n]; one that is not stays
  /// for the vectorizer, which computes the same numbers element by element.
  static void lowerDotProductTiles(IRRewriter &rewriter, ModuleOp module) {
    SmallVector<linalg::GenericOp> tiles;
    module.walk([&](linalg::GenericOp op) {
      if (!hasKernel(op, CpuKernel::PackedMatmul) || !op.hasPureTensorSemantics() ||
          op.getNumLoops() != 3 || op.getNumDpsInputs() != 2)
        return;
      Type et = getElementTypeOrSelf(op.getDpsInputOperand(0)->get().getType());
      if (et.isBF16() || et.isInteger(8))
        tiles.push_back(op);
    });
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
          ShapedType::isDynamic(ranges[0]) || ShapedType::isDynamic(ranges[1]) ||
          ranges[1] % 16 != 0)
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
      Value bChunks = vector::ShapeCastOp::create(rewriter, loc,
                                                  VectorType::get({cols / 16, 16 * group}, et), b);
      SmallVector<Value> bChunk;
      for (int64_t j = 0; j < cols / 16; ++j)
        bChunk.push_back(vector::ExtractOp::create(rewriter, loc, bChunks, ArrayRef<int64_t>{j}));
      // i8: the products of 16 columns as the contraction vpdpbusd computes,
      // unsigned bytes of A (offset by 128: their sign bits flipped) times
      // signed bytes of B, each quad summed into an i32 lane; the contraction
      // becomes the instruction after bufferization (mithril-x86-dot-
      // products), as an intrinsic call here would stop bufferization.
      Value signBits, quads;
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
        signBits = arith::ConstantOp::create(
            rewriter, loc,
            DenseElementsAttr::get(VectorType::get({group}, et), rewriter.getI8IntegerAttr(-128)));
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
          quad = arith::ExtUIOp::create(rewriter, loc, VectorType::get({group}, i32),
                                        arith::XOrIOp::create(rewriter, loc, bytes, signBits));
        }
        for (int64_t j = 0; j < cols / 16; ++j) {
          Value acc =
              vector::ExtractStridedSliceOp::create(rewriter, loc, row, ArrayRef<int64_t>{16 * j},
                                                    ArrayRef<int64_t>{16}, ArrayRef<int64_t>{1});
          Value dot;
          if (et.isBF16())
            dot = x86vector::DotBF16Op::create(rewriter, loc, acc.getType(), acc, broadcast,
                                               bChunk[j]);
          else
            dot = vector::ContractionOp::create(rewriter, loc, quad, bWide[j], acc, quadMaps,
                                                quadIterators);
          row = vector::InsertStridedSliceOp::create(
              rewriter, loc, dot, row, ArrayRef<int64_t>{16 * j}, ArrayRef<int64_t>{1});
        }
        result = vector::InsertOp::create(rewriter, loc, row, result, ArrayRef<int64_t>{i});
      }
      rewriter.replaceOp(op, writeWholeTile(rewriter, loc, result, op.getDpsInitOperand(0)->get()));
    }
  }

  /// Writes the register tiles of rewriteBF16MatrixVectorProduct's partial
  /// sums as vdpbf16ps: a tile over (rows, columns, one step, 16 lanes,
  /// pair) reads each row of A and of the weight as 32 contiguous bf16 and
  /// adds their pairwise products to the (row, column) lanes.
  static void lowerBF16MatrixVectorTiles(IRRewriter &rewriter, ModuleOp module) {
    SmallVector<linalg::GenericOp> tiles;
    module.walk([&](linalg::GenericOp op) {
      if (hasKernel(op, CpuKernel::MatrixVector) && op.hasPureTensorSemantics() &&
          op.getNumLoops() == 5 && op.getNumDpsInputs() == 2 &&
          getElementTypeOrSelf(op.getDpsInputOperand(0)->get().getType()).isBF16())
        tiles.push_back(op);
    });
    for (linalg::GenericOp op : tiles) {
      SmallVector<int64_t> ranges = op.getStaticLoopRanges();
      if (llvm::any_of(ranges, ShapedType::isDynamic) || ranges[2] != 1 || ranges[3] != 16 ||
          ranges[4] != 2)
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
      Value a = rowsOf(op.getDpsInputOperand(0)->get(), rows);
      Value w = rowsOf(op.getDpsInputOperand(1)->get(), cols);
      Value p = read(op.getDpsInitOperand(0)->get(), {rows, cols, 16}, f32);
      SmallVector<Value> aRows, wRows;
      for (int64_t r = 0; r < rows; ++r)
        aRows.push_back(vector::ExtractOp::create(rewriter, loc, a, ArrayRef<int64_t>{r}));
      for (int64_t c = 0; c < cols; ++c)
        wRows.push_back(vector::ExtractOp::create(rewriter, loc, w, ArrayRef<int64_t>{c}));
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < cols; ++c) {
          Value acc = vector::ExtractOp::create(rewriter, loc, p, ArrayRef<int64_t>{r, c});
          Value dot =
              x86vector::DotBF16Op::create(rewriter, loc, acc.getType(), acc, aRows[r], wRows[c]);
          p = vector::InsertOp::create(rewriter, loc, dot, p, ArrayRef<int64_t>{r, c});
        }
      rewriter.replaceOp(op, writeWholeTile(rewriter, loc, p, op.getDpsInitOperand(0)->get()));
    }
  }

  /// An op with a loop of static size 0 computes nothing: its results are its
  /// inits (an empty tensor, or the fill of a reduction over nothing). Tiling
  /// it would divide by the zero range.
  static void foldEmptyLoops(IRRewriter &rewriter, ArrayRef<linalg::LinalgOp> ops) {
    for (linalg::LinalgOp op : ops) {
      if (!llvm::is_contained(op.getStaticLoopRanges(), 0) ||
          op->getNumResults() != op.getDpsInits().size())
        continue;
      rewriter.replaceOp(op, op.getDpsInits());
    }
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    FailureOr<cpu::StrategyOptions> options = cpu::strategyOptions(
        module, getArgument(), targetCpu, vectorBits, cacheTile, threads, minParallelWork);
    if (failed(options))
      return signalPassFailure();
    strategy = *options;
    IRRewriter rewriter(&getContext());
    foldEmptyLoops(rewriter, collectTensorOps(module));
    if (failed(rewriteMatrixVectorProducts(rewriter, collectTensorOps(module))))
      return signalPassFailure();
    if (failed(peelMatmulRemainders(rewriter, collectTensorOps(module))))
      return signalPassFailure();
    // Ops without a config of their own (mithril-cpu-strategy did not run,
    // or they are new) get the strategy's.
    for (linalg::LinalgOp op : collectTensorOps(module)) {
      LoweringConfigAttr config = getLoweringConfig(op);
      if (!config || config.getRegisterTile().size() != op.getNumLoops())
        setLoweringConfig(op, cpu::selectLoweringConfig(op, strategy));
    }
    // Split large ops across threads: an scf.forall of `threads` chunks
    // around smaller ops, which the register tiling below then tiles.
    if (failed(splitAcrossThreads(rewriter, collectTensorOps(module))))
      return signalPassFailure();
    // Large matmuls: blocks that stay in the L2 cache while the register
    // tiles sweep them.
    if (failed(tileForCache(rewriter, collectTensorOps(module))))
      return signalPassFailure();
    widenUnpackedOperands(rewriter, collectTensorOps(module));
    if (failed(fuseMatrixVectorLanes(rewriter, collectTensorOps(module))))
      return signalPassFailure();
    {
      // A fused fill writes a slice of an empty tensor: an empty tensor of
      // the slice's shape instead, not a buffer shared by every tile (and
      // copied for each thread of a split).
      RewritePatternSet emptySlices(&getContext());
      tensor::populateFoldTensorEmptyPatterns(emptySlices);
      if (failed(applyPatternsGreedily(module, std::move(emptySlices))))
        return signalPassFailure();
    }
    if (failed(tileForRegisters(rewriter, collectTensorOps(module))))
      return signalPassFailure();
    dropTileUnitDims(rewriter, module);
    lowerDotProductTiles(rewriter, module);
    lowerBF16MatrixVectorTiles(rewriter, module);
    // Vectorize the tiles. Booleans stay scalar: a vector of i1 is stored as
    // packed bits, while a tensor of i1 is one byte per element in memory.
    SmallVector<linalg::LinalgOp> tiles;
    module.walk([&](linalg::LinalgOp op) {
      if (op.hasPureTensorSemantics() && !touchesBooleans(op))
        tiles.push_back(op);
    });
    for (linalg::LinalgOp op : tiles) {
      rewriter.setInsertionPoint(op);
      FailureOr<linalg::VectorizationResult> vectorized = linalg::vectorize(rewriter, op);
      if (succeeded(vectorized))
        rewriter.replaceOp(op, vectorized->replacements);
    }
    OwningOpRef<ModuleOp> script = parseSourceString<ModuleOp>(kVectorize, &getContext());
    if (!script) {
      module.emitError("mithril-cpu-schedule: the embedded schedule does not parse");
      return signalPassFailure();
    }
    Operation *entry =
        SymbolTable::lookupSymbolIn(*script, StringRef("__transform_main"));
    auto runScript = [&](Operation *sequence) {
      return sequence && succeeded(transform::applyTransformNamedSequence(
                             module, sequence, *script, transform::TransformOptions()));
    };
    if (!runScript(entry))
      return signalPassFailure();
    // Writes that folded into a larger tensor with unit dimensions (a
    // convolution's accumulator) get the read's shape; the script then hoists
    // the pair.
    RewritePatternSet patterns(&getContext());
    patterns.add<DropUnitDimOfTransferWrite>(&getContext());
    // With the canonicalizations that fold slices into the transfers.
    for (Dialect *dialect : getContext().getLoadedDialects())
      dialect->getCanonicalizationPatterns(patterns);
    for (RegisteredOperationName op : getContext().getRegisteredOperations())
      op.getCanonicalizationPatterns(patterns, &getContext());
    bool changed = false;
    if (failed(applyPatternsGreedily(module, std::move(patterns), GreedyRewriteConfig(),
                                     &changed)))
      return signalPassFailure();
    if (changed && !runScript(SymbolTable::lookupSymbolIn(*script, StringRef("__hoist"))))
      return signalPassFailure();
    // 16 x 16 transposes (packing a transposed weight) as AVX-512 shuffles:
    // left to the LLVM conversion they became 256 extracts and inserts each
    // (a third of the LLVM IR of an MLP training step).
    if (!runScript(SymbolTable::lookupSymbolIn(*script, StringRef("__transposes"))))
      signalPassFailure();
  }
};
} // namespace
