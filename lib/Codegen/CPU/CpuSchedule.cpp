//===- CpuSchedule.cpp - tiling and vectorization for the host ------------===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
// The schedule is a transform-dialect script, kept as text so that it can be
// read and tried with mithril-opt's --transform-interpreter as well.
//
//===----------------------------------------------------------------------===//

#include "Schedule.h"
#include "mithril/Codegen/CPU/CpuStrategy.h"
#include "mithril/Codegen/CPU/Passes.h"
#include "mithril/Conversion/MithrilToLinalg/MithrilToLinalg.h"
#include "mithril/Support/GreedyRewrite.h"
#include "mithril/Support/RewriteSelected.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Bufferization/Transforms/Transforms.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/Dialect/Tensor/Transforms/Transforms.h"
#include "mlir/Dialect/Tensor/Utils/Utils.h"
#include "mlir/Dialect/UB/IR/UBOps.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/Vector/Transforms/LoweringPatterns.h"
#include "mlir/Dialect/Vector/Transforms/VectorRewritePatterns.h"
#include "mlir/Dialect/X86Vector/X86VectorDialect.h"
#include "mlir/IR/Dominance.h"
#include "mlir/Interfaces/TilingInterface.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "mlir/Transforms/LoopInvariantCodeMotionUtils.h"

#include <cstring>
#include <numeric>

namespace mithril {
#define GEN_PASS_DEF_MITHRILCPUSCHEDULE
#include "mithril/Codegen/CPU/Passes.h.inc"
} // namespace mithril

using namespace mlir;
using namespace mithril;
using namespace mithril::cpu;
using namespace mithril::cpu::detail;

/// Every loaded dialect's and registered op's canonicalizations, as the
/// canonicalizer collects them.
static void addCanonicalizations(RewritePatternSet &patterns) {
  MLIRContext *ctx = patterns.getContext();
  for (Dialect *dialect : ctx->getLoadedDialects())
    dialect->getCanonicalizationPatterns(patterns);
  for (RegisteredOperationName op : ctx->getRegisteredOperations())
    op.getCanonicalizationPatterns(patterns, ctx);
}

/// After tiling and vectorization, the vector code's cleanup: the
/// canonicalizations, reductions of products as contractions, transfers'
/// permutations lowered, tensor slices folded into the transfers that read
/// and write them, and masked transfers lowered. hoistInvariantSubsets then
/// hoists the matmul accumulators out of the reduction loops while still on
/// tensors. (Once a transform script's apply_patterns, whose interpreter and
/// region simplification took 3% of the bench CNN training step's MLIR
/// instructions for the same IR.)
static LogicalResult cleanUpVectorCode(ModuleOp module) {
  RewritePatternSet patterns(module.getContext());
  addCanonicalizations(patterns);
  vector::populateVectorReductionToContractPatterns(patterns);
  vector::populateVectorTransferPermutationMapLoweringPatterns(patterns);
  tensor::populateFoldTensorSubsetIntoVectorTransferPatterns(patterns);
  vector::populateVectorMaskLoweringPatternsForSideEffectingOps(patterns);
  return applyPatternsGreedily(module, std::move(patterns), withoutRegionSimplification());
}

/// The vector sizes of a row tile whose width is no power of 2 (a 7-wide row
/// of 2x2 blocks of a 14 x 14 image): the next power of 2, masked, where the
/// exact width would be split into 4 + 2 + 1 lanes by LLVM. Empty (the op's
/// own shape) for every other tile.
static SmallVector<int64_t> maskedVectorSizes(linalg::LinalgOp op) {
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  if (ranges.empty() || ShapedType::isDynamicShape(ranges) || !isa<linalg::GenericOp>(op) ||
      op.getNumReductionLoops() != 0)
    return {};
  int64_t width = ranges.back();
  if (width <= 2 || width >= 16 || llvm::isPowerOf2_64(width) ||
      llvm::any_of(ArrayRef(ranges).drop_back(), [](int64_t r) { return r != 1; }))
    return {};
  ranges.back() = llvm::PowerOf2Ceil(width);
  return ranges;
}

/// Whether `loop` reads a subset of a tensor it carries at indices that do
/// not change from one iteration to the next (a register tile's accumulator
/// in a reduction loop): what hoisting out of it needs first.
static bool readsInvariantSubsetOfCarried(scf::ForOp loop) {
  for (BlockArgument carried : loop.getRegionIterArgs())
    for (Operation *user : carried.getUsers()) {
      if (!isa<vector::TransferReadOp, tensor::ExtractSliceOp>(user))
        continue;
      if (llvm::all_of(user->getOperands(), [&](Value operand) {
            return operand == carried || loop.isDefinedOutsideOfLoop(operand);
          }))
        return true;
    }
  return false;
}

/// Hoists the loop-invariant subsets of carried tensors out of every loop
/// that reads one, innermost loops first (an accumulator leaves the
/// reduction loops one by one). Upstream's hoisting compares the subsets of
/// every loop's carried tensors through value bounds: on all loops it was a
/// quarter of this pass's time in a CNN training step.
static void hoistInvariantSubsets(ModuleOp module) {
  SmallVector<scf::ForOp> loops;
  module.walk([&](scf::ForOp loop) { loops.push_back(loop); });
  IRRewriter rewriter(module.getContext());
  for (scf::ForOp loop : loops)
    if (readsInvariantSubsetOfCarried(loop))
      (void)hoistLoopInvariantSubsets(rewriter, cast<LoopLikeOpInterface>(loop.getOperation()));
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
      Value narrow = vector::ShapeCastOp::create(rewriter, write.getLoc(),
                                                 VectorType::get(shape, vector.getElementType()),
                                                 write.getVector());
      rewriter.replaceOpWithNewOp<vector::TransferWriteOp>(
          write, narrow, write.getBase(), write.getIndices(), AffineMapAttr::get(map.dropResult(i)),
          rewriter.getBoolArrayAttr(inBounds));
      return success();
    }
    return failure();
  }
};

/// A write into a slice of a loop's carried tensor that goes back where the
/// slice came from (insert_slice of a transfer_write into extract_slice of
/// the same tensor, at the same place), where a read of the same vector at
/// the same place takes the tensor itself: the write into the tensor
/// itself, which then pairs with the read. The accumulator of a
/// one-row tile (1 x 32 of a 1 x 4096 result) came out as such while its
/// read went straight to the tensor: the pair did not match, and the tile
/// loaded and stored its accumulators every reduction step (1 x 4096 by 4096
/// columns, one Zen 5 core: 2.24 ms, numpy 1.64).
struct WriteThroughExtractedSlice : OpRewritePattern<tensor::InsertSliceOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(tensor::InsertSliceOp insert,
                                PatternRewriter &rewriter) const override {
    auto write = insert.getSource().getDefiningOp<vector::TransferWriteOp>();
    if (!write || !write->hasOneUse() || write.getMask() || write.getVectorType().isScalable())
      return failure();
    auto extract = write.getBase().getDefiningOp<tensor::ExtractSliceOp>();
    if (!extract || extract.getSource() != insert.getDest() || !insert.hasUnitStride() ||
        !extract.hasUnitStride() || extract.getType() != insert.getSourceType() ||
        extract.getSourceType().getRank() != extract.getType().getRank())
      return failure();
    auto same = [](ArrayRef<OpFoldResult> a, ArrayRef<OpFoldResult> b) {
      return a.size() == b.size() && llvm::all_of(llvm::zip(a, b), [](auto pair) {
               return isEqualConstantIntOrValue(std::get<0>(pair), std::get<1>(pair));
             });
    };
    SmallVector<OpFoldResult> offsets = insert.getMixedOffsets();
    if (!same(extract.getMixedOffsets(), offsets) ||
        !same(extract.getMixedSizes(), insert.getMixedSizes()) ||
        !llvm::all_of(write.getIndices(), [](Value i) { return isZeroInteger(i); }))
      return failure();
    // Only a loop's carried tensor that a read of the same vector at the
    // same place also takes (an accumulator), which the write then matches.
    auto carried = dyn_cast<BlockArgument>(insert.getDest());
    if (!carried || !isa<scf::ForOp>(carried.getOwner()->getParentOp()))
      return failure();
    bool readHere = llvm::any_of(carried.getUsers(), [&](Operation *user) {
      auto read = dyn_cast<vector::TransferReadOp>(user);
      return read && read.getVectorType() == write.getVectorType() &&
             read.getPermutationMap() == write.getPermutationMap() &&
             same(getAsOpFoldResult(read.getIndices()), offsets);
    });
    if (!readHere)
      return failure();
    SmallVector<Value> indices =
        getValueOrCreateConstantIndexOp(rewriter, insert.getLoc(), offsets);
    rewriter.replaceOpWithNewOp<vector::TransferWriteOp>(
        insert, write.getVector(), insert.getDest(), indices, write.getPermutationMapAttr(),
        write.getInBoundsAttr());
    return success();
  }
};

/// A fixed-size reduction to a vector (not to a scalar), outside vector.mask:
/// what the shuffle lowerings below take.
static bool isUnmaskedReductionToVector(vector::MultiDimReductionOp op) {
  return isa<VectorType>(op.getType()) && !op.getSourceVectorType().isScalable() &&
         !isa<vector::MaskOp>(op->getParentOp());
}

/// The value a broadcast of one element (a scalar, or a vector of one
/// element) spreads, when `v` is one; null otherwise.
static Value broadcastSource(Value v) {
  auto broadcast = v.getDefiningOp<vector::BroadcastOp>();
  if (!broadcast)
    return Value();
  auto source = dyn_cast<VectorType>(broadcast.getSourceType());
  return !source || source.getNumElements() == 1 ? broadcast.getSource() : Value();
}

/// The scalar of broadcastSource's value.
static Value broadcastElement(RewriterBase &rewriter, Location loc, Value source) {
  if (auto single = dyn_cast<VectorType>(source.getType()))
    return vector::ExtractOp::create(rewriter, loc, source,
                                     SmallVector<int64_t>(single.getRank(), 0));
  return source;
}

/// Whether `v` is a constant vector of one value.
static bool isSplatVector(Value v) {
  DenseElementsAttr splat;
  return isa<VectorType>(v.getType()) && matchPattern(v, m_Constant(&splat)) && splat.isSplat();
}

/// An elementwise op on vectors that are shape casts of one shape (or
/// broadcasts of one element, or splats) computes on that shape, the cast
/// moved after it, when that shape's rows are longer. A pooling's window tile
/// [.., 2, 14, 2], read as whole rows [.., 2, 28]
/// (ReadWholeRowsOfExpandedTensor), then runs the arithmetic fused into it on
/// rows of 28 lanes rather than 28 rows of 2, which the LLVM lowering would
/// compute apart (a bf16 CNN's first pooling, its rounding fused in: 0.35 ->
/// 0.09 ms a call on a Zen 4, with ElementwiseOnBroadcastElements).
struct ElementwiseBeforeShapeCast : RewritePattern {
  explicit ElementwiseBeforeShapeCast(MLIRContext *ctx)
      : RewritePattern(MatchAnyOpTypeTag(), /*benefit=*/1, ctx) {}
  LogicalResult matchAndRewrite(Operation *op, PatternRewriter &rewriter) const override {
    // Conversions that change the width stay where they are: the dot-product
    // lowerings match extensions of the operand tiles' shapes.
    if (!OpTrait::hasElementwiseMappableTraits(op) || op->getNumResults() != 1 ||
        op->getNumRegions() != 0 || (isa<CastOpInterface>(op) && !isa<arith::BitcastOp>(op)))
      return failure();
    auto resultType = dyn_cast<VectorType>(op->getResult(0).getType());
    if (!resultType || resultType.isScalable())
      return failure();
    ArrayRef<int64_t> shape;
    for (Value v : op->getOperands())
      if (auto shapeCast = v.getDefiningOp<vector::ShapeCastOp>()) {
        shape = shapeCast.getSourceVectorType().getShape();
        break;
      }
    if (shape.empty() || shape.back() <= resultType.getShape().back() ||
        cast<VectorType>(op->getOperand(0).getType()).isScalable())
      return failure();
    // Each operand on `shape`: the cast's source, or a new broadcast or splat.
    enum class Kind { Source, Broadcast, Splat, Scalar };
    SmallVector<Kind> kinds;
    for (Value v : op->getOperands()) {
      auto type = dyn_cast<VectorType>(v.getType());
      if (!type) {
        kinds.push_back(Kind::Scalar);
        continue;
      }
      auto wanted = VectorType::get(shape, type.getElementType());
      if (auto shapeCast = v.getDefiningOp<vector::ShapeCastOp>();
          shapeCast && shapeCast.getSourceVectorType() == wanted)
        kinds.push_back(Kind::Source);
      else if (broadcastSource(v))
        kinds.push_back(Kind::Broadcast);
      else if (isSplatVector(v))
        kinds.push_back(Kind::Splat);
      else
        return failure();
    }
    Location loc = op->getLoc();
    SmallVector<Value> operands;
    for (auto [v, kind] : llvm::zip(op->getOperands(), kinds)) {
      if (kind == Kind::Scalar) {
        operands.push_back(v);
        continue;
      }
      auto wanted = VectorType::get(shape, cast<VectorType>(v.getType()).getElementType());
      if (kind == Kind::Source) {
        operands.push_back(v.getDefiningOp<vector::ShapeCastOp>().getSource());
      } else if (kind == Kind::Broadcast) {
        operands.push_back(vector::BroadcastOp::create(
            rewriter, loc, wanted, broadcastElement(rewriter, loc, broadcastSource(v))));
      } else {
        DenseElementsAttr splat;
        matchPattern(v, m_Constant(&splat));
        operands.push_back(arith::ConstantOp::create(rewriter, loc, splat.resizeSplat(wanted)));
      }
    }
    Operation *onRows = rewriter.create(
        loc, op->getName().getIdentifier(), operands,
        TypeRange{VectorType::get(shape, resultType.getElementType())}, op->getAttrs());
    rewriter.replaceOpWithNewOp<vector::ShapeCastOp>(op, resultType, onRows->getResult(0));
    return success();
  }
};

/// An elementwise op on broadcasts of single elements (and splats) computes
/// on the elements, once, and broadcasts its result: a per-channel bias that
/// mixed precision rounds to bf16 is rounded once per channel, not once per
/// element of the tile. (Upstream's populateSinkVectorOpsPatterns also moves
/// broadcasts of whole vectors, which took the int8 tiles' extensions away
/// from the vpdpbusd lowering's pattern.)
struct ElementwiseOnBroadcastElements : RewritePattern {
  explicit ElementwiseOnBroadcastElements(MLIRContext *ctx)
      : RewritePattern(MatchAnyOpTypeTag(), /*benefit=*/1, ctx) {}
  LogicalResult matchAndRewrite(Operation *op, PatternRewriter &rewriter) const override {
    if (!OpTrait::hasElementwiseMappableTraits(op) || op->getNumResults() != 1 ||
        op->getNumRegions() != 0)
      return failure();
    auto resultType = dyn_cast<VectorType>(op->getResult(0).getType());
    if (!resultType || resultType.isScalable())
      return failure();
    bool anyBroadcast = false;
    for (Value v : op->getOperands()) {
      if (broadcastSource(v))
        anyBroadcast = true;
      else if (!isSplatVector(v))
        return failure();
    }
    if (!anyBroadcast)
      return failure();
    Location loc = op->getLoc();
    SmallVector<Value> elements;
    for (Value v : op->getOperands()) {
      if (Value source = broadcastSource(v)) {
        elements.push_back(broadcastElement(rewriter, loc, source));
        continue;
      }
      DenseElementsAttr splat;
      matchPattern(v, m_Constant(&splat));
      elements.push_back(arith::ConstantOp::create(
          rewriter, loc, cast<TypedAttr>(splat.getSplatValue<Attribute>())));
    }
    Operation *once = rewriter.create(loc, op->getName().getIdentifier(), elements,
                                      TypeRange{resultType.getElementType()}, op->getAttrs());
    rewriter.replaceOpWithNewOp<vector::BroadcastOp>(op, resultType, once->getResult(0));
    return success();
  }
};

/// A reduction over small windows whose innermost dimension is reduced (a
/// 2 x 2 max pooling of a row: vector<2x14x2> to vector<14>). The default
/// lowering moves the reduced dimensions innermost, a transpose that became
/// one extract and insert per element, and then reduces each window across
/// lanes. Here each position in the window becomes one shuffle of the flat
/// vector (that position of every window, in output order), and the
/// positions combine elementwise: four shuffles and four max for a 2 x 2
/// pooling of a row. (The bench CNN's first pooling, with its conv's bias and
/// ReLU fused in, one thread of a Zen 4: 0.24 -> 0.07 ms a call, with
/// ReadWholeRowsOfExpandedTensor and its fill fused.)
struct ReduceSmallWindowsWithShuffles : OpRewritePattern<vector::MultiDimReductionOp> {
  using OpRewritePattern::OpRewritePattern;
  /// Sizes it pays for: a window position's elements at most 4 apart, and
  /// the whole vector in at most four 512-bit registers of f32.
  static constexpr int64_t kMaxInnerWindow = 4, kMaxElements = 64;

  LogicalResult matchAndRewrite(vector::MultiDimReductionOp op,
                                PatternRewriter &rewriter) const override {
    if (!isUnmaskedReductionToVector(op))
      return failure();
    VectorType source = op.getSourceVectorType();
    auto resultType = cast<VectorType>(op.getType());
    ArrayRef<int64_t> shape = source.getShape();
    SmallVector<bool> reduced = op.getReductionMask();
    int64_t elements = source.getNumElements();
    if (!reduced.back() || shape.back() > kMaxInnerWindow || elements > kMaxElements)
      return failure();
    int64_t rank = shape.size(), window = 1;
    SmallVector<int64_t> strides(rank, 1), parallelDims, reducedDims;
    for (int64_t d = rank - 1; d >= 0; --d) {
      if (d + 1 < rank)
        strides[d] = strides[d + 1] * shape[d + 1];
      if (reduced[d]) {
        window *= shape[d];
        reducedDims.insert(reducedDims.begin(), d);
      } else {
        parallelDims.insert(parallelDims.begin(), d);
      }
    }
    int64_t outputs = elements / window;
    if (outputs < 2)
      return failure();
    // The flat offset of the `index`-th element (row-major) over `dims`.
    auto offsetOf = [&](int64_t index, ArrayRef<int64_t> dims) {
      int64_t offset = 0;
      for (int64_t d : llvm::reverse(dims)) {
        offset += (index % shape[d]) * strides[d];
        index /= shape[d];
      }
      return offset;
    };
    Location loc = op.getLoc();
    Type elementType = source.getElementType();
    Value flat = vector::ShapeCastOp::create(
        rewriter, loc, VectorType::get({elements}, elementType), op.getSource());
    Value result = vector::ShapeCastOp::create(
        rewriter, loc, VectorType::get({outputs}, elementType), op.getAcc());
    for (int64_t position = 0; position < window; ++position) {
      int64_t base = offsetOf(position, reducedDims);
      SmallVector<int64_t> picks;
      for (int64_t out = 0; out < outputs; ++out)
        picks.push_back(base + offsetOf(out, parallelDims));
      Value slice = vector::ShuffleOp::create(rewriter, loc, flat, flat, picks);
      result = vector::makeArithReduction(rewriter, loc, op.getKind(), slice, result);
    }
    rewriter.replaceOpWithNewOp<vector::ShapeCastOp>(op, resultType, result);
    return success();
  }
};

/// A column broadcast along rows (an outer product's left operand: a
/// column of 8 against rows of 32) came out of the vectorizer as a
/// broadcast of the column to 32 x 8 and a transpose; the transpose became
/// a shuffle of all 256 elements (and 64 more to assemble its operand).
/// Broadcasting the column as 8 x 1 stretches each element along its row:
/// 8 splats.
struct TransposedBroadcastAsStretch : OpRewritePattern<vector::TransposeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(vector::TransposeOp op, PatternRewriter &rewriter) const override {
    auto broadcast = op.getVector().getDefiningOp<vector::BroadcastOp>();
    auto column = broadcast ? dyn_cast<VectorType>(broadcast.getSourceType()) : VectorType();
    VectorType result = op.getResultVectorType();
    if (!column || column.getRank() != 1 || column.isScalable() || result.getRank() != 2 ||
        op.getPermutation() != ArrayRef<int64_t>{1, 0})
      return failure();
    auto tall = VectorType::get({column.getDimSize(0), 1}, column.getElementType());
    Value shaped = vector::ShapeCastOp::create(rewriter, op.getLoc(), tall, broadcast.getSource());
    rewriter.replaceOpWithNewOp<vector::BroadcastOp>(op, result, shaped);
    return success();
  }
};

/// A 2-D transpose of 32-bit elements up to 16 x 16 and more than 64 of them
/// (a training step's 16 x 10 loss gradient, transposed for the weight
/// gradient), padded to 16 x 16 with poison lanes for the shuffle_16x16
/// lowering and cut back. The 1-D lowering made it one shuffle of 160 lanes
/// out of sixteen 10-lane rows, which LLVM's instruction selection took
/// about 10 ms to legalize; padded, 185 -> 131 instructions in about half
/// the code generation time. Where registers hold 8 lanes
/// (registerTransposeSide), one of at most 8 x 8 and more than 32 elements
/// is padded to 8 x 8 instead (TransposeEightByEight).
struct PadTransposeToSquare : OpRewritePattern<vector::TransposeOp> {
  static constexpr int64_t kSide = 16;
  static constexpr int64_t kMinElements = 64;
  static constexpr int64_t kSmallMinElements = 32;

  PadTransposeToSquare(MLIRContext *context, int64_t registerSide)
      : OpRewritePattern(context, /*benefit=*/2), registerSide(registerSide) {}

  /// The side of the register transposes (registerTransposeSide).
  int64_t registerSide;

  /// `vector[i]` for each of `count` rows, each cut or widened to `lanes`
  /// lanes (widened with poison), inserted into a poison vector of `type`.
  static Value copyRows(PatternRewriter &rewriter, Location loc, Value vector, int64_t count,
                        int64_t lanes, VectorType type) {
    int64_t width = cast<VectorType>(vector.getType()).getDimSize(1);
    SmallVector<int64_t> mask(lanes, vector::ShuffleOp::kPoisonIndex);
    std::iota(mask.begin(), mask.begin() + std::min(lanes, width), 0);
    Value result = ub::PoisonOp::create(rewriter, loc, type);
    for (int64_t i = 0; i < count; ++i) {
      Value row = vector::ExtractOp::create(rewriter, loc, vector, i);
      if (lanes != width)
        row = vector::ShuffleOp::create(rewriter, loc, row, row, mask);
      result = vector::InsertOp::create(rewriter, loc, row, result, i);
    }
    return result;
  }

  LogicalResult matchAndRewrite(vector::TransposeOp op, PatternRewriter &rewriter) const override {
    VectorType source = op.getSourceVectorType();
    if (source.getRank() != 2 || source.isScalable() || !source.getElementType().isIntOrFloat() ||
        source.getElementTypeBitWidth() != 32)
      return failure();
    int64_t rows = source.getDimSize(0), columns = source.getDimSize(1);
    int64_t side = kSide, minElements = kMinElements;
    if (registerSide < kSide && rows <= registerSide && columns <= registerSide)
      side = registerSide, minElements = kSmallMinElements;
    if (rows > side || columns > side || (rows == side && columns == side) ||
        rows * columns <= minElements)
      return failure();
    Location loc = op.getLoc();
    auto square = VectorType::get({side, side}, source.getElementType());
    Value padded = copyRows(rewriter, loc, op.getVector(), rows, side, square);
    Value transposed = vector::TransposeOp::create(rewriter, loc, padded, ArrayRef<int64_t>{1, 0});
    rewriter.replaceOp(
        op, copyRows(rewriter, loc, transposed, columns, rows, op.getResultVectorType()));
    return success();
  }
};

/// An 8 x 8 transpose of 32-bit elements as 24 shuffles of whole 8-lane
/// rows, in three rounds: pairs of rows interleaved (AVX2's unpack low and
/// high), pairs of those merged by 64-bit halves within each 128-bit lane
/// (an in-lane shuffle), and the 128-bit lanes of rows four apart exchanged
/// (a lane permute). The vector dialect lowers it element by element (64
/// extracts and inserts) or as one 64-lane shuffle; its shuffle_16x16 is for
/// AVX-512's 16 lanes.
struct TransposeEightByEight : OpRewritePattern<vector::TransposeOp> {
  static constexpr int64_t kSide = 8;

  TransposeEightByEight(MLIRContext *context) : OpRewritePattern(context, /*benefit=*/3) {}

  LogicalResult matchAndRewrite(vector::TransposeOp op, PatternRewriter &rewriter) const override {
    VectorType source = op.getSourceVectorType();
    if (source.getRank() != 2 || source.isScalable() || source.getDimSize(0) != kSide ||
        source.getDimSize(1) != kSide || !source.getElementType().isIntOrFloat() ||
        source.getElementTypeBitWidth() != 32 || op.getPermutation() != ArrayRef<int64_t>{1, 0})
      return failure();
    Location loc = op.getLoc();
    auto shuffle = [&](Value a, Value b, ArrayRef<int64_t> mask) -> Value {
      return vector::ShuffleOp::create(rewriter, loc, a, b, mask);
    };
    SmallVector<Value> rows;
    for (int64_t i = 0; i < kSide; ++i)
      rows.push_back(vector::ExtractOp::create(rewriter, loc, op.getVector(), i));
    // Round 1: t[2i], t[2i+1] interleave rows 2i and 2i+1 (columns 0, 1, 4,
    // 5 and 2, 3, 6, 7 of each).
    SmallVector<Value> t;
    for (int64_t i = 0; i < kSide; i += 2) {
      t.push_back(shuffle(rows[i], rows[i + 1], {0, 8, 1, 9, 4, 12, 5, 13}));
      t.push_back(shuffle(rows[i], rows[i + 1], {2, 10, 3, 11, 6, 14, 7, 15}));
    }
    // Round 2: u[4q + c] holds column c (low lane) and c + 4 (high lane) of
    // rows 4q to 4q + 3.
    SmallVector<Value> u;
    for (int64_t q = 0; q < 2; ++q) {
      Value *group = &t[4 * q];
      u.push_back(shuffle(group[0], group[2], {0, 1, 8, 9, 4, 5, 12, 13}));
      u.push_back(shuffle(group[0], group[2], {2, 3, 10, 11, 6, 7, 14, 15}));
      u.push_back(shuffle(group[1], group[3], {0, 1, 8, 9, 4, 5, 12, 13}));
      u.push_back(shuffle(group[1], group[3], {2, 3, 10, 11, 6, 7, 14, 15}));
    }
    // Round 3: column c from the low lanes of u[c] and u[c + 4], column
    // c + 4 from their high lanes.
    SmallVector<Value> columns(kSide);
    for (int64_t c = 0; c < 4; ++c) {
      columns[c] = shuffle(u[c], u[c + 4], {0, 1, 2, 3, 8, 9, 10, 11});
      columns[c + 4] = shuffle(u[c], u[c + 4], {4, 5, 6, 7, 12, 13, 14, 15});
    }
    Value result = ub::PoisonOp::create(rewriter, loc, op.getResultVectorType());
    for (int64_t c = 0; c < kSide; ++c)
      result = vector::InsertOp::create(rewriter, loc, columns[c], result, c);
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// A transpose of pairs of 16-bit elements ([.., b, a, 2] -> [.., a, b, 2],
/// the leading dimensions 1: a bf16 weight packed for dot products), read
/// from a tensor and written to one: each pair moves as one i32. The read
/// and the write take whole rows of b x 2a and a x 2b elements (through the
/// tensors with their last two dimensions merged), and a 2-D transpose of
/// b x a i32 is what the script's shuffle_16x16 lowering turns into
/// shuffles of whole registers for 16 x 16. (As it came, the transfers moved
/// 2 elements at a time and the transpose extracted and inserted each pair.)
struct TransposePairsAs32Bit : OpRewritePattern<vector::TransposeOp> {
  using OpRewritePattern::OpRewritePattern;

  /// Whether `xfer` reads or writes whole pairs: a tensor of 16-bit pairs,
  /// in bounds, unmasked, minor identity, the last index 0.
  static bool readsWholePairs(VectorTransferOpInterface xfer) {
    auto tensor = dyn_cast<RankedTensorType>(xfer.getShapedType());
    return tensor && tensor.hasStaticShape() && tensor.getRank() >= 3 &&
           tensor.getShape().back() == 2 && tensor.getElementType().isIntOrFloat() &&
           tensor.getElementTypeBitWidth() == 16 && !xfer.getMask() &&
           xfer.getPermutationMap().isMinorIdentity() &&
           llvm::all_of(xfer.getInBoundsValues(), [](bool b) { return b; }) &&
           matchPattern(xfer.getIndices().back(), m_Zero());
  }

  /// `xfer`'s tensor with its last two dimensions merged, and its indices
  /// into that ([.., i, 0] -> [.., 2 i]).
  static std::pair<Value, SmallVector<Value>> mergedPairs(PatternRewriter &rewriter,
                                                          VectorTransferOpInterface xfer) {
    Location loc = xfer.getLoc();
    auto tensor = cast<RankedTensorType>(xfer.getShapedType());
    int64_t rank = tensor.getRank();
    SmallVector<ReassociationIndices> merge;
    for (int64_t i = 0; i + 2 < rank; ++i)
      merge.push_back({i});
    merge.push_back({rank - 2, rank - 1});
    Value merged = tensor::CollapseShapeOp::create(rewriter, loc, xfer.getBase(), merge);
    SmallVector<Value> indices(xfer.getIndices().drop_back(2));
    Value two = arith::ConstantIndexOp::create(rewriter, loc, 2);
    indices.push_back(arith::MulIOp::create(rewriter, loc, xfer.getIndices()[rank - 2], two));
    return {merged, indices};
  }

  LogicalResult matchAndRewrite(vector::TransposeOp op, PatternRewriter &rewriter) const override {
    VectorType source = op.getSourceVectorType();
    ArrayRef<int64_t> perm = op.getPermutation();
    int64_t rank = source.getRank();
    if (rank < 3 || source.isScalable() || !source.getElementType().isIntOrFloat() ||
        source.getElementTypeBitWidth() != 16 || source.getDimSize(rank - 1) != 2 ||
        perm[rank - 1] != rank - 1 || perm[rank - 2] != rank - 3 || perm[rank - 3] != rank - 2)
      return failure();
    for (int64_t i = 0; i + 3 < rank; ++i)
      if (perm[i] != i || source.getDimSize(i) != 1)
        return failure();
    auto read = op.getVector().getDefiningOp<vector::TransferReadOp>();
    auto write = op->hasOneUse() ? dyn_cast<vector::TransferWriteOp>(*op->getUsers().begin())
                                 : vector::TransferWriteOp();
    if (!read || !write || write.getVector() != op.getResult() ||
        !readsWholePairs(cast<VectorTransferOpInterface>(read.getOperation())) ||
        !readsWholePairs(cast<VectorTransferOpInterface>(write.getOperation())))
      return failure();
    Location loc = op.getLoc();
    Type element = source.getElementType(), i32 = rewriter.getI32Type();
    int64_t b = source.getDimSize(rank - 3), a = source.getDimSize(rank - 2);
    rewriter.setInsertionPoint(read);
    auto [from, fromIndices] =
        mergedPairs(rewriter, cast<VectorTransferOpInterface>(read.getOperation()));
    Value rows =
        vector::TransferReadOp::create(rewriter, loc, VectorType::get({b, 2 * a}, element), from,
                                       fromIndices, read.getPadding(), ArrayRef<bool>{true, true});
    rewriter.setInsertionPoint(write);
    Value words = vector::BitCastOp::create(rewriter, loc, VectorType::get({b, a}, i32), rows);
    Value swapped = vector::TransposeOp::create(rewriter, loc, words, ArrayRef<int64_t>{1, 0});
    Value pairs =
        vector::BitCastOp::create(rewriter, loc, VectorType::get({a, 2 * b}, element), swapped);
    auto [to, toIndices] =
        mergedPairs(rewriter, cast<VectorTransferOpInterface>(write.getOperation()));
    Value written = vector::TransferWriteOp::create(rewriter, loc, pairs, to, toIndices,
                                                    ArrayRef<bool>{true, true})
                        .getResult();
    auto destType = cast<RankedTensorType>(write.getBase().getType());
    auto merged = cast<tensor::CollapseShapeOp>(to.getDefiningOp());
    rewriter.replaceOpWithNewOp<tensor::ExpandShapeOp>(write, destType, written,
                                                       merged.getReassociationIndices());
    rewriter.eraseOp(op);
    if (read->use_empty())
      rewriter.eraseOp(read);
    return success();
  }
};

/// A read of a window tile, [.., kh, ow, kw] of a pooling's view
/// [.., oh, kh, ow, kw], covers each input row (ow, kw) whole: reading it
/// through the view with the row's two dimensions merged back makes each
/// row one transfer of ow * kw contiguous elements. The read's innermost
/// dimension (kw, 2 elements) is what the lowering to 1-D transfers loads at
/// a time otherwise: 28 loads of two elements for a row of 14 windows.
struct ReadWholeRowsOfExpandedTensor : OpRewritePattern<vector::TransferReadOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(vector::TransferReadOp read,
                                PatternRewriter &rewriter) const override {
    auto expand = read.getBase().getDefiningOp<tensor::ExpandShapeOp>();
    VectorType vector = read.getVectorType();
    int64_t rank = vector.getRank();
    if (!expand || read.getMask() || vector.isScalable() || rank < 2 ||
        !read.getPermutationMap().isMinorIdentity() ||
        read.getPermutationMap().getNumResults() != expand.getResultType().getRank())
      return failure();
    // The last two dimensions: from one dimension of the expand's source,
    // read whole from index 0.
    RankedTensorType tensor = expand.getResultType();
    SmallVector<ReassociationIndices> groups = expand.getReassociationIndices();
    int64_t last = tensor.getRank() - 1;
    // (A 0-d tensor expands with no groups.)
    if (groups.empty() || groups.back().size() < 2 || groups.back().back() != last ||
        !llvm::is_contained(groups.back(), last - 1))
      return failure();
    for (int64_t d = last - 1; d <= last; ++d)
      if (tensor.getDimSize(d) != vector.getDimSize(rank - (last - d) - 1) ||
          !isZeroInteger(read.getIndices()[d]) || !read.isDimInBounds(rank - (last - d) - 1))
        return failure();
    SmallVector<ReassociationIndices> merge;
    for (int64_t d = 0; d < last - 1; ++d)
      merge.push_back({d});
    merge.push_back({last - 1, last});
    Location loc = read.getLoc();
    Value rows = tensor::CollapseShapeOp::create(rewriter, loc, read.getBase(), merge);
    SmallVector<int64_t> shape(vector.getShape().drop_back(2));
    shape.push_back(vector.getDimSize(rank - 2) * vector.getDimSize(rank - 1));
    SmallVector<Value> indices(read.getIndices().drop_back());
    SmallVector<bool> inBounds(read.getInBoundsValues());
    inBounds.pop_back();
    Value merged = vector::TransferReadOp::create(rewriter, loc,
                                                  VectorType::get(shape, vector.getElementType()),
                                                  rows, indices, read.getPadding(), inBounds);
    rewriter.replaceOpWithNewOp<vector::ShapeCastOp>(read, vector, merged);
    return success();
  }
};

/// The neutral value of a reduction `kind` of `type`'s elements, for the
/// kinds carryLanePartials takes.
static std::optional<TypedAttr> neutralOf(vector::CombiningKind kind, Type type) {
  using Kind = vector::CombiningKind;
  if (auto floatType = dyn_cast<FloatType>(type)) {
    const llvm::fltSemantics &semantics = floatType.getFloatSemantics();
    switch (kind) {
    case Kind::ADD:
      return FloatAttr::get(type, llvm::APFloat::getZero(semantics));
    case Kind::MAXIMUMF:
    case Kind::MAXNUMF:
      return FloatAttr::get(type, llvm::APFloat::getInf(semantics, /*Negative=*/true));
    case Kind::MINIMUMF:
    case Kind::MINNUMF:
      return FloatAttr::get(type, llvm::APFloat::getInf(semantics, /*Negative=*/false));
    default:
      return std::nullopt;
    }
  }
  if (auto intType = dyn_cast<IntegerType>(type); intType && kind == Kind::ADD)
    return IntegerAttr::get(type, 0);
  return std::nullopt;
}

/// A loop whose carried vector is each step's reduction of a tile into it
/// (a row tile's maximum or sum: vector<8x32> reduced into vector<8> at
/// every step, a tree of shuffles each time) carries the tile's lanes
/// instead, each combined element-wise with the step's tile, and reduces
/// them once after the loop. The sums are reassociated, as the LLVM lowering
/// of vector reductions already does; maxima and minima are the same.
/// Partial tiles of at most half the register file (`maxBits`).
static void carryLanePartials(RewriterBase &rewriter, scf::ForOp loop, int64_t maxBits) {
  auto yield = cast<scf::YieldOp>(loop.getBody()->getTerminator());
  for (unsigned i = 0, e = loop.getNumRegionIterArgs(); i < e; ++i) {
    BlockArgument carried = loop.getRegionIterArg(i);
    auto reduction = yield.getOperand(i).getDefiningOp<vector::MultiDimReductionOp>();
    if (!reduction || reduction.getAcc() != carried || !carried.hasOneUse() ||
        !reduction->hasOneUse() || reduction->getBlock() != loop.getBody())
      continue;
    // Only across the lanes: the innermost dimension, and others only where
    // the tile has one element along them (a convolution bias's gradient,
    // each step a row of one channel: 14 rows of 14 doubles were 14 trees of
    // shuffles). A reduction of outer dimensions of more than one element is
    // already element-wise, register by register.
    SmallVector<bool> reduced = reduction.getReductionMask();
    VectorType tile = reduction.getSourceVectorType();
    auto acrossLanesOnly = [&] {
      for (auto [size, isReduced] :
           llvm::zip(tile.getShape().drop_back(), ArrayRef<bool>(reduced).drop_back()))
        if (isReduced && size != 1)
          return false;
      return true;
    };
    if (!reduced.back() || !acrossLanesOnly() || tile.isScalable() ||
        tile.getNumElements() * tile.getElementTypeBitWidth() > maxBits)
      continue;
    std::optional<TypedAttr> neutral = neutralOf(reduction.getKind(), tile.getElementType());
    if (!neutral)
      continue;
    Location loc = reduction.getLoc();
    rewriter.setInsertionPoint(loop);
    Value start = arith::ConstantOp::create(rewriter, loc, tile,
                                            SplatElementsAttr::get(tile, Attribute(*neutral)));
    Value initial = loop.getInitArgs()[i];
    // The loop with one more carried value: the lanes' partials.
    FailureOr<LoopLikeOpInterface> widened = loop.replaceWithAdditionalYields(
        rewriter, start, /*replaceInitOperandUsesInLoop=*/false,
        [&](OpBuilder &b, Location, ArrayRef<BlockArgument> partials) -> SmallVector<Value> {
          b.setInsertionPoint(yield);
          return {vector::makeArithReduction(b, loc, reduction.getKind(), reduction.getSource(),
                                             partials.front())};
        });
    if (failed(widened))
      return;
    auto next = cast<scf::ForOp>(widened->getOperation());
    // The old carried value no longer depends on the steps: it is the
    // initial one, reduced with the partials after the loop.
    auto newYield = cast<scf::YieldOp>(next.getBody()->getTerminator());
    rewriter.modifyOpInPlace(newYield, [&] { newYield.setOperand(i, next.getRegionIterArg(i)); });
    rewriter.setInsertionPointAfter(next);
    Value partials = next.getResults().back();
    Value result = vector::MultiDimReductionOp::create(
        rewriter, loc, partials, initial, reduction.getReductionMask(), reduction.getKind());
    rewriter.replaceAllUsesWith(next.getResult(i), result);
    rewriter.eraseOp(reduction);
    return carryLanePartials(rewriter, next, maxBits);
  }
}

/// A whole 1-D vector reduced to a scalar (the last step of a reduction of
/// a row or of everything: a min, max or sum over 32 lanes) as one
/// horizontal `vector.reduction`: a tree of shuffles in LLVM. Left to
/// `lower-vector-multi-reduction`, whose strategy suits the 2-D reductions,
/// it became a chain of 32 one-lane steps through an array of 32
/// `vector<1xf32>` (a fifth of an int8 MLP's LLVM dialect ops).
/// So is every element of an n-D tile reduced into one (the dimensions
/// that stay all of size 1: a convolution bias's gradient, a tile of rows
/// of one channel summed into its accumulator), flattened first: the
/// default lowering added its 28 elements to the accumulator one after the
/// other, a chain of dependent adds (6% of the bench CNN's training step).
struct WholeVectorReduction : OpRewritePattern<vector::MultiDimReductionOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(vector::MultiDimReductionOp op,
                                PatternRewriter &rewriter) const override {
    VectorType source = op.getSourceVectorType();
    if (source.isScalable() || source.getRank() == 0)
      return failure();
    for (auto [size, reduced] : llvm::zip(source.getShape(), op.getReductionMask()))
      if (!reduced && size != 1)
        return failure();
    auto resultVector = dyn_cast<VectorType>(op.getType());
    if (source.getRank() == 1 && resultVector)
      return failure();
    Location loc = op.getLoc();
    Value flat = op.getSource();
    if (source.getRank() != 1)
      flat = vector::ShapeCastOp::create(
          rewriter, loc, VectorType::get({source.getNumElements()}, source.getElementType()), flat);
    Value acc = op.getAcc();
    if (resultVector)
      acc = vector::ExtractOp::create(rewriter, loc, acc,
                                      SmallVector<int64_t>(resultVector.getRank(), 0));
    Value sum = vector::ReductionOp::create(rewriter, loc, op.getKind(), flat, acc);
    if (resultVector)
      sum = vector::BroadcastOp::create(rewriter, loc, resultVector, sum);
    rewriter.replaceOp(op, sum);
    return success();
  }
};

/// The sums across lanes of a tile of partial sums (a matrix-vector
/// product's rows x columns x lanes accumulators): reduced one accumulator
/// at a time, each took a log2(lanes)-step tree inside one register and an
/// insert of its scalar, 144 instructions for 16 accumulators of 16 lanes,
/// more than the int8 product's own dot products at batch 16 (13 vpdpbusd
/// per accumulator for a reduction of 784). Here pairs of accumulators
/// combine into one register that holds half of each one's lanes (two
/// shuffles and an add), level by level, until one register holds every
/// accumulator's sum: 45 instructions, and the sums come out side by side,
/// in order, ready to store. (The int8 MLP 784-512-512-10 at batch 16, one
/// thread of a Zen 4: 0.111 -> 0.077 ms; in float32 0.250 -> 0.212 ms.)
struct SumLanesWithShuffleTree : OpRewritePattern<vector::MultiDimReductionOp> {
  using OpRewritePattern::OpRewritePattern;
  /// At most 64 registers of f32 with AVX-512 (a 4 x 4 tile of 16 lanes
  /// has 256 elements).
  static constexpr int64_t kMaxElements = 1024;

  LogicalResult matchAndRewrite(vector::MultiDimReductionOp op,
                                PatternRewriter &rewriter) const override {
    if (!isUnmaskedReductionToVector(op))
      return failure();
    VectorType source = op.getSourceVectorType();
    auto resultType = cast<VectorType>(op.getType());
    SmallVector<bool> reduced = op.getReductionMask();
    int64_t lanes = source.getShape().back();
    if (!reduced.back() || llvm::count(reduced, true) != 1 || lanes < 4 || lanes > 64 ||
        !llvm::isPowerOf2_64(lanes) || source.getNumElements() > kMaxElements)
      return failure();
    // Outputs in chunks of a power of 2 (at most a register's lanes): the
    // rows x columns of a tile of 3 x 4 accumulators in 3 chunks of 4.
    int64_t outputs = source.getNumElements() / lanes;
    int64_t chunk = std::min<int64_t>(lanes, outputs & -outputs);
    if (outputs < 2 || chunk < 2)
      return failure();
    Location loc = op.getLoc();
    Type elementType = source.getElementType();
    vector::CombiningKind kind = op.getKind();
    Value rows = vector::ShapeCastOp::create(
        rewriter, loc, VectorType::get({outputs, lanes}, elementType), op.getSource());
    SmallVector<Value> chunks;
    for (int64_t first = 0; first < outputs; first += chunk) {
      // Each register with the accumulators whose partial sums it holds, in
      // blocks of equal size, in order.
      SmallVector<std::pair<Value, SmallVector<int64_t>>> level;
      for (int64_t i = first; i < first + chunk; ++i)
        level.push_back({vector::ExtractOp::create(rewriter, loc, rows, i), {i - first}});
      while (level.size() > 1) {
        // Register i with register i + n / 2: the sums then come out in
        // the accumulators' order.
        SmallVector<std::pair<Value, SmallVector<int64_t>>> next;
        size_t pairs = level.size() / 2;
        for (size_t i = 0; i < pairs; ++i) {
          auto &[x, xOwners] = level[i];
          auto &[y, yOwners] = level[i + pairs];
          int64_t blocks = xOwners.size(), block = lanes / blocks, half = block / 2;
          SmallVector<int64_t> low, high, owners;
          for (int64_t q = 0; q < blocks; ++q) {
            for (int64_t j = 0; j < half; ++j) {
              low.push_back(q * block + j);
              high.push_back(q * block + half + j);
            }
            for (int64_t j = 0; j < half; ++j) {
              low.push_back(lanes + q * block + j);
              high.push_back(lanes + q * block + half + j);
            }
            owners.append({xOwners[q], yOwners[q]});
          }
          Value sum = vector::makeArithReduction(
              rewriter, loc, kind, vector::ShuffleOp::create(rewriter, loc, x, y, low),
              vector::ShuffleOp::create(rewriter, loc, x, y, high));
          next.push_back({sum, owners});
        }
        level = std::move(next);
      }
      auto [sum, owners] = level.front();
      // Fewer accumulators than lanes: halve the blocks inside the register.
      for (int64_t block = lanes / chunk; block > 1; block /= 2) {
        SmallVector<int64_t> low, high;
        for (int64_t q = 0; q < chunk; ++q)
          for (int64_t j = 0; j < block / 2; ++j) {
            low.push_back(q * block + j);
            high.push_back(q * block + block / 2 + j);
          }
        sum = vector::makeArithReduction(rewriter, loc, kind,
                                         vector::ShuffleOp::create(rewriter, loc, sum, sum, low),
                                         vector::ShuffleOp::create(rewriter, loc, sum, sum, high));
      }
      // The sums in the accumulators' order (already so: kept in case the
      // pairing changes).
      SmallVector<int64_t> order(chunk);
      for (int64_t position = 0; position < chunk; ++position)
        order[owners[position]] = position;
      if (!llvm::equal(order, llvm::seq<int64_t>(0, chunk)))
        sum = vector::ShuffleOp::create(rewriter, loc, sum, sum, order);
      chunks.push_back(sum);
    }
    // Concatenated pairwise, in order; a number of chunks that is not a
    // power of 2, one by one into the rows of a vector of them.
    if (!llvm::isPowerOf2_64(chunks.size())) {
      auto rowsOfChunks =
          VectorType::get({static_cast<int64_t>(chunks.size()), chunk}, elementType);
      Value joined = ub::PoisonOp::create(rewriter, loc, rowsOfChunks);
      for (auto [i, part] : llvm::enumerate(chunks))
        joined = vector::InsertOp::create(rewriter, loc, part, joined, static_cast<int64_t>(i));
      chunks = {vector::ShapeCastOp::create(rewriter, loc, VectorType::get({outputs}, elementType),
                                            joined)};
    }
    while (chunks.size() > 1) {
      SmallVector<Value> joined;
      for (size_t i = 0; i < chunks.size(); i += 2) {
        int64_t size = cast<VectorType>(chunks[i].getType()).getNumElements();
        joined.push_back(
            vector::ShuffleOp::create(rewriter, loc, chunks[i], chunks[i + 1],
                                      llvm::to_vector(llvm::seq<int64_t>(0, 2 * size))));
      }
      chunks = std::move(joined);
    }
    Value acc = vector::ShapeCastOp::create(rewriter, loc, VectorType::get({outputs}, elementType),
                                            op.getAcc());
    Value result = vector::makeArithReduction(rewriter, loc, kind, chunks.front(), acc);
    rewriter.replaceOpWithNewOp<vector::ShapeCastOp>(op, resultType, result);
    return success();
  }
};
} // namespace

/// What the strategy sizes the tiles for (the target's registers and L2,
/// and the pass options).
/// Gives an op the schedule creates the config of `kernel` that the
/// strategy chooses for it: the register tile, and before the ops are split
/// across threads (`beforeSplit`) the thread split.
void Scheduler::configureTile(Operation *op, CpuKernel kernel, bool beforeSplit) const {
  setCpuKernel(op, kernel);
  auto linalgOp = cast<linalg::LinalgOp>(op);
  if (beforeSplit)
    setLoweringConfig(op, cpu::selectLoweringConfig(linalgOp, strategy));
  else
    setLoweringConfig(op, getLoweringConfig(op).withRegisterTile(
                              cpu::registerTile(linalgOp, strategy.registers)));
}

ArrayRef<int64_t> Scheduler::cacheBlockOf(linalg::LinalgOp op) const {
  LoweringConfigAttr config = getLoweringConfig(op);
  return config && !config.getCacheTile().empty() ? config.getCacheTile()
                                                  : ArrayRef<int64_t>(strategy.cacheTile);
}

/// Whether the rows of float matmul `op` no register tile divides are better
/// left whole until its right operand is packed: a matmul larger than one
/// cache block, whose blocks pack (more than one panel of columns, at least
/// 16 rows), splits the rest of its rows off each block's packed product
/// (splitRowRemainder), which reads the packed block as the other rows do.
/// Split before, the rest was a matmul of its own that read B unpacked, and
/// a Linear layer's transposed weight, read by both, was copied whole (the
/// MLP at batch 256 in AVX2 code, 6-row tiles: 15% of its time).
bool Scheduler::packsRowsTogether(linalg::LinalgOp op) const {
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  if (ranges.size() != 3 || llvm::any_of(ranges, ShapedType::isDynamic) || ranges[0] < 16)
    return false;
  Type a = getElementTypeOrSelf(op.getDpsInputOperand(0)->get().getType());
  Type b = getElementTypeOrSelf(op.getDpsInputOperand(1)->get().getType());
  // Dot-product and tile kernels keep their own row rules.
  if (!isa<FloatType>(a) || !isa<FloatType>(b) ||
      (a.isBF16() && b.isBF16() && strategy.registers.bf16DotProduct))
    return false;
  int64_t cols = strategy.registers.matmulColumns(op);
  if (ranges[1] <= cols || ranges[1] % cols != 0)
    return false;
  ArrayRef<int64_t> block = cacheBlockOf(op);
  return llvm::any_of(llvm::zip(ranges, block),
                      [](auto pair) { return std::get<0>(pair) > std::get<1>(pair); });
}

/// Whether matmul `op`, whose rows packsRowsTogether keeps whole, would
/// split the rest of its rows off each of more than two blocks of rows
/// (tileForCache), when split once before they are blocked: each block of
/// rows then takes whole register tiles (AVX2's 6-row tiles in 16-row
/// blocks of 2048 rows left a 4-row tile in each), and the rest, fewer rows
/// than a tile, streams B as stored (its own packing of B would cost more).
/// Not where B is a transposed weight, which the rest would copy whole.
/// (sgemm 2048 in AVX2 code on a Zen 5: 2046 rows ran at 137 GFLOP/s one
/// core, 275 on two, against 2048 rows' 135 and 264.)
bool Scheduler::splitsRowRestBeforeBlocks(linalg::LinalgOp op) const {
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  Value b = op.getDpsInputOperand(1)->get();
  Type et = getElementTypeOrSelf(b.getType());
  if (ranges.size() != 3 || llvm::any_of(ranges, ShapedType::isDynamic) ||
      !isa<Float32Type, Float64Type>(et) ||
      getElementTypeOrSelf(op.getDpsInputOperand(0)->get().getType()) != et ||
      b.getDefiningOp<linalg::TransposeOp>())
    return false;
  // Row tiles outermost in blocks of columns or reduction steps take the
  // rows whole (tileForCache): the rest then reads the packed block of each,
  // in each thread's share.
  ArrayRef<int64_t> block = cacheBlockOf(op);
  if ((ranges[1] > block[1] || ranges[2] > block[2]) &&
      takesRowTilesOuter(et, getElementTypeOrSelf(op->getResult(0).getType()), ranges[0],
                         std::min(ranges[1], block[1]), std::min(ranges[2], block[2]), strategy))
    return false;
  return ranges[0] > 2 * block[0];
}

// (Documented in Schedule.h.)
linalg::FillOp mithril::cpu::detail::detachAccumulatorFill(linalg::LinalgOp op) {
  if (op.getNumDpsInits() != 1)
    return nullptr;
  auto fill = op.getDpsInitOperand(0)->get().getDefiningOp<linalg::FillOp>();
  if (!fill || !fill->hasOneUse())
    return nullptr;
  op.getDpsInitOperand(0)->set(fill.getDpsInitOperand(0)->get());
  return fill;
}

// (Documented in Schedule.h.)
void mithril::cpu::detail::fillEachPart(RewriterBase &rewriter, linalg::FillOp fill,
                                        ArrayRef<TilingInterface> parts) {
  if (!fill)
    return;
  for (TilingInterface part : parts) {
    if (!part)
      continue;
    OpOperand *init = cast<linalg::LinalgOp>(part.getOperation()).getDpsInitOperand(0);
    rewriter.setInsertionPoint(part);
    init->set(
        linalg::FillOp::create(rewriter, fill.getLoc(), fill.value(), init->get()).getResult(0));
  }
  if (fill->use_empty())
    rewriter.eraseOp(fill);
}

namespace {
/// The ops a rewrite erased (or replaced), by address: whether an op that
/// was handed to it still exists.
struct ErasedOps : RewriterBase::Listener {
  void notifyOperationErased(Operation *op) override { erased.insert(op); }
  DenseSet<Operation *> erased;
};
} // namespace

/// The rest of a matmul's columns split off by peelMatmulRemainders (`rest`,
/// fewer columns than a vector's lanes), made a matrix-vector product where
/// rewriteMatrixVectorProducts takes it, as a product by so few columns the
/// user wrote is: its A read by rows in vector lanes rather than a few rows
/// of A gathered down a column each step for a masked vector of B (one Zen 5
/// core, 256 x 512 by 17 columns 0.038 -> 0.024 ms, numpy 0.034). A rest of a
/// transposed weight (x @ W^T, W [n, k]) reads the weight's rows as they are
/// stored. Returns the rests it left matmuls.
FailureOr<SmallVector<Operation *>>
Scheduler::narrowRestsAsMatrixVector(IRRewriter &rewriter, ArrayRef<Operation *> rests) {
  SmallVector<linalg::LinalgOp> products;
  for (Operation *op : rests) {
    auto matmul = cast<linalg::MatmulOp>(op);
    OpOperand &right = *matmul.getDpsInputOperand(1);
    Value slice = right.get();
    rewriter.setInsertionPoint(matmul);
    // A slice of columns of a transposed matrix: the transpose of the slice
    // of its rows.
    if (Value rows = transposedSource(rewriter, slice)) {
      auto type = cast<RankedTensorType>(slice.getType());
      Value empty = tensor::EmptyOp::create(rewriter, matmul.getLoc(), type.getShape(),
                                            type.getElementType());
      Value columns = linalg::TransposeOp::create(rewriter, matmul.getLoc(), rows, empty,
                                                  ArrayRef<int64_t>{1, 0})
                          .getResult()[0];
      rewriter.modifyOpInPlace(matmul, [&] { right.set(columns); });
      if (Operation *old = slice.getDefiningOp(); old && old->use_empty())
        rewriter.eraseOp(old);
    }
    products.push_back(matmul);
  }
  ErasedOps erased;
  OpBuilder::Listener *previous = rewriter.getListener();
  rewriter.setListener(&erased);
  LogicalResult rewritten = rewriteMatrixVectorProducts(rewriter, products);
  rewriter.setListener(previous);
  if (failed(rewritten))
    return failure();
  SmallVector<Operation *> left;
  for (Operation *op : rests)
    if (!erased.erased.contains(op))
      left.push_back(op);
  return left;
}

/// Splits a matmul whose sizes the register tiles and cache blocks do not
/// divide into the part they divide and the rest, until they do: columns
/// at a multiple of the register tile's (784 = 24 x 32 + 16), then of the
/// cache block's (992 = 3 x 256 + 224), and rows at a multiple of the
/// register tile's. Tiles must divide their loop to keep static shapes,
/// and with the largest divisor instead (28 columns for 784, 248 x 31 for
/// 1000 x 992) a 512 x 64 x 784 matmul took 8 ms instead of 0.25, and a
/// 1000^3 one ran at 5 GFLOP/s (partial vectors, and no packing). Products
/// of fewer than 8 rows too: 1 x 1000 by 1000 columns took tiles of 25.
LogicalResult Scheduler::peelMatmulRemainders(IRRewriter &rewriter,
                                              ArrayRef<linalg::LinalgOp> ops) {
  int64_t blockColumns = strategy.cacheTile[1];
  SmallVector<Operation *> work, narrowRests;
  for (linalg::LinalgOp op : ops)
    if (isa<linalg::MatmulOp>(op.getOperation()) && !hasKernel(op, CpuKernel::MatrixVector))
      work.push_back(op);
  while (!work.empty() || !narrowRests.empty()) {
    if (work.empty()) {
      // (A rest no matrix-vector product takes is peeled as it was.)
      FailureOr<SmallVector<Operation *>> left = narrowRestsAsMatrixVector(rewriter, narrowRests);
      if (failed(left))
        return failure();
      work = std::move(*left);
      narrowRests.clear();
      continue;
    }
    auto op = cast<linalg::LinalgOp>(work.pop_back_val());
    SmallVector<int64_t> ranges = op.getStaticLoopRanges();
    if (ranges.size() != 3 || ShapedType::isDynamic(ranges[0]) ||
        ShapedType::isDynamic(ranges[1]) || ranges[0] == 0)
      continue;
    int64_t rows = strategy.registers.matmulRows(op), cols = strategy.registers.matmulColumns(op);
    int64_t lanes = strategy.registers.vectorColumns(op);
    unsigned dimension;
    int64_t split;
    if (ranges[1] > cols && ranges[1] % cols != 0) {
      dimension = 1, split = ranges[1] - ranges[1] % cols;
    } else if (ranges[1] > lanes && ranges[1] % lanes != 0) {
      // More than one vector and not whole vectors (a rest of 28 columns
      // in 16-lane vectors): whole vectors, then the rest in one partial
      // vector. Rows of 28 lanes went to LLVM as vectors it could only
      // shuffle into registers element by element, through the stack:
      // 1500 x 1500 x 28 ran at 6 GFLOP/s (its AVX2 code, 12 columns in
      // 8-lane vectors, at 7), and sgemm 1500 at 0.74x of OpenBLAS.
      dimension = 1, split = ranges[1] - ranges[1] % lanes;
    } else if (ranges[1] > blockColumns && ranges[1] % blockColumns != 0 &&
               blockColumns % cols == 0 && ranges[0] >= rows) {
      // (Fewer rows than a tile's take blocks of all their columns,
      // matmulCacheTile: split at 768 of 1000, one row took 0.064 ms, whole
      // 0.056.)
      dimension = 1, split = ranges[1] - ranges[1] % blockColumns;
    } else if (ranges[0] > rows && ranges[0] % rows != 0 &&
               (!packsRowsTogether(op) || splitsRowRestBeforeBlocks(op))) {
      dimension = 0, split = ranges[0] - ranges[0] % rows;
    } else {
      continue;
    }
    linalg::GenericOp epilogue = productEpilogue(op);
    // (Which of its operands reads the product: after the split, the
    // product assembled from its parts.)
    unsigned productOperand = epilogue ? op->use_begin()->getOperandNumber() : 0;
    // Its parts then each start from a fill of their own (fillEachPart),
    // which fuses into their blocks and each thread's share. Without an
    // epilogue too where the columns split: a data-parallel step's first
    // weight gradient, 512 x 784 into its window, was otherwise zeroed by
    // a pass of its own, 1.6 MiB, before its parts accumulated into it.
    // So do float products' rows: each part's first reduction block then
    // starts from zero (splitFirstTileBlock), or each block's register tiles
    // from its fill (tileWithEpilogue), rather than from a fill of the whole
    // written first and read back. AVX2 code, one Zen 4 core, alternated
    // launches: 1030 x 64 by 64 x 256 0.308 -> 0.297 ms (AVX-512 code 0.311 ->
    // 0.297), 1000 x 128 by 128 x 512 1.16 -> 1.14 ms; the bench GPT level.
    Type inputType = getElementTypeOrSelf(op.getDpsInputOperand(0)->get().getType());
    bool floatRows = dimension == 0 && isa<Float32Type, Float64Type>(inputType);
    linalg::FillOp fill =
        epilogue || dimension == 1 || floatRows ? detachAccumulatorFill(op) : nullptr;
    rewriter.setInsertionPoint(op);
    // The parts write their slices of one buffer, which the fold of empty
    // slices would otherwise give each part apart, copied into the whole
    // after (a 1024 x 1000 product split at 992 and again at 768: two
    // copies, 0.6 of its 5.4 ms on one Zen 4 core). (An epilogue's parts
    // read the product's parts directly: splitEpilogueWithParts.) Not for
    // fewer rows than a register tile's, whose few values the copy costs
    // little and whose row of A LLVM keeps in registers across the column
    // tiles only where they store into a buffer of their own (noalias),
    // not the caller's. Nor for a product materialized in a place of its
    // own (an all-reduce's window), into which mithril-collectives-in-window
    // moves its empty init.
    OpOperand *init = op.getDpsInitOperand(0);
    bool materialized = llvm::any_of(op->getUsers(), [](Operation *user) {
      return isa<bufferization::MaterializeInDestinationOp>(user);
    });
    if (auto empty = init->get().getDefiningOp<tensor::EmptyOp>();
        empty && !epilogue && !materialized && ranges[0] >= rows) {
      Value buffer = bufferization::AllocTensorOp::create(rewriter, empty.getLoc(), empty.getType(),
                                                          empty.getDynamicSizes());
      rewriter.modifyOpInPlace(op, [&] { init->set(buffer); });
    }
    auto [whole, rest] = linalg::splitOp(rewriter, cast<TilingInterface>(op.getOperation()),
                                         dimension, rewriter.getIndexAttr(split));
    if (!whole) {
      if (fill)
        op.getDpsInitOperand(0)->set(fill.getResult(0));
      continue;
    }
    for (TilingInterface part : {whole, rest}) {
      if (!part)
        continue;
      // The original's config was chosen for its sizes: each part gets
      // its own.
      part->removeAttr(LoweringConfigAttr::opAttrName);
      if (!isa<linalg::MatmulOp>(part.getOperation()))
        continue;
      // (Fewer rows than a register tile's keep a rest of more than one
      // column: the copy of its columns of B, a view for one, is then as
      // much work as their product; 1 x 1000 by 1000 columns, the rest of
      // 8: 0.0376 -> 0.0388 ms.)
      int64_t restColumns = ranges[1] - split;
      bool narrowRest =
          part == rest && dimension == 1 && restColumns < lanes &&
          (ranges[0] >= rows || restColumns == 1) &&
          isa<Float32Type, Float64Type>(getElementTypeOrSelf(part->getResult(0).getType()));
      (narrowRest ? narrowRests : work).push_back(part);
    }
    if (epilogue && rest)
      splitEpilogueWithParts(rewriter, epilogue, productOperand, dimension, split, whole, rest);
    fillEachPart(rewriter, fill, {whole, rest});
  }
  return success();
}

/// The element-wise op that is the only reader of the float matmul `op`'s
/// result, reading it element for element (an SGD update w - lr * dw of a
/// weight gradient, a bias and activation); null otherwise.
linalg::GenericOp Scheduler::productEpilogue(linalg::LinalgOp op) const {
  if (op->getNumResults() != 1 || !op->hasOneUse())
    return nullptr;
  Type et = getElementTypeOrSelf(op->getResult(0).getType());
  if (!isa<Float32Type, Float64Type>(et))
    return nullptr;
  OpOperand &use = *op->use_begin();
  auto consumer = dyn_cast<linalg::GenericOp>(use.getOwner());
  if (!consumer || !consumer.hasPureTensorSemantics() || !consumer.isDpsInput(&use) ||
      consumer.getNumLoops() != 2 || consumer.getNumParallelLoops() != 2 ||
      consumer->getNumResults() != 1 || touchesBooleans(consumer))
    return nullptr;
  AffineMap identity = AffineMap::getMultiDimIdentityMap(2, ctx);
  if (consumer.getMatchingIndexingMap(&use) != identity ||
      consumer.getIndexingMapMatchingResult(consumer->getResult(0)) != identity)
    return nullptr;
  return consumer;
}

/// Splits `epilogue` (productEpilogue of a matmul that peelMatmulRemainders
/// split into two parts; its operand `productOperand` reads the product) at
/// the same place, each part of it reading its part's result directly: the
/// product and its epilogue then stay a pair that tileForCache tiles
/// together, and the whole product is never assembled.
void Scheduler::splitEpilogueWithParts(IRRewriter &rewriter, linalg::GenericOp epilogue,
                                       unsigned productOperand, unsigned dimension, int64_t at,
                                       Operation *firstPart, Operation *secondPart) {
  Value assembled = epilogue->getOperand(productOperand);
  if (!assembled.getDefiningOp<tensor::InsertSliceOp>())
    return;
  // The second part starts from its slice of the first part's output
  // assembled with the init (linalg::splitOp): from the init's own slice
  // instead, the same values, so that the first part's result has no
  // reader but its part of the epilogue.
  OpOperand *secondInit = cast<linalg::LinalgOp>(secondPart).getDpsInitOperand(0);
  if (auto slice = secondInit->get().getDefiningOp<tensor::ExtractSliceOp>())
    if (auto insert = slice.getSource().getDefiningOp<tensor::InsertSliceOp>();
        insert && insert.getSource() == firstPart->getResult(0)) {
      rewriter.setInsertionPoint(slice);
      Value own = tensor::ExtractSliceOp::create(rewriter, slice.getLoc(), slice.getType(),
                                                 insert.getDest(), slice.getMixedOffsets(),
                                                 slice.getMixedSizes(), slice.getMixedStrides());
      rewriter.modifyOpInPlace(secondPart, [&] { secondInit->set(own); });
      if (slice->use_empty())
        rewriter.eraseOp(slice);
    }
  // The pieces write their slices of one buffer, which the fold of empty
  // slices after tileForCache would otherwise give each piece apart (and a
  // copy of the first into the whole).
  OpOperand *epilogueInit = epilogue.getDpsInitOperand(0);
  if (auto empty = epilogueInit->get().getDefiningOp<tensor::EmptyOp>()) {
    rewriter.setInsertionPoint(epilogue);
    Value buffer = bufferization::AllocTensorOp::create(rewriter, empty.getLoc(), empty.getType(),
                                                        empty.getDynamicSizes());
    rewriter.modifyOpInPlace(epilogue, [&] { epilogueInit->set(buffer); });
  }
  rewriter.setInsertionPoint(epilogue);
  auto [first, second] = linalg::splitOp(rewriter, cast<TilingInterface>(epilogue.getOperation()),
                                         dimension, rewriter.getIndexAttr(at));
  for (auto [piece, part] :
       {std::make_pair(first, firstPart), std::make_pair(second, secondPart)}) {
    if (!piece)
      continue;
    piece->removeAttr(LoweringConfigAttr::opAttrName);
    for (OpOperand &operand : piece->getOpOperands()) {
      auto slice = operand.get().getDefiningOp<tensor::ExtractSliceOp>();
      if (slice && slice.getSource() == assembled &&
          slice.getType() == part->getResult(0).getType()) {
        rewriter.modifyOpInPlace(piece, [&] { operand.set(part->getResult(0)); });
        if (slice->use_empty())
          rewriter.eraseOp(slice);
      }
    }
  }
  // The assembled product: read by nothing now.
  for (Value v = assembled; v && v.use_empty();) {
    auto insert = v.getDefiningOp<tensor::InsertSliceOp>();
    if (!insert)
      break;
    v = insert.getDest();
    rewriter.eraseOp(insert);
  }
}

DenseElementsAttr mithril::cpu::detail::sliceOfMatrix(DenseElementsAttr attr,
                                                      ArrayRef<int64_t> offsets,
                                                      ArrayRef<int64_t> sizes,
                                                      ArrayRef<int64_t> padded) {
  if (padded.empty())
    padded = sizes;
  auto type = cast<ShapedType>(attr.getType());
  Type et = type.getElementType();
  auto partType = RankedTensorType::get(padded, et);
  if (attr.isSplat() && padded == sizes)
    return DenseElementsAttr::get(partType, attr.getSplatValue<Attribute>());
  if (type.getRank() != 2 || !et.isIntOrFloat() || et.getIntOrFloatBitWidth() % 8 != 0)
    return nullptr;
  int64_t bytes = et.getIntOrFloatBitWidth() / 8, columns = type.getDimSize(1);
  ArrayRef<char> raw = attr.getRawData();
  // All-zero bytes are zero in every integer and float type.
  std::vector<char> part(padded[0] * padded[1] * bytes, 0);
  for (int64_t row = 0; row < sizes[0]; ++row) {
    char *to = &part[row * padded[1] * bytes];
    if (!attr.isSplat()) {
      // (A row's block at once: a weight of 512 x 784 is 400K elements.)
      std::memcpy(to, raw.data() + ((offsets[0] + row) * columns + offsets[1]) * bytes,
                  sizes[1] * bytes);
      continue;
    }
    for (int64_t column = 0; column < sizes[1]; ++column)
      std::memcpy(to + column * bytes, raw.data(), bytes);
  }
  return DenseElementsAttr::getFromRawBuffer(partType, part);
}

int64_t Scheduler::tileReductionBlock(linalg::LinalgOp op) const {
  ArrayRef<int64_t> block = cacheBlockOf(op);
  Type et = getElementTypeOrSelf(op.getDpsInputOperand(0)->get().getType());
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  if (strategy.cacheTileGiven || !et.isBF16() || ranges.size() != 3 ||
      llvm::any_of(ranges, ShapedType::isDynamic))
    return 4 * block[2];
  // While the columns' strip of C that the reduction blocks load and store
  // takes at most a quarter of the L2 (the MLP at batch 256: 256 x 256 x 4
  // bytes), blocks of 256 steps: 32 rows of A and a panel of B, 16 KiB
  // each, stay in L1 across the block's tiles. One core of a Xeon with AMX:
  // the same tile loops written in C, 256 x 512 x 768, 1.2 -> 1.5 TFLOP/s;
  // the bf16 MLP at batch 256 0.47 -> 0.43 ms (two threads 0.40 -> 0.35);
  // bf16 sgemm 1024 (a 1 MiB strip) was 6% slower in blocks of 256.
  int64_t stripBytes = ranges[0] * std::min(ranges[1], block[1]) * 4;
  return stripBytes <= strategy.l2Bytes / 4 ? kShallowTileReduction : 4 * block[2];
}

void Scheduler::splitReductionsForTiles(IRRewriter &rewriter, ArrayRef<linalg::LinalgOp> ops) {
  for (linalg::LinalgOp op : ops) {
    auto matmul = dyn_cast<linalg::MatmulOp>(op.getOperation());
    if (!matmul || !matmul.hasPureTensorSemantics() || hasKernel(op, CpuKernel::MatrixVector))
      continue;
    Value a = matmul.getDpsInputOperand(0)->get(), b = matmul.getDpsInputOperand(1)->get();
    Type et = getElementTypeOrSelf(a.getType());
    SmallVector<int64_t> ranges = op.getStaticLoopRanges();
    if (!strategy.registers.tilesFor(et) || getElementTypeOrSelf(b.getType()) != et ||
        ShapedType::isDynamicShape(ranges) || !isa<RankedTensorType>(a.getType()))
      continue;
    // A step of tiles is 64 bytes of each row of A.
    int64_t step = amxStepElements(et);
    int64_t m = ranges[0], n = ranges[1], k = ranges[2], whole = k - k % step;
    // (Rows or columns of no whole tiles would keep the product off the
    // tiles anyway: the split would only add a pass over C.)
    if (whole == 0 || whole == k || m % kAmxTileRows != 0 || n % kAmxTileRows != 0)
      continue;
    // The product in two parts along the reduction, the second into the
    // first's result: [from, from + size), padded with zeros to `padded`.
    // The rest of the reduction (784 = 24 x 32 + 16 in bf16) is padded to
    // one whole step, so that it too runs on tiles: zero rows of B add
    // nothing (and A's row sums of an int8 product are not read). Left to
    // vector registers, the bf16 MLP's 16 deep rest took a fifth of its
    // first layer.
    struct Part {
      int64_t from, size, padded;
    };
    Part parts[] = {{0, whole, whole}, {whole, k - whole, step}};
    Location loc = op.getLoc();
    rewriter.setInsertionPoint(op);
    auto slice = [&](Value source, ArrayRef<int64_t> offsets, ArrayRef<int64_t> sizes,
                     ArrayRef<int64_t> padded) -> Value {
      // A constant operand becomes the constant part (packed when compiling).
      if (auto constant = source.getDefiningOp<arith::ConstantOp>())
        if (auto attr = dyn_cast<DenseElementsAttr>(constant.getValue()))
          if (DenseElementsAttr part = sliceOfMatrix(attr, offsets, sizes, padded))
            return arith::ConstantOp::create(rewriter, loc, part);
      Value part = tensor::ExtractSliceOp::create(
          rewriter, loc, source, getAsIndexOpFoldResult(ctx, offsets),
          getAsIndexOpFoldResult(ctx, sizes), getAsIndexOpFoldResult(ctx, {1, 1}));
      if (padded == sizes)
        return part;
      Value zero =
          arith::ConstantOp::create(rewriter, loc, cast<TypedAttr>(rewriter.getZeroAttr(et)));
      return tensor::createPadHighOp(RankedTensorType::get(padded, et), part, zero,
                                     /*nofold=*/false, loc, rewriter);
    };
    // B's reduction rows [from, from + size), padded to `padded` rows: of W
    // [n][k] before its transpose when B is one.
    auto bRows = [&](int64_t from, int64_t size, int64_t padded) -> Value {
      auto transpose = b.getDefiningOp<linalg::TransposeOp>();
      if (!transpose || !transpose.hasPureTensorSemantics() ||
          transpose.getPermutation() != ArrayRef<int64_t>{1, 0})
        return slice(b, {from, 0}, {size, n}, {padded, n});
      Value w = slice(transpose.getInput(), {0, from}, {n, size}, {n, padded});
      Value empty = tensor::EmptyOp::create(rewriter, loc, ArrayRef<int64_t>{padded, n}, et);
      return linalg::TransposeOp::create(rewriter, loc, w, empty, ArrayRef<int64_t>{1, 0})
          .getResult()[0];
    };
    Value c = matmul.getDpsInitOperand(0)->get();
    for (const Part &part : parts)
      c = linalg::MatmulOp::create(
              rewriter, loc, TypeRange{c.getType()},
              ValueRange{slice(a, {0, part.from}, {m, part.size}, {m, part.padded}),
                         bRows(part.from, part.size, part.padded)},
              ValueRange{c})
              .getResult(0);
    rewriter.replaceOp(op, c);
  }
}

SmallVector<linalg::LinalgOp> Scheduler::collectTensorOps(ModuleOp module) {
  SmallVector<linalg::LinalgOp> ops;
  module.walk([&](linalg::LinalgOp op) {
    if (op.hasPureTensorSemantics() && op.getNumLoops() > 0)
      ops.push_back(op);
  });
  return ops;
}

/// The tile levels of a convolution's weight gradient (loops f, c, kh, kw,
/// lane, n, block, and the pair of images in bf16): first channel tiles
/// over a few images, whose rows of input and output gradient then stay in
/// L1 while all kernel positions (the second level) read them; then the
/// reductions. Without the image chunks every kernel position streams all
/// images from L2.
SmallVector<SmallVector<int64_t>> Scheduler::weightGradLevels(linalg::LinalgOp op,
                                                              ArrayRef<int64_t> parallel,
                                                              ArrayRef<int64_t> reduction) {
  SmallVector<int64_t> outer(parallel.begin(), parallel.end()), kernel(parallel.size(), 0);
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  if ((ranges.size() != 7 && ranges.size() != 8) || llvm::any_of(ranges, ShapedType::isDynamic))
    return {SmallVector<int64_t>(parallel), SmallVector<int64_t>(reduction)};
  std::swap(outer[2], kernel[2]);
  std::swap(outer[3], kernel[3]);
  // Bytes of one image's (or pair's) rows that a channel tile reads: input
  // rows (the flat input's dimensions after the channel) and output-gradient
  // rows (blocks x lanes, x 2 images).
  auto operandType = [&](unsigned i) { return cast<ShapedType>(op->getOperand(i).getType()); };
  int64_t bytes = operandType(0).getElementTypeBitWidth() / 8;
  int64_t pair = ranges.size() == 8 ? ranges[7] : 1;
  int64_t inputRow = 1;
  for (int64_t size : operandType(0).getShape().drop_front(2))
    inputRow *= size;
  int64_t channels = std::max<int64_t>(parallel[0], 1) + std::max<int64_t>(parallel[1], 1);
  int64_t perImage = channels * (inputRow + ranges[6] * ranges[4] * pair) * bytes / 2;
  int64_t images = std::max<int64_t>(1, (16 << 10) / std::max<int64_t>(perImage, 1));
  outer[5] = std::min(images, ranges[5]);
  SmallVector<int64_t> outerSizes = outer;
  fitTilesToLoops(outerSizes, ranges, /*tileDynamic=*/false);
  if (outer[5] < ranges[5] && outerSizes[5] == 0)
    outerSizes[5] = 1;
  return {outerSizes, kernel, SmallVector<int64_t>(reduction)};
}

/// Whether `op` is a packed product of bf16 pairs on vdpbf16ps, not on AMX
/// tiles (loops m, panel, column, k / 2, pair; packDotProductGroups).
static bool pairProductTile(linalg::LinalgOp op, const RegisterFile &regs) {
  return kernelOf(op) == CpuKernel::PackedMatmul && op.getNumLoops() == 5 &&
         op.getNumDpsInputs() == 2 &&
         getElementTypeOrSelf(op.getDpsInputOperand(0)->get().getType()).isBF16() &&
         !cpu::onAmxTiles(op, regs);
}

/// Tiles every op to its config's register tile. A convolution is
/// tiled in two levels: its parallel loops, then the reductions of the
/// tile, whose loops then carry just the tile's accumulator (and hoisting
/// keeps it in registers).
/// The fill that gives a convolution its zero accumulator (or a pooling its
/// -inf), when nothing else reads it: tiled with the op's output tiles, each
/// tile starts from the value in registers instead of reading back a filled
/// buffer (the bench CNN's first convolution wrote and read 1.8 MB of zeros
/// a call).
static linalg::FillOp fusibleAccumulatorFill(linalg::LinalgOp op, const RegisterFile &regs) {
  CpuKernel kernel = kernelOf(op);
  // (A batch of packed products, Winograd's in bf16, too: its accumulators
  // start at zero in registers rather than from a 3 MiB fill.)
  // (And a packed product whose block has a fill of its own:
  // tileWithEpilogue's.)
  // (And bf16 pair products, their fill on the panels: packDotProductGroups.)
  bool packedProducts =
      kernel == CpuKernel::PackedMatmul &&
      (op.getNumLoops() == 6 || op.getNumLoops() == 4 || pairProductTile(op, regs));
  bool batchMatmul = isa<linalg::BatchMatmulOp>(op.getOperation());
  if (kernel != CpuKernel::ConvFlat && kernel != CpuKernel::ConvSpatial &&
      kernel != CpuKernel::ConvChannelsLast && kernel != CpuKernel::TileConv &&
      kernel != CpuKernel::PoolWindow && kernel != CpuKernel::WindowReduction && !packedProducts &&
      !batchMatmul)
    return nullptr;
  if (op.getNumDpsInits() != 1)
    return nullptr;
  auto fill = op.getDpsInitOperand(0)->get().getDefiningOp<linalg::FillOp>();
  return fill && fill->hasOneUse() ? fill : nullptr;
}

SmallVector<SmallVector<int64_t>> Scheduler::registerTileLevels(linalg::LinalgOp op) const {
  SmallVector<int64_t> sizes = cpu::configuredRegisterTile(op, strategy.registers);
  fitTilesToLoops(sizes, op.getStaticLoopRanges(), /*tileDynamic=*/true);
  SmallVector<SmallVector<int64_t>> levels = {sizes};
  // (A batch matmul too: in one level, its accumulator was read and written
  // back at every reduction step. And bf16 pair products, whose fill then
  // fuses into the parallel level: the same loops.)
  if (isConvolutionTile(op) || isa<linalg::BatchMatmulOp>(op.getOperation()) ||
      pairProductTile(op, strategy.registers)) {
    SmallVector<int64_t> parallel = sizes, reduction(sizes.size(), 0);
    for (auto [i, it] : llvm::enumerate(op.getIteratorTypesArray()))
      if (it == utils::IteratorType::reduction)
        std::swap(parallel[i], reduction[i]);
    levels = {parallel, reduction};
    if (hasKernel(op, CpuKernel::ConvFlatWeightGrad))
      levels = weightGradLevels(op, parallel, reduction);
  }
  llvm::erase_if(levels, [](ArrayRef<int64_t> level) {
    return llvm::all_of(level, [](int64_t size) { return size == 0; });
  });
  return levels;
}

LogicalResult Scheduler::tileForRegisters(IRRewriter &rewriter, ArrayRef<linalg::LinalgOp> ops) {
  // The fills fused into their convolution's first level of tiles: only a
  // level of output tiles (no reduction loop tiled) may start each tile from
  // zeros.
  llvm::DenseMap<Operation *, linalg::FillOp> fillOf;
  llvm::DenseSet<Operation *> fusedFills;
  for (linalg::LinalgOp op : ops) {
    linalg::FillOp fill = fusibleAccumulatorFill(op, strategy.registers);
    if (!fill)
      continue;
    // A batch of products on AMX tiles, or a tile convolution, starts its
    // accumulator tiles with tilezero instead (mithril-x86-tile-matmuls).
    bool onTiles = (op.getNumLoops() == 6 && hasKernel(op, CpuKernel::PackedMatmul) &&
                    cpu::onAmxTiles(op, strategy.registers)) ||
                   hasKernel(op, CpuKernel::TileConv);
    if (onTiles && matchPattern(fill.value(), m_AnyZeroFloat())) {
      op->setAttr(cpu::kZeroAccumulatorAttr, rewriter.getUnitAttr());
      op.getDpsInitOperand(0)->set(fill.getDpsInitOperand(0)->get());
      fusedFills.insert(fill);
      rewriter.eraseOp(fill);
      continue;
    }
    SmallVector<SmallVector<int64_t>> levels = registerTileLevels(op);
    SmallVector<unsigned> reductions;
    op.getReductionDims(reductions);
    if (levels.empty() ||
        llvm::any_of(reductions, [&](unsigned loop) { return levels.front()[loop] != 0; }))
      continue;
    fillOf[op] = fill;
    fusedFills.insert(fill);
  }
  for (linalg::LinalgOp op : ops) {
    // (Erased by then: compared, never read.)
    if (fusedFills.contains(op.getOperation()))
      continue;
    if (LoweringConfigAttr config = getLoweringConfig(op); config && config.getWhole())
      continue;
    Operation *current = op;
    for (auto [index, level] : llvm::enumerate(registerTileLevels(op))) {
      scf::SCFTilingOptions options;
      options.setTileSizes(getAsIndexOpFoldResult(ctx, level));
      if (hasKernel(current, CpuKernel::MatrixVector))
        options.setInterchange(gemvInterchange(cast<linalg::LinalgOp>(current)));
      // Panels outermost (after a batch): one packed panel serves every row
      // tile in turn. (Rows outermost where the packing says so.)
      if (hasKernel(current, CpuKernel::PackedMatmul))
        options.setInterchange(
            cast<linalg::LinalgOp>(current).getNumLoops() == 6 ? SmallVector<int64_t>{0, 2, 1, 3}
            : current->hasAttr(kRowTilesOuterAttr)             ? SmallVector<int64_t>{0, 1, 2, 3}
                                                               : SmallVector<int64_t>{1, 0, 2, 3});
      if (linalg::FillOp fill = fillOf.lookup(op); fill && index == 0) {
        scf::SCFTileAndFuseOptions fuseOptions;
        fuseOptions.tilingOptions = options;
        FailureOr<scf::SCFTileAndFuseResult> fused =
            tileAndFuse(rewriter, current, fuseOptions, {fill.getOperation()});
        if (failed(fused))
          return current->emitError("mithril-cpu-schedule: cannot tile this op");
        current = fused->tiledAndFusedOps.front();
        rewriter.eraseOp(op);
        if (fill->use_empty())
          rewriter.eraseOp(fill);
        continue;
      }
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

void Scheduler::splitTileRemainders(IRRewriter &rewriter, ArrayRef<linalg::LinalgOp> ops) {
  for (linalg::LinalgOp op : ops) {
    // Flat convolutions, loops (n, f, position, c, kh, kw), float32 and
    // float64 alike; batch matmuls, loops (b, m, n, k).
    bool flat = hasKernel(op, CpuKernel::ConvFlat) && op.getNumLoops() == 6;
    bool batch = isa<linalg::BatchMatmulOp>(op.getOperation()) && op.getNumLoops() == 4;
    if ((!flat && !batch) || op.getNumDpsInits() != 1)
      continue;
    LoweringConfigAttr config = getLoweringConfig(op);
    if (!config || config.getWhole())
      continue;
    SmallVector<int64_t> tile = cpu::registerTile(op, strategy.registers);
    SmallVector<int64_t> ranges = op.getStaticLoopRanges();
    // The splits (loop, at, only), each applied to every part of the ones
    // before (or, with `only`, to the parts that many iterations long in
    // that loop), and the outer tiles they happen in.
    SmallVector<std::tuple<unsigned, int64_t, int64_t>> splits;
    SmallVector<int64_t> outer(ranges.size(), 0);
    outer[0] = 1;
    if (flat) {
      // fitTilesToLoops would narrow every tile to the one vector that
      // divides the positions: 8 accumulators, each step waiting on the
      // FMA latency. (The bench CNN's Winograd products, 784 columns, on
      // one core of a Xeon with AVX-512: 0.44 -> 0.39 ms a call.)
      int64_t columns = tile[2], positions = ranges[2];
      if (ShapedType::isDynamic(positions) || columns < 2 || positions <= columns ||
          positions % columns == 0 || positions % (columns / 2) != 0)
        continue;
      splits.push_back({2, positions - positions % columns, 0});
      // Inside the loops over images and blocks of output channels, so that
      // the last vector's tile reads the rows the others have just brought
      // into the cache (split outside them, it took 0.03 ms, a tenth of the
      // products' time for a fiftieth of their work).
      outer[1] = tile[1];
    } else {
      // Rows and columns no register tile divides (Winograd's 169 tiles of
      // a 26 x 26 image, 8 rows at a time; 20 output channels, 16 at a
      // time): otherwise every tile would shrink to a divisor, one row.
      for (unsigned loop : {1u, 2u}) {
        int64_t size = tile[loop], range = ranges[loop];
        if (ShapedType::isDynamic(range) || size <= 0 || range % size == 0)
          continue;
        if (range > size)
          splits.push_back({loop, range - range % size, 0});
        // Columns left over that are more than one vector and not whole
        // vectors (28 in 16-lane vectors): whole vectors, then one partial
        // vector, as peelMatmulRemainders splits a matmul's (as 28-lane rows
        // 8 x 128 x 256 x 28 ran at 5 GFLOP/s, AVX2's 12 columns at 7).
        int64_t rest = range % size, lanes = strategy.registers.vectorColumns(op);
        if (loop == 2 && rest > lanes && rest % lanes != 0)
          splits.push_back({loop, rest - rest % lanes, rest});
      }
    }
    if (splits.empty())
      continue;
    fitTilesToLoops(outer, ranges, /*tileDynamic=*/false);
    // The zero fill moves to the parts: a fill read by one op fuses into
    // its register tiles (fusibleAccumulatorFill) instead of writing the
    // whole output first.
    linalg::FillOp fill = detachAccumulatorFill(op);
    scf::SCFTilingOptions options;
    options.setTileSizes(getAsIndexOpFoldResult(rewriter.getContext(), outer));
    rewriter.setInsertionPoint(op);
    FailureOr<scf::SCFTilingResult> tiled =
        scf::tileUsingSCF(rewriter, cast<TilingInterface>(op.getOperation()), options);
    if (failed(tiled)) {
      if (fill)
        op.getDpsInitOperand(0)->set(fill.getResult(0));
      continue;
    }
    rewriter.replaceOp(op, tiled->replacements);
    SmallVector<TilingInterface> parts = {cast<TilingInterface>(tiled->tiledOps.front())};
    for (auto [loop, at, only] : splits) {
      SmallVector<TilingInterface> next;
      for (TilingInterface part : parts) {
        if (only &&
            cast<linalg::LinalgOp>(part.getOperation()).getStaticLoopRanges()[loop] != only) {
          next.push_back(part);
          continue;
        }
        rewriter.setInsertionPoint(part);
        auto [whole, rest] = linalg::splitOp(rewriter, part, loop, rewriter.getIndexAttr(at));
        for (TilingInterface piece : {whole, rest})
          if (piece)
            next.push_back(piece);
      }
      parts = std::move(next);
    }
    for (TilingInterface part : parts)
      configureTile(part, flat ? CpuKernel::ConvFlat : CpuKernel::Matmul);
    fillEachPart(rewriter, fill, parts);
  }
}

/// Tiles `root` with `options`, fusing into its tiles the producers in
/// `fusible` (and only those), and points the uses of its results at the
/// tiled ones.
FailureOr<scf::SCFTileAndFuseResult>
Scheduler::tileAndFuse(IRRewriter &rewriter, Operation *root, scf::SCFTileAndFuseOptions options,
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

/// Tiles the float matmul `op`, whose reduction its cache block takes
/// whole, in blocks of `block` rows and columns together with its
/// element-wise `epilogue` (productEpilogue): per block, the product into a
/// block of its own, packed as tileForCache packs, then the epilogue of
/// that block. A weight gradient's SGD update (w - lr * dw) then reads dw
/// from L2 block by block, and the whole gradient is never written, nor
/// filled with zeros first (the MLP's training step at batch 64: 1.6 and 1
/// MiB a call, three passes over each). Without an epilogue (null), a
/// product with a fill of its own is tiled the same way, its register tiles
/// starting from the fill's value rather than from a pass that wrote it (a
/// weight gradient that is all-reduced before its update). False,
/// with the IR unchanged, where the pair does not tile; the ops it erases
/// go into `erased`.
bool Scheduler::tileWithEpilogue(IRRewriter &rewriter, linalg::LinalgOp op,
                                 linalg::GenericOp epilogue, ArrayRef<int64_t> block,
                                 llvm::DenseSet<Operation *> &erased) {
  llvm::DenseSet<Operation *> fusible;
  auto fill = op.getDpsInitOperand(0)->get().getDefiningOp<linalg::FillOp>();
  if (fill && fill->hasOneUse())
    fusible.insert(fill);
  else
    fill = nullptr;
  // Without an epilogue, only a fill to start from in registers is worth
  // the tiling: the product alone is tiled with it.
  if (!epilogue && !fill)
    return false;
  Operation *root = epilogue ? epilogue.getOperation() : op.getOperation();
  if (epilogue)
    fusible.insert(op);
  int64_t rows = op.getStaticLoopRanges()[0]; // (op is erased below)
  scf::SCFTileAndFuseOptions options;
  SmallVector<int64_t> sizes = {block[0], block[1]};
  // Column blocks outermost, as tileForCache's: the packed block of the
  // right operand serves every block of rows.
  SmallVector<int64_t> interchange = {1, 0};
  if (!epilogue) {
    sizes.push_back(0);
    interchange.push_back(2);
  }
  options.tilingOptions.setTileSizes(getAsIndexOpFoldResult(ctx, sizes));
  options.tilingOptions.setInterchange(interchange);
  FailureOr<scf::SCFTileAndFuseResult> tiled = tileAndFuse(rewriter, root, options, fusible);
  if (failed(tiled))
    return false;
  linalg::MatmulOp product;
  for (Operation *fused : tiled->tiledAndFusedOps)
    if (auto matmul = dyn_cast<linalg::MatmulOp>(fused))
      product = matmul;
  // The originals, consumers first.
  for (Operation *original : {epilogue.getOperation(), op.getOperation(), fill.getOperation()})
    if (original && original->use_empty()) {
      erased.insert(original);
      rewriter.eraseOp(original);
    }
  if (!product)
    return true;
  // (The packing is hoisted out of the row loop: it serves all the rows.)
  if (packRightOperand(rewriter, product, /*startsAtZero=*/false, /*fillUnneeded=*/nullptr,
                       /*rowsServed=*/rows)) {
    for (LoopLikeOpInterface loop : llvm::reverse(tiled->loops))
      moveLoopInvariantCode(loop);
  } else {
    splitRowRemainder(rewriter, cast<linalg::LinalgOp>(product.getOperation()));
  }
  return true;
}

/// The reduction block of a matmul blocked by `block` steps over `range`
/// (static): a divisor of the range (fitTilesToLoops), of whole 16-element
/// rows where one of at least 64 divides it (784 -> 112 rather than 196:
/// packing a transposed operand then moves 16 x 16 register blocks); 0 where
/// one block holds the whole range.
static int64_t fitReductionBlock(int64_t block, int64_t range) {
  SmallVector<int64_t, 1> size = {block};
  fitTilesToLoops(size, {range}, /*tileDynamic=*/false);
  if (size[0] % 16 != 0)
    for (int64_t k = block / 16 * 16; k >= 64; k -= 16)
      if (range % k == 0)
        return k;
  return size[0];
}

/// Whether `fill` writes zeros (+0.0 for floats) into a tensor that only
/// one op reads.
static bool isZeroFillOfOne(linalg::FillOp fill) {
  return fill && fill->hasOneUse() &&
         (matchPattern(fill.getInputs()[0], m_Zero()) ||
          matchPattern(fill.getInputs()[0], m_PosZeroFloat()));
}

/// Splits a matmul into a zero fill whose reduction is deeper than its
/// block into the first block and the rest, the rest accumulating into the
/// first's result; null where it does not apply. The first block, whole,
/// starts its accumulators at zero, where as one loop of blocks the fill
/// was a pass of its own over C, which the first block then read back. A
/// bf16 matmul on AMX tiles (tileReductionBlock) starts them with tilezero
/// (0.023 ms in the bf16 MLP at batch 256). A float32 or float64 one on
/// vector registers starts its register tiles from zero constants
/// (tileWithEpilogue): one Zen 4 core, paired in one process, AVX2 code:
/// sgemm 1024 1.7% faster, sgemm 512 2.2%, dgemm 512 2.5%, dgemm 1024 1.3%,
/// sgemm 1024 on two threads 1.2%; AVX-512 code: dgemm 1024 2.7%, sgemm 1024
/// level. Done per thread's share, so that both parts run in one parallel
/// region.
linalg::MatmulOp Scheduler::splitFirstTileBlock(IRRewriter &rewriter, linalg::LinalgOp op) {
  auto matmul = dyn_cast<linalg::MatmulOp>(op.getOperation());
  Type et = getElementTypeOrSelf(op.getDpsInputOperand(0)->get().getType());
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  if (!matmul || !matmul.hasPureTensorSemantics() || ranges.size() != 3 ||
      llvm::any_of(ranges, ShapedType::isDynamic))
    return nullptr;
  bool onTiles = et.isBF16() && strategy.registers.tilesFor(et);
  // (Not fewer rows than a register tile's: their few accumulators stay in
  // L1, blocks of 8 steps, matmulCacheTile.)
  bool onVectors = isa<Float32Type, Float64Type>(et) &&
                   ranges[0] >= strategy.registers.matmulRows(op) &&
                   getElementTypeOrSelf(op.getDpsInputOperand(1)->get().getType()) == et &&
                   getElementTypeOrSelf(op->getResult(0).getType()) == et;
  if (!onTiles && !onVectors)
    return nullptr;
  int64_t k = ranges[2];
  // (On vectors, the block tileForCache takes: the rest's are whole blocks.)
  int64_t block = onTiles ? tileReductionBlock(op) : fitReductionBlock(cacheBlockOf(op)[2], k);
  auto fill = op.getDpsInitOperand(0)->get().getDefiningOp<linalg::FillOp>();
  if (block <= 0 || block >= k || (onTiles && block % amxStepElements(et) != 0) ||
      !isZeroFillOfOne(fill))
    return nullptr;
  Location loc = op.getLoc();
  rewriter.setInsertionPoint(op);
  Value a = op.getDpsInputOperand(0)->get(), b = op.getDpsInputOperand(1)->get();
  int64_t m = ranges[0], n = ranges[1];
  auto slice = [&](Value source, ArrayRef<int64_t> offsets, ArrayRef<int64_t> sizes) -> Value {
    return tensor::ExtractSliceOp::create(
        rewriter, loc, source, getAsIndexOpFoldResult(ctx, offsets),
        getAsIndexOpFoldResult(ctx, sizes), getAsIndexOpFoldResult(ctx, {1, 1}));
  };
  Type resultType = op->getResult(0).getType();
  auto first = linalg::MatmulOp::create(
      rewriter, loc, TypeRange{resultType},
      ValueRange{slice(a, {0, 0}, {m, block}), slice(b, {0, 0}, {block, n})},
      ValueRange{fill.getResult(0)});
  auto rest = linalg::MatmulOp::create(
      rewriter, loc, TypeRange{resultType},
      ValueRange{slice(a, {0, block}, {m, k - block}), slice(b, {block, 0}, {k - block, n})},
      ValueRange{first.getResult(0)});
  LoweringConfigAttr config = getLoweringConfig(op);
  if (onVectors) {
    // The rest keeps the block: its own would fit its shorter reduction
    // (672 of 784 steps in blocks of 224 rather than 112).
    SmallVector<int64_t> cacheBlock(cacheBlockOf(op));
    cacheBlock[2] = block;
    config =
        (config ? config : LoweringConfigAttr::get(ctx, kernelOf(op))).withCacheTile(cacheBlock);
  }
  if (config) {
    setLoweringConfig(first, config);
    setLoweringConfig(rest, config);
  }
  rewriter.replaceOp(op, rest.getResults());
  return first;
}

/// Tiles matmuls larger than a cache block into blocks of their config's
/// cache tile (rows, columns, reduction): the register tiles then reuse a
/// block of the right operand from L2 instead of streaming it from memory.
LogicalResult Scheduler::tileForCache(IRRewriter &rewriter, ArrayRef<linalg::LinalgOp> ops) {
  SmallVector<linalg::LinalgOp> work(ops.rbegin(), ops.rend());
  // Epilogues tiled with their products (and the products): erased.
  llvm::DenseSet<Operation *> erased;
  while (!work.empty()) {
    linalg::LinalgOp op = work.pop_back_val();
    if (erased.contains(op.getOperation()) || !isa<linalg::MatmulOp>(op.getOperation()))
      continue;
    if (linalg::MatmulOp first = splitFirstTileBlock(rewriter, op)) {
      // (The rest is the first's only user.) New ops may take the address
      // of one erased before: not erased.
      Operation *rest = *first->getUsers().begin();
      for (Operation *part : {rest, first.getOperation()}) {
        erased.erase(part);
        work.push_back(cast<linalg::LinalgOp>(part));
      }
      continue;
    }
    SmallVector<int64_t> block(cacheBlockOf(op));
    // The block's reduction is counted in f32 elements: 8-bit operands take
    // one 4 times as long in the same bytes (an int8 784-input Linear layer
    // at batch 256 then takes its offset sums off the output once, not 7
    // times: 1.4 -> 1.1 ms for the MLP on Zen 4). 16-bit ones measured no
    // better on vector registers; on AMX tiles they do, as every block loads
    // and stores its accumulator tiles once (bf16 sgemm 2048 on Emerald
    // Rapids: 425 -> 515 GFLOP/s with blocks of 1024 steps, not 256).
    Type inputType = getElementTypeOrSelf(op.getDpsInputOperand(0)->get().getType());
    bool int8 = inputType.isInteger(8);
    if (strategy.registers.tilesFor(inputType))
      block[2] = tileReductionBlock(op);
    else if (int8)
      block[2] *= 4;
    SmallVector<int64_t> sizes = block;
    SmallVector<int64_t> ranges = op.getStaticLoopRanges();
    fitTilesToLoops(sizes, ranges, /*tileDynamic=*/false);
    // Row blocks of whole register tiles (1000 rows: 40, not 125, which
    // would leave tiles of 5 rows).
    int64_t rows = strategy.registers.matmulRows(op);
    if (sizes[0] % rows != 0 && !ShapedType::isDynamic(ranges[0]) && ranges[0] % rows == 0)
      for (int64_t m = block[0] / rows * rows; m >= rows; m -= rows)
        if (ranges[0] % m == 0) {
          sizes[0] = m;
          break;
        }
    // Rows no tile divides (256 in 6-row tiles) split once per block of rows
    // (splitRowRemainder): up to two blocks' worth stay one block, so that
    // one remainder is left rather than one per block.
    if (!ShapedType::isDynamic(ranges[0]) && ranges[0] % rows != 0 && ranges[0] <= 2 * block[0])
      sizes[0] = 0;
    if (!ShapedType::isDynamic(ranges[2]))
      sizes[2] = fitReductionBlock(block[2], ranges[2]);
    // So do register tiles rows outermost, whatever their rows: blocks of
    // rows would only leave a rest in each (a 6-row tile sweeps every panel
    // of the packed block with its rows of A in L1, so more rows in a block
    // do not push A out of L2). Their rest reads the packed block too,
    // within each thread's share: split off before the blocks (1024 = 1020
    // + 4 rows), it read B as stored, on one thread (1.9% of sgemm 1024 on
    // two). AVX2 code, a Zen 4, paired in one process: sgemm 1024 +0.2-1.6%
    // on one thread, +1.1-1.7% on two; sgemm 1000 +0.3-2% on one and two.
    if (!llvm::any_of(ranges, ShapedType::isDynamic) && ranges[0] % rows != 0 &&
        (sizes[1] != 0 || sizes[2] != 0) &&
        takesRowTilesOuter(inputType, getElementTypeOrSelf(op->getResult(0).getType()), ranges[0],
                           sizes[1] ? sizes[1] : ranges[1], sizes[2] ? sizes[2] : ranges[2],
                           strategy))
      sizes[0] = 0;
    // An 8-bit product whose reduction stays whole, into a zero fill that
    // nothing else reads, writes its first values instead of adding them to
    // zeros: the fill goes (on two threads it was a straight run of a
    // thousand stores that LLVM's schedulers took 0.5 s each to order).
    // So does a bf16 product on AMX tiles, which starts its accumulator tiles
    // at zero instead of loading them, and one on vdpbf16ps pairs, whose
    // register tiles start from a zero fill of their block's panels
    // (packDotProductGroups). Zen 5, the bf16 MLP at batch 256 with its
    // weights passed: 0.656 -> 0.640 ms on one core, 0.412 -> 0.378 on two.
    auto fill = op.getDpsInitOperand(0)->get().getDefiningOp<linalg::FillOp>();
    bool startsAtZero = (int8 || strategy.registers.tilesFor(inputType) ||
                         (inputType.isBF16() && strategy.registers.bf16DotProduct)) &&
                        sizes[2] == 0 && isZeroFillOfOne(fill);
    bool fillUnneeded = false;
    // (An 8-bit block packs only for its dot products, which then write
    // every element of C.)
    auto dropFill = [&] {
      rewriter.replaceAllUsesWith(fill.getResult(0), fill.getOutputs()[0]);
      rewriter.eraseOp(fill);
    };
    if (llvm::all_of(sizes, [](int64_t size) { return size == 0; })) {
      // One block: a product on dot products or tiles is still packed, as
      // those kernels read packed pairs and quads. So is a float one on
      // registers narrower than 512 bits, whose B is not a transposed
      // weight: AVX2's 6 x 8 float64 tiles read a line of B a step, rows 2
      // KiB apart at 256 columns, 8 of L1's 64 sets for all of them. One Zen
      // 4 core, alternated launches, AVX2 code: dgemm 256 0.688 -> 0.611 ms
      // (two threads 0.357 -> 0.298), sgemm 256 0.308 -> 0.298, dgemm 200
      // 0.296 -> 0.293; AVX-512 code level or 1% slower (dgemm 128), and the
      // bench GPT's transposed weights 1-3% slower on AVX2, so those read B
      // as it is.
      bool dotProducts = int8 || (inputType.isBF16() && strategy.registers.bf16DotProduct);
      bool narrowFloat = strategy.registers.bits < 512 &&
                         isa<Float32Type, Float64Type>(inputType) &&
                         !op.getDpsInputOperand(1)->get().getDefiningOp<linalg::TransposeOp>();
      if (dotProducts || narrowFloat) {
        bool packed = packRightOperand(rewriter, cast<linalg::MatmulOp>(op.getOperation()),
                                       startsAtZero, &fillUnneeded);
        if (packed && fillUnneeded)
          dropFill();
        if (!packed && !dotProducts)
          splitRowRemainder(rewriter, op);
      } else {
        // Rows kept whole for packing (packsRowsTogether) that fit one block.
        splitRowRemainder(rewriter, op);
      }
      continue;
    }
    if (sizes[2] == 0 && isa<Float32Type, Float64Type>(inputType) &&
        tileWithEpilogue(rewriter, op, productEpilogue(op), sizes, erased))
      continue;
    scf::SCFTilingOptions options;
    options.setTileSizes(getAsIndexOpFoldResult(ctx, sizes));
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
    if (tiledBlock &&
        packRightOperand(rewriter, tiledBlock, startsAtZero, &fillUnneeded, ranges[0])) {
      // The packing depends on the column and reduction blocks only: out of
      // the row loop, so that each packed block serves every row block.
      for (LoopLikeOpInterface loop : llvm::reverse(tiled->loops))
        moveLoopInvariantCode(loop);
      if (fillUnneeded)
        dropFill();
    } else if (tiledBlock) {
      // Not packed after all: the rows its tiles do not divide, apart.
      splitRowRemainder(rewriter, cast<linalg::LinalgOp>(tiledBlock.getOperation()));
    }
  }
  return success();
}

/// Partial values of a reduction to one value: 8 registers of 16 f32.
constexpr int64_t kFullReductionLanes = 128;

LogicalResult Scheduler::splitFullReductions(IRRewriter &rewriter, ArrayRef<linalg::LinalgOp> ops) {
  SmallVector<linalg::GenericOp> partials;
  for (linalg::LinalgOp op : ops) {
    auto generic = dyn_cast<linalg::GenericOp>(op.getOperation());
    if (!generic || !generic.hasPureTensorSemantics() || generic.getNumParallelLoops() != 0 ||
        generic.getNumLoops() == 0 || generic.getNumDpsInits() != 1 ||
        cast<RankedTensorType>(generic->getResult(0).getType()).getRank() != 0)
      continue;
    SmallVector<int64_t> ranges = generic.getStaticLoopRanges();
    if (llvm::any_of(ranges, ShapedType::isDynamic))
      continue;
    int64_t total = 1;
    for (int64_t r : ranges)
      total *= r;
    if (total % kFullReductionLanes != 0 || total < 8 * kFullReductionLanes)
      continue;
    // Every input read whole, in order: it can be viewed flat.
    if (!llvm::all_of(generic.getDpsInputOperands(), [&](OpOperand *input) {
          return generic.getMatchingIndexingMap(input).isIdentity();
        }))
      continue;
    Location loc = generic.getLoc();
    rewriter.setInsertionPoint(generic);
    linalg::GenericOp flat = generic;
    if (generic.getNumLoops() > 1) {
      ReassociationIndices all;
      for (int64_t d = 0; d < int64_t(ranges.size()); ++d)
        all.push_back(d);
      SmallVector<Value> inputs;
      for (OpOperand *input : generic.getDpsInputOperands())
        inputs.push_back(tensor::CollapseShapeOp::create(rewriter, loc, input->get(),
                                                         SmallVector<ReassociationIndices>{all}));
      AffineMap identity = AffineMap::getMultiDimIdentityMap(1, ctx);
      SmallVector<AffineMap> maps(inputs.size(), identity);
      maps.push_back(AffineMap::get(1, 0, {}, ctx));
      flat = linalg::GenericOp::create(
          rewriter, loc, generic->getResultTypes(), inputs, generic.getDpsInits(), maps,
          SmallVector<utils::IteratorType>{utils::IteratorType::reduction});
      rewriter.inlineRegionBefore(generic.getRegion(), flat.getRegion(), flat.getRegion().end());
      flat->setDiscardableAttrs(generic->getDiscardableAttrDictionary());
      rewriter.replaceOp(generic, flat->getResults());
    }
    // On several threads, first a contiguous chunk of the input per thread,
    // the rows the threads of an op before it wrote each (a reduction of one
    // thread's lanes by rows read the other thread's half of every row). The
    // int8 MLP's activation ranges ran on one thread, 20-30 us each at batch
    // 256.
    unsigned threads = strategy.threads;
    unsigned laneIndex = 0;
    if (threads > 1 && total % (threads * kFullReductionLanes) == 0 &&
        total >= strategy.minParallelWork / cpu::kElementwiseWorkDivisor) {
      rewriter.setInsertionPoint(flat);
      FailureOr<linalg::SplitReductionResult> chunks = linalg::splitReduction(
          rewriter, cast<linalg::LinalgOp>(flat.getOperation()), [&](linalg::LinalgOp) {
            return linalg::SplitReductionOptions{threads, /*index=*/0, /*innerParallel=*/false};
          });
      if (succeeded(chunks)) {
        chunks->resultCombiningLinalgOp->removeAttr(LoweringConfigAttr::opAttrName);
        flat = cast<linalg::GenericOp>(chunks->splitLinalgOp.getOperation());
        laneIndex = 1;
      }
    }
    rewriter.setInsertionPoint(flat);
    FailureOr<linalg::SplitReductionResult> split = linalg::splitReduction(
        rewriter, cast<linalg::LinalgOp>(flat.getOperation()), [&](linalg::LinalgOp) {
          return linalg::SplitReductionOptions{kFullReductionLanes, laneIndex,
                                               /*innerParallel=*/true};
        });
    // A body whose combiner has no neutral value (splitReduction's test)
    // stays as it was, still correct.
    if (failed(split))
      continue;
    for (Operation *part :
         {split->splitLinalgOp.getOperation(), split->resultCombiningLinalgOp.getOperation()})
      part->removeAttr(LoweringConfigAttr::opAttrName);
    if (auto partial = dyn_cast<linalg::GenericOp>(split->splitLinalgOp.getOperation()))
      partials.push_back(partial);
  }
  mergeSiblingPartials(rewriter, partials);
  return success();
}

/// The tensor `v` reads, looking through reshapes of it.
static Value reshapedSource(Value v) {
  while (true) {
    if (auto expand = v.getDefiningOp<tensor::ExpandShapeOp>())
      v = expand.getSrc();
    else if (auto collapse = v.getDefiningOp<tensor::CollapseShapeOp>())
      v = collapse.getSrc();
    else
      return v;
  }
}

/// Whether partial reductions `a` and `b` read equal inputs (the same
/// tensor, in the same shape) in the same loops, each into a fill of a
/// constant into an empty tensor.
static bool areSiblingPartials(linalg::GenericOp a, linalg::GenericOp b) {
  if (a == b || a->getBlock() != b->getBlock() || a.getNumDpsInputs() != 1 ||
      b.getNumDpsInputs() != 1 || a.getNumDpsInits() != 1 || b.getNumDpsInits() != 1 ||
      a.getIndexingMapsArray() != b.getIndexingMapsArray() ||
      a.getIteratorTypesArray() != b.getIteratorTypesArray())
    return false;
  Value inA = a.getDpsInputOperand(0)->get(), inB = b.getDpsInputOperand(0)->get();
  if (inA.getType() != inB.getType() || reshapedSource(inA) != reshapedSource(inB))
    return false;
  for (linalg::GenericOp op : {a, b}) {
    auto fill = op.getDpsInitOperand(0)->get().getDefiningOp<linalg::FillOp>();
    if (!fill || !fill.getInputs()[0].getDefiningOp<arith::ConstantOp>() ||
        !fill.getOutputs()[0].getDefiningOp<tensor::EmptyOp>())
      return false;
  }
  // The merged op takes the earlier one's place: the values the later one's
  // body reads from outside must already be there.
  linalg::GenericOp earlier = a->isBeforeInBlock(b) ? a : b, later = a == earlier ? b : a;
  DominanceInfo dominance;
  WalkResult captures = later.getRegion().walk([&](Operation *inner) {
    for (Value operand : inner->getOperands())
      if (!later.getRegion().isAncestor(operand.getParentRegion()) &&
          !dominance.properlyDominates(operand, earlier))
        return WalkResult::interrupt();
    return WalkResult::advance();
  });
  return !captures.wasInterrupted();
}

void Scheduler::mergeSiblingPartials(IRRewriter &rewriter, ArrayRef<linalg::GenericOp> partials) {
  llvm::DenseSet<Operation *> merged;
  for (size_t i = 0; i < partials.size(); ++i) {
    if (merged.contains(partials[i]))
      continue;
    for (size_t j = i + 1; j < partials.size(); ++j) {
      linalg::GenericOp first = partials[i], second = partials[j];
      if (merged.contains(second) || !areSiblingPartials(first, second))
        continue;
      // In the place of whichever comes first, with a copy of the other's
      // fill (its own may come after): the other's result may be read
      // before the later one's place.
      if (second->isBeforeInBlock(first))
        std::swap(first, second);
      rewriter.setInsertionPoint(first);
      auto fill = second.getDpsInitOperand(0)->get().getDefiningOp<linalg::FillOp>();
      Operation *value = rewriter.clone(*fill.getInputs()[0].getDefiningOp());
      Operation *empty = rewriter.clone(*fill.getOutputs()[0].getDefiningOp());
      Value secondInit =
          linalg::FillOp::create(rewriter, fill.getLoc(), value->getResult(0), empty->getResult(0))
              .getResult(0);
      SmallVector<AffineMap> maps = first.getIndexingMapsArray();
      maps.push_back(second.getIndexingMapsArray().back());
      auto both = linalg::GenericOp::create(
          rewriter, first.getLoc(),
          TypeRange{first.getResultTypes()[0], second.getResultTypes()[0]},
          ValueRange{first.getDpsInputOperand(0)->get()},
          ValueRange{first.getDpsInitOperand(0)->get(), secondInit}, maps,
          first.getIteratorTypesArray());
      Block *body = rewriter.createBlock(&both.getRegion());
      Location loc = first.getLoc();
      Value in = body->addArgument(first.getBody()->getArgument(0).getType(), loc);
      Value outFirst = body->addArgument(first.getBody()->getArgument(1).getType(), loc);
      Value outSecond = body->addArgument(second.getBody()->getArgument(1).getType(), loc);
      SmallVector<Value> yielded;
      for (auto [op, out] : {std::make_pair(first, outFirst), std::make_pair(second, outSecond)}) {
        IRMapping mapping;
        mapping.map(op.getBody()->getArgument(0), in);
        mapping.map(op.getBody()->getArgument(1), out);
        for (Operation &inner : op.getBody()->without_terminator())
          rewriter.clone(inner, mapping);
        yielded.push_back(mapping.lookupOrDefault(op.getBody()->getTerminator()->getOperand(0)));
      }
      linalg::YieldOp::create(rewriter, loc, yielded);
      rewriter.replaceOp(first, both.getResult(0));
      rewriter.replaceOp(second, both.getResult(1));
      merged.insert(first);
      merged.insert(second);
      break;
    }
  }
}

/// The next part of a matrix-vector product split along its reduction
/// (its MatrixVector product and its LaneSum) after `lanes`, the last
/// part's lane sum: the part whose lane sums start from `lanes`' result,
/// split across threads as `config` is.
static std::optional<std::pair<linalg::LinalgOp, linalg::LinalgOp>>
nextMatrixVectorPart(linalg::LinalgOp lanes, LoweringConfigAttr config) {
  if (lanes->getNumResults() != 1 || !lanes->hasOneUse())
    return std::nullopt;
  OpOperand &use = *lanes->use_begin();
  auto nextLanes = dyn_cast<linalg::LinalgOp>(use.getOwner());
  if (!nextLanes || !hasKernel(nextLanes, CpuKernel::LaneSum) || !nextLanes.isDpsInit(&use) ||
      nextLanes.getNumDpsInputs() != 1)
    return std::nullopt;
  auto product = nextLanes.getDpsInputOperand(0)->get().getDefiningOp<linalg::LinalgOp>();
  if (!product || !hasKernel(product, CpuKernel::MatrixVector) || !product->hasOneUse())
    return std::nullopt;
  LoweringConfigAttr productConfig = getLoweringConfig(product);
  if (!productConfig || productConfig.getThreads() != config.getThreads())
    return std::nullopt;
  return std::make_pair(product, nextLanes);
}

/// Splits each op with enough work, together with the elementwise chain
/// that consumes it and the fill that initializes it, into `threads`
/// chunks of one scf.forall: one parallel region per chain, and the chain
/// stays fusible inside each chunk.
LogicalResult Scheduler::splitAcrossThreads(IRRewriter &rewriter, ArrayRef<linalg::LinalgOp> ops) {
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
    // The parts of a product split along its reduction (each accumulating
    // into the last's result: splitReductionsForTiles) go into the same
    // chunks, each thread continuing its own share, and so does the chain
    // after the last. Split on their own, a later part wrote into the
    // earlier's result from inside a parallel region, which bufferization
    // copied for each thread (the bf16 MLP's first layer on two threads:
    // 256 KiB a thread and call).
    if (isa<linalg::MatmulOp>(op.getOperation()) && chain.size() == 1) {
      SmallVector<linalg::LinalgOp> parts = {op};
      while (parts.back()->hasOneUse()) {
        OpOperand &use = *parts.back()->use_begin();
        auto next = dyn_cast<linalg::MatmulOp>(use.getOwner());
        if (!next || !next.isDpsInit(&use))
          break;
        parts.push_back(next);
      }
      if (parts.size() > 1) {
        chain = elementwiseChain(parts.back());
        chain.insert(chain.begin(), parts.begin(), parts.end() - 1);
      }
    }
    // A matrix-vector product's chunks also sum their own lanes, and apply
    // the chain that consumes the sums (a Linear layer's bias and
    // activation).
    if (hasKernel(op, CpuKernel::MatrixVector) && op->hasOneUse())
      if (auto lanes = dyn_cast<linalg::LinalgOp>(*op->getUsers().begin()))
        if (hasKernel(lanes, CpuKernel::LaneSum)) {
          chain = {op, lanes};
          // So do the later parts of its reduction (matrixVectorReductionParts),
          // each adding its lane sums to the last's: one parallel region for
          // the whole product, not one a part (the MLP at batch 16 on two
          // threads: five regions, each with its hand-off and wait, for two
          // layers).
          while (auto next = nextMatrixVectorPart(chain.back(), config)) {
            chain.push_back(next->first);
            chain.push_back(next->second);
          }
          llvm::append_range(chain, ArrayRef(elementwiseChain(chain.back())).drop_front());
        }
    // The split loop in the chain's last op: the result dimension it maps to.
    std::optional<unsigned> dim = split.first;
    if (chain.size() > 1 && op->getNumResults() == 1)
      dim = op.getIndexingMapMatchingResult(op->getResult(0))
                .getResultPosition(getAffineDimExpr(split.first, ctx));
    if (!dim || op->getNumResults() != 1)
      chain.resize(1), dim = split.first;
    linalg::LinalgOp root = chain.back();
    llvm::DenseSet<Operation *> fusible;
    for (linalg::LinalgOp member : ArrayRef(chain).drop_back())
      fusible.insert(member);
    // The fills that initialize the chain's ops (a matmul's, a lane sum's)
    // run in the chunks too: filled outside, the zeros were a kernel of
    // their own, and bufferization copied each chunk's share of them.
    for (linalg::LinalgOp member : chain)
      for (OpOperand &init : member.getDpsInitsMutable())
        if (auto fill = init.get().getDefiningOp<linalg::FillOp>())
          fusible.insert(fill);

    SmallVector<int64_t> sizes(root.getNumLoops(), 0);
    sizes[*dim] = split.second;
    scf::SCFTileAndFuseOptions options;
    options.tilingOptions.setLoopType(scf::SCFTilingOptions::LoopType::ForallOp);
    options.tilingOptions.setTileSizes(getAsIndexOpFoldResult(ctx, sizes));
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

/// A matmul tile (three loops, the last a reduction of one step), named or
/// generic.
static bool isOneStepProductTile(linalg::LinalgOp op) {
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  // (Or one of a batch: loops (b, m, n, k), b and k of one step.)
  bool oneStep = (ranges.size() == 3 && ranges[2] == 1) ||
                 (ranges.size() == 4 && ranges[0] == 1 && ranges[3] == 1);
  return linalg::isaContractionOpInterface(op) && oneStep && op.getNumReductionLoops() == 1 &&
         !hasKernel(op, CpuKernel::PackedMatmul);
}

/// A convolution tile reads its input at output + kernel position, which
/// is no permutation of the loops and does not vectorize; with the unit
/// kernel, channel and row loops dropped, it reads along the output columns
/// only, as a matmul tile does. Transpose tiles with unit dimensions (a
/// 1 x 16 x 16 block of packed panels) likewise become 2-D transposes in
/// registers.
void Scheduler::dropTileUnitDims(IRRewriter &rewriter, ModuleOp module) {
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
  // A matmul tile of one reduction step (the register tile of a product
  // too small to pack) becomes an outer product: a column of the left
  // operand by a row of the right. Vectorized as it is, its operands were
  // rows x columns x 1 vectors, the right one built from one extract per
  // element (32 loads and 256 inserts for an 8 x 32 tile, each step).
  // (A batch matmul's tile likewise, its unit batch loop dropped with the
  // step: vectorized with it, each step extracted the right operand's
  // elements one by one.)
  SmallVector<linalg::LinalgOp> matmulTiles;
  module.walk([&](linalg::LinalgOp op) {
    if (isa<linalg::MatmulOp, linalg::BatchMatmulOp>(op.getOperation()) &&
        op.hasPureTensorSemantics() && op->getParentOfType<scf::ForOp>() &&
        isOneStepProductTile(op))
      matmulTiles.push_back(op);
  });
  for (linalg::LinalgOp op : matmulTiles) {
    rewriter.setInsertionPoint(op);
    (void)linalg::generalizeNamedOp(rewriter, op);
  }
  // (A packed product whose register tile is all of it, a thread's share of
  // 32 x 32 on AMX tiles with its reduction whole, is in no loop of tiles:
  // left with its unit loop, it was vectorized whole, 32 x 32 x 1024 bytes.)
  // So are tiles reading at sums of loops (the windows of a tile
  // convolution, input[n, y + i, x + j, c]), which the vectorizer takes only
  // once the unit loops are gone and the maps permutations.
  auto readsAtSums = [](linalg::GenericOp op) {
    return !llvm::all_of(op.getIndexingMapsArray(),
                         [](AffineMap map) { return map.isProjectedPermutation(); });
  };
  SmallVector<linalg::GenericOp> tiles;
  module.walk([&](linalg::GenericOp op) {
    // (A tile convolution's tiles keep their loops for the AMX writer.)
    if (hasKernel(op, CpuKernel::TileConv))
      return;
    if ((isConvolutionTile(op) || hasKernel(op, CpuKernel::Transpose) || isOneStepProductTile(op) ||
         readsAtSums(op)) &&
        op.hasPureTensorSemantics() &&
        (op->getParentOfType<scf::ForOp>() || hasKernel(op, CpuKernel::PackedMatmul)))
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
    // A packed product's tile keeps its kernel (lowerDotProductTiles) and
    // whether its accumulator starts at zero.
    if (hasKernel(op, CpuKernel::PackedMatmul) && dropped->resultOp) {
      setCpuKernel(dropped->resultOp, CpuKernel::PackedMatmul);
      if (op->hasAttr(cpu::kZeroAccumulatorAttr))
        dropped->resultOp->setAttr(cpu::kZeroAccumulatorAttr, rewriter.getUnitAttr());
    }
    rewriter.replaceOp(op, dropped->replacements);
  }
}

void Scheduler::orderWindowTiles(IRRewriter &rewriter, ModuleOp module) {
  SmallVector<linalg::GenericOp> tiles;
  module.walk([&](linalg::GenericOp op) {
    CpuKernel kernel = kernelOf(op);
    if (op.hasPureTensorSemantics() && op.getNumReductionLoops() > 0 &&
        (kernel == CpuKernel::PoolWindow || kernel == CpuKernel::WindowReduction))
      tiles.push_back(op);
  });
  for (linalg::GenericOp op : tiles) {
    for (OpOperand *input : op.getDpsInputOperands()) {
      AffineMap map = op.getMatchingIndexingMap(input);
      if (!map.isPermutation())
        continue;
      if (!map.isIdentity()) {
        SmallVector<unsigned> order;
        for (unsigned i = 0; i < map.getNumResults(); ++i)
          order.push_back(map.getDimPosition(i));
        rewriter.setInsertionPoint(op);
        (void)linalg::interchangeGenericOp(rewriter, op, order);
      }
      break;
    }
  }
}

/// An op with a loop of static size 0 computes nothing: its results are its
/// inits (an empty tensor, or the fill of a reduction over nothing). Tiling
/// it would divide by the zero range.
void Scheduler::foldEmptyLoops(IRRewriter &rewriter, ArrayRef<linalg::LinalgOp> ops) {
  for (linalg::LinalgOp op : ops) {
    if (!llvm::is_contained(op.getStaticLoopRanges(), 0) ||
        op->getNumResults() != op.getDpsInits().size())
      continue;
    rewriter.replaceOp(op, op.getDpsInits());
  }
}

void Scheduler::unshareFills(IRRewriter &rewriter, ArrayRef<linalg::LinalgOp> ops) {
  for (linalg::LinalgOp op : ops) {
    // (A fill nothing reads any more, as the init of an op over an empty
    // loop that foldEmptyLoops removed, has no first user.)
    auto fill = dyn_cast<linalg::FillOp>(op.getOperation());
    if (!fill || !fill.hasPureTensorSemantics() || fill->hasOneUse() || fill->use_empty())
      continue;
    auto empty = fill.getOutputs()[0].getDefiningOp<tensor::EmptyOp>();
    if (!empty)
      continue;
    SmallVector<OpOperand *> uses =
        llvm::map_to_vector(fill->getUses(), [](OpOperand &use) { return &use; });
    // The first user keeps the original; each other one that writes into it
    // (a linalg op's init) gets a fill of its own, into a new tensor. That
    // tensor is an alloc_tensor, which CSE leaves apart (an allocation),
    // where two equal empty tensors, and then the fills, would merge again.
    for (OpOperand *use : ArrayRef(uses).drop_front()) {
      auto user = dyn_cast<linalg::LinalgOp>(use->getOwner());
      if (!user || !user.isDpsInit(use))
        continue;
      rewriter.setInsertionPoint(user);
      Value dest = bufferization::AllocTensorOp::create(rewriter, empty.getLoc(), empty.getType(),
                                                        empty.getDynamicSizes());
      auto copy = linalg::FillOp::create(rewriter, fill.getLoc(), fill.getInputs(), dest);
      copy->setDiscardableAttrs(fill->getDiscardableAttrDictionary());
      rewriter.modifyOpInPlace(user, [&] { use->set(copy.getResult(0)); });
    }
  }
}

void Scheduler::splitColumnRemainders(IRRewriter &rewriter, ArrayRef<linalg::LinalgOp> ops) {
  int64_t lanes = strategy.registers.elementwiseColumns() / 2;
  for (linalg::LinalgOp op : ops) {
    auto generic = dyn_cast<linalg::GenericOp>(op.getOperation());
    if (!generic || !generic.hasPureTensorSemantics() || kernelOf(op) != CpuKernel::Default ||
        touchesBooleans(op) || generic.getNumLoops() < 1)
      continue;
    LoweringConfigAttr config = getLoweringConfig(op);
    if (config && config.getWhole())
      continue;
    SmallVector<int64_t> ranges = generic.getStaticLoopRanges();
    SmallVector<int64_t> tile = cpu::configuredRegisterTile(op, strategy.registers);
    unsigned last = ranges.size() - 1;
    if (ShapedType::isDynamicShape(ranges) || tile.size() != ranges.size() || tile[last] <= 0 ||
        ranges[last] <= tile[last] || ranges[last] % lanes == 0)
      continue;
    // The last loop is the rows' contiguous one for every operand: each
    // reads it last, or not at all (a row's value, broadcast).
    AffineExpr column = getAffineDimExpr(last, ctx);
    if (!llvm::all_of(generic.getIndexingMapsArray(), [&](AffineMap map) {
          return map.isProjectedPermutation(/*allowZeroInResults=*/true) &&
                 (map.getNumResults() == 0 || map.getResults().back() == column ||
                  !map.isFunctionOfDim(last));
        }))
      continue;
    rewriter.setInsertionPoint(generic);
    auto [whole, rest] =
        linalg::splitOp(rewriter, cast<TilingInterface>(op.getOperation()), last,
                        rewriter.getIndexAttr(ranges[last] - ranges[last] % lanes));
    // (Each part's tile is chosen again for its columns.)
    for (TilingInterface part : {whole, rest})
      if (part) {
        auto linalgPart = cast<linalg::LinalgOp>(part.getOperation());
        setLoweringConfig(linalgPart,
                          LoweringConfigAttr::get(ctx, CpuKernel::Default)
                              .withRegisterTile(registerTile(linalgPart, strategy.registers)));
      }
  }
}

void Scheduler::flattenElementwise(IRRewriter &rewriter, ArrayRef<linalg::LinalgOp> ops,
                                   int64_t columns) {
  for (linalg::LinalgOp op : ops) {
    auto generic = dyn_cast<linalg::GenericOp>(op.getOperation());
    if (!generic || !generic.hasPureTensorSemantics() || kernelOf(op) != CpuKernel::Default ||
        generic.getNumLoops() < 2 || generic.getNumReductionLoops() != 0)
      continue;
    // A result the function returns stays in its shape: bufferization then
    // writes it into the caller's buffer, where a flat one was copied there
    // (an SGD update of a 512 x 784 weight: 1.6 MB a step).
    if (llvm::any_of(generic->getUsers(),
                     [](Operation *user) { return user->hasTrait<OpTrait::ReturnLike>(); }))
      continue;
    SmallVector<int64_t> ranges = generic.getStaticLoopRanges();
    if (ShapedType::isDynamicShape(ranges))
      continue;
    int64_t total = 1;
    for (int64_t range : ranges)
      total *= range;
    if (ranges.back() % columns == 0 || total % columns != 0)
      continue;
    if (!llvm::all_of(generic.getIndexingMapsArray(),
                      [](AffineMap map) { return map.isIdentity() || map.getNumResults() == 0; }))
      continue;
    // An op that reads its own indices (a gather: a reversed kernel, a one-hot
    // row) keeps its shape: flat, each element's indices came back from its
    // flat index by divisions. A CNN training step's flipped 32 x 64 x 3 x 3
    // kernel took six divisions and remainders an element, which LLVM's loop
    // vectorizer then widened: 4% of the step's compile (120 of 3,160 M
    // instructions), and a chain of three flips ran 3.6x slower.
    if (!generic.getBody()->getOps<linalg::IndexOp>().empty())
      continue;
    ReassociationIndices all;
    for (int64_t d = 0; d < int64_t(ranges.size()); ++d)
      all.push_back(d);
    rewriter.setInsertionPoint(generic);
    FailureOr<linalg::CollapseResult> flat = linalg::collapseOpIterationDims(op, {all}, rewriter);
    if (failed(flat))
      continue;
    // (Its config, chosen for the rows, is chosen again for the flat op.)
    flat->collapsedOp->removeAttr(LoweringConfigAttr::opAttrName);
    rewriter.replaceOp(generic, flat->results);
  }
}

namespace {
struct CpuSchedulePass : public mithril::impl::MithrilCpuScheduleBase<CpuSchedulePass> {
  using MithrilCpuScheduleBase::MithrilCpuScheduleBase;

  /// What the strategy sizes the tiles for (the target's registers and L2,
  /// and the pass options).
  cpu::StrategyOptions strategy;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    FailureOr<cpu::StrategyOptions> options = cpu::strategyOptions(
        module, getArgument(), targetCpu, vectorBits, cacheTile, threads, minParallelWork);
    if (failed(options))
      return signalPassFailure();
    strategy = *options;
    Scheduler scheduler(&getContext(), strategy);
    IRRewriter rewriter(&getContext());
    // In the lowering's loops over blocks, each block's result is computed
    // in its slice of the loop's result (the pooled rows of a first layer:
    // otherwise a buffer allocated, filled and copied each step, from every
    // thread at once).
    SmallVector<Operation *> blockLoops;
    module.walk([&](Operation *op) {
      if (op->hasAttr(kInPlaceBlocksAttr))
        blockLoops.push_back(op);
    });
    for (Operation *loop : blockLoops)
      if (failed(bufferization::eliminateEmptyTensors(rewriter, loop)))
        return signalPassFailure();
    scheduler.foldEmptyLoops(rewriter, scheduler.collectTensorOps(module));
    scheduler.unshareFills(rewriter, scheduler.collectTensorOps(module));
    scheduler.flattenElementwise(rewriter, scheduler.collectTensorOps(module),
                                 strategy.registers.elementwiseColumns());
    scheduler.widenCompiledInBF16Products(rewriter, scheduler.collectTensorOps(module));
    if (failed(scheduler.rewriteMatrixVectorProducts(rewriter, scheduler.collectTensorOps(module))))
      return signalPassFailure();
    if (failed(scheduler.splitFullReductions(rewriter, scheduler.collectTensorOps(module))))
      return signalPassFailure();
    scheduler.swapWeightProducts(rewriter, scheduler.collectTensorOps(module));
    // (Before the products' remainders split off: whole rows of scores.)
    if (fuseRows)
      scheduler.fuseAttentionBlocks(rewriter, scheduler.collectTensorOps(module));
    if (failed(scheduler.peelMatmulRemainders(rewriter, scheduler.collectTensorOps(module))))
      return signalPassFailure();
    scheduler.splitReductionsForTiles(rewriter, scheduler.collectTensorOps(module));
    // Ops without a config of their own (mithril-cpu-strategy did not run,
    // or they are new) get the strategy's.
    for (linalg::LinalgOp op : scheduler.collectTensorOps(module)) {
      LoweringConfigAttr config = getLoweringConfig(op);
      if (!config || config.getRegisterTile().size() != op.getNumLoops())
        setLoweringConfig(op, cpu::selectLoweringConfig(op, strategy));
    }
    // Row reductions and the element-wise ops that read them, row block by
    // row block (their own chunks across threads).
    if (fuseRows)
      scheduler.fuseRowReductions(rewriter, scheduler.collectTensorOps(module));
    // Split large ops across threads: an scf.forall of `threads` chunks
    // around smaller ops, which the register tiling below then tiles.
    if (failed(scheduler.splitAcrossThreads(rewriter, scheduler.collectTensorOps(module))))
      return signalPassFailure();
    // Large matmuls: blocks that stay in the L2 cache while the register
    // tiles sweep them.
    if (failed(scheduler.tileForCache(rewriter, scheduler.collectTensorOps(module))))
      return signalPassFailure();
    scheduler.widenUnpackedOperands(rewriter, scheduler.collectTensorOps(module));
    if (failed(scheduler.fuseMatrixVectorLanes(rewriter, scheduler.collectTensorOps(module))))
      return signalPassFailure();
    {
      // A fused fill writes a slice of an empty tensor: an empty tensor of
      // the slice's shape instead, not a buffer shared by every tile (and
      // copied for each thread of a split).
      RewritePatternSet emptySlices(&getContext());
      tensor::populateFoldTensorEmptyPatterns(emptySlices);
      if (failed(
              applyPatternsGreedily(module, std::move(emptySlices), withoutRegionSimplification())))
        return signalPassFailure();
    }
    // (After the empty slices fold: each part's fill writes a slice of the
    // op's output, in place.)
    scheduler.splitTileRemainders(rewriter, scheduler.collectTensorOps(module));
    scheduler.splitColumnRemainders(rewriter, scheduler.collectTensorOps(module));
    if (failed(scheduler.tileForRegisters(rewriter, scheduler.collectTensorOps(module))))
      return signalPassFailure();
    scheduler.lowerBF16WeightGradTiles(rewriter, module);
    scheduler.dropTileUnitDims(rewriter, module);
    scheduler.lowerDotProductTiles(rewriter, module);
    scheduler.lowerBF16MatrixVectorTiles(rewriter, module);
    scheduler.lowerInt8MatrixVectorTiles(rewriter, module);
    scheduler.lowerFloatMatrixVectorTiles(rewriter, module);
    scheduler.orderWindowTiles(rewriter, module);
    // Vectorize the tiles. Booleans stay scalar: a vector of i1 is stored as
    // packed bits, while a tensor of i1 is one byte per element in memory.
    SmallVector<linalg::LinalgOp> tiles;
    module.walk([&](linalg::LinalgOp op) {
      // (AMX tiles are written after bufferization.)
      if (op.hasPureTensorSemantics() && !touchesBooleans(op) &&
          !hasKernel(op, CpuKernel::TileMatmul) && !hasKernel(op, CpuKernel::TileConv))
        tiles.push_back(op);
    });
    for (linalg::LinalgOp op : tiles) {
      rewriter.setInsertionPoint(op);
      SmallVector<int64_t> sizes = maskedVectorSizes(op);
      SmallVector<bool> scalable(sizes.size(), false);
      FailureOr<linalg::VectorizationResult> vectorized =
          linalg::vectorize(rewriter, op, sizes, scalable);
      if (succeeded(vectorized))
        rewriter.replaceOp(op, vectorized->replacements);
    }
    if (failed(cleanUpVectorCode(module))) {
      module.emitError("mithril-cpu-schedule: the vector code's cleanup did not converge");
      return signalPassFailure();
    }
    hoistInvariantSubsets(module);
    {
      // Half the vector register file: 32 registers with AVX-512, 16 with
      // AVX2.
      int64_t registers = strategy.registers.bits >= 512 ? 32 : 16;
      SmallVector<scf::ForOp> loops;
      module.walk([&](scf::ForOp loop) { loops.push_back(loop); });
      for (scf::ForOp loop : loops)
        carryLanePartials(rewriter, loop, registers / 2 * strategy.registers.bits);
    }
    // Writes that folded into a larger tensor with unit dimensions (a
    // convolution's accumulator) get the read's shape; hoistInvariantSubsets
    // then hoists the pair.
    RewritePatternSet patterns(&getContext());
    patterns.add<DropUnitDimOfTransferWrite, WriteThroughExtractedSlice, ElementwiseBeforeShapeCast,
                 ElementwiseOnBroadcastElements, ReduceSmallWindowsWithShuffles,
                 ReadWholeRowsOfExpandedTensor, SumLanesWithShuffleTree,
                 TransposedBroadcastAsStretch, TransposePairsAs32Bit, WholeVectorReduction>(
        &getContext());
    // With the canonicalizations that fold slices into the transfers.
    addCanonicalizations(patterns);
    bool changed = false;
    if (failed(applyPatternsGreedily(module, std::move(patterns), withoutRegionSimplification(),
                                     &changed)))
      return signalPassFailure();
    if (changed)
      hoistInvariantSubsets(module);
    // 16 x 16 transposes (packing a transposed weight) as AVX-512 shuffles:
    // left to the LLVM conversion they became 256 extracts and inserts each
    // (a third of the LLVM IR of an MLP training step). Only the transposes
    // and what they become are rewritten (a greedy rewrite of the whole
    // module took 3.6 ms of the bench CNN training step's compile).
    RewritePatternSet shuffles(&getContext());
    // (8 x 8 transposes in 8-lane shuffles where registers hold 8 lanes.)
    int64_t registerSide = registerTransposeSide(strategy.registers);
    shuffles.add<PadTransposeToSquare>(&getContext(), registerSide);
    if (registerSide == TransposeEightByEight::kSide)
      shuffles.add<TransposeEightByEight>(&getContext());
    vector::populateVectorTransposeLoweringPatterns(shuffles,
                                                    vector::VectorTransposeLowering::Shuffle16x16);
    if (failed(mithril::rewriteSelected(module, std::move(shuffles), [](Operation *op) {
          return isa<vector::TransposeOp>(op);
        })))
      signalPassFailure();
  }
};
} // namespace
