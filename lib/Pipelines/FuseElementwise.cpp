//===- FuseElementwise.cpp - elementwise fusion with safe reshapes --------===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//

#include "mithril/Pipelines/Pipelines.h"

#include "mithril/Dialect/Mithril/IR/LoweringConfig.h"
#include "mithril/Support/GreedyRewrite.h"
#include "mithril/Support/TransposeConstant.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tensor/Transforms/Transforms.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mithril {
#define GEN_PASS_DEF_MITHRILFUSEELEMENTWISE
#include "mithril/Pipelines/Passes.h.inc"
} // namespace mithril

using namespace mlir;

/// Does every reassociation group of the reshape's expanded side have at most
/// one dynamic size?
static bool hasOneDynamicSizePerGroup(RankedTensorType expanded,
                                      ArrayRef<ReassociationIndices> groups) {
  return llvm::all_of(groups, [&](const ReassociationIndices &group) {
    return llvm::count_if(group, [&](int64_t d) { return expanded.isDynamicDim(d); }) <= 1;
  });
}

/// Whether `transpose` swaps its last two dimensions: a transpose the CPU
/// schedule moves in 16 x 16 register blocks.
static bool swapsLastTwo(linalg::TransposeOp transpose) {
  ArrayRef<int64_t> perm = transpose.getPermutation();
  int64_t rank = perm.size();
  return rank >= 2 && perm[rank - 1] == rank - 2 && perm[rank - 2] == rank - 1;
}

/// The fusion control: producers with one use, as upstream's pass, and
/// reshapes folded by expansion only where they stay well-formed.
static bool shouldFuse(OpOperand *fused) {
  Operation *producer = fused->get().getDefiningOp();
  if (!producer || !producer->hasOneUse())
    return false;
  // Not into a convolution whose lowering chose its kernel: the fused op is
  // a new generic without the choice, and its body no longer the
  // multiply-add the kernel takes (a bf16 CNN's first convolution, its
  // weight's rounding fused in, became a scalar loop nest: 0.21 ms against
  // 0.10 in float32).
  switch (mithril::getCpuKernel(fused->getOwner())) {
  case mithril::CpuKernel::ConvFlat:
  case mithril::CpuKernel::ConvFlatWeightGrad:
  case mithril::CpuKernel::ConvSpatial:
  case mithril::CpuKernel::ConvChannelsLast:
    return false;
  default:
    break;
  }
  // A collapse feeding a linalg op, or an expand of a linalg op's result.
  // Not into a contraction: a matmul of a flattened tensor (a Linear layer
  // after a convolution's Flatten) would become a generic with several
  // reduction loops, which no matmul kernel takes (the bench CNN's last
  // layer ran 19 times slower that way).
  if (auto collapse = dyn_cast<tensor::CollapseShapeOp>(producer)) {
    if (auto consumer = dyn_cast<linalg::LinalgOp>(fused->getOwner()))
      if (linalg::isaContractionOpInterface(consumer))
        return false;
    // Nor into a transpose of the last two dimensions where either of them
    // is a collapse of several, unless an element-wise producer then fuses
    // in too: the transpose, expanded, no longer swaps its last two and
    // loses its 16 x 16 register blocks (a Linear's weight gradient
    // transposing its input [8, 128, 1024] viewed as [1024, 1024] became a
    // [1024, 8, 128] gather of single floats, 3.7 ms against 0.2). A
    // convolution's channels-last copy of its element-wise gradient, fused
    // whole, still pays.
    if (auto transpose = dyn_cast<linalg::TransposeOp>(fused->getOwner());
        transpose && swapsLastTwo(transpose)) {
      int64_t rank = transpose.getPermutation().size();
      auto groups = collapse.getReassociationIndices();
      auto source = collapse.getSrc().getDefiningOp<linalg::LinalgOp>();
      bool fusesOn =
          source && source->hasOneUse() && source.getNumLoops() == source.getNumParallelLoops();
      if ((groups[rank - 1].size() > 1 || groups[rank - 2].size() > 1) && !fusesOn)
        return false;
    }
    return hasOneDynamicSizePerGroup(collapse.getSrcType(), collapse.getReassociationIndices());
  }
  if (auto expand = dyn_cast<tensor::ExpandShapeOp>(fused->getOwner())) {
    // Not into a reduction: a keepdim reduction's [N, 1] result expanded
    // into the reduction gives it a unit parallel loop beside the reduced
    // one, which the CPU schedule does not take as a row reduction (a
    // 256x1024 max with keepdim ran 14x slower, and softmax 3x).
    if (auto linalgProducer = dyn_cast<linalg::LinalgOp>(producer))
      if (linalgProducer.getNumReductionLoops() > 0)
        return false;
    // Not where it would cut the producer's rows of whole vectors into
    // shorter ones: a Winograd output transform over [F, 784] tiles (49
    // vectors of 16 a row) viewed as [F, 16, 7, 7] ran 7-wide rows, 4x
    // slower.
    constexpr int64_t kLanes = 16;
    ArrayRef<int64_t> source = expand.getSrcType().getShape();
    ArrayRef<int64_t> result = expand.getResultType().getShape();
    if (isa<linalg::LinalgOp>(producer) && !source.empty() &&
        !ShapedType::isDynamic(source.back()) && !ShapedType::isDynamic(result.back()) &&
        result.back() > 1 && source.back() % kLanes == 0 && result.back() % kLanes != 0)
      return false;
    // Nor into a transpose of the last two dimensions, which the CPU
    // schedule moves in 16 x 16 register blocks: an int8 convolution's
    // [N, OH OW, F] -> [N, F, OH OW] viewed as [N, F, OH, OW] became a
    // gather of single floats (0.12 of 0.65 ms for the bench CNN).
    if (auto transpose = dyn_cast<linalg::TransposeOp>(producer);
        transpose && swapsLastTwo(transpose))
      return false;
    return hasOneDynamicSizePerGroup(expand.getResultType(), expand.getReassociationIndices());
  }
  // Not a transpose into an op that reads windows of it (at sums of loops,
  // as a tile convolution's im2col): fused, each window's run of channels
  // read the transpose's input across its strides instead of contiguous
  // channels (the bf16 CNN's windows became a scalar loop nest, 0.26 ms).
  if (auto consumer = dyn_cast<linalg::LinalgOp>(fused->getOwner()))
    if (auto linalgProducer = dyn_cast<linalg::LinalgOp>(producer))
      if (!consumer.getMatchingIndexingMap(fused).isProjectedPermutation() &&
          llvm::any_of(linalgProducer.getDpsInputOperands(), [&](OpOperand *input) {
            AffineMap map = linalgProducer.getMatchingIndexingMap(input);
            return map.isPermutation() && !map.isIdentity();
          }))
        return false;
  // A producer that reads its own result (a reduction over no loops, as of a
  // 0-d tensor) keeps that result in the fused op, written under the
  // consumer's indexing map: broadcast into a loop, it would accumulate once
  // per iteration. It stays apart.
  if (auto linalgProducer = dyn_cast<linalg::LinalgOp>(producer))
    if (llvm::any_of(linalgProducer.getDpsInitsMutable(), [&](OpOperand &init) {
          return linalgProducer.payloadUsesValueFromOperand(&init);
        }))
      return false;
  return true;
}

/// The narrow tensor that `v` widens, when `v` is the result of a linalg op
/// that only extends each element of it to a wider float or signed integer
/// (the lowering of a cast from bf16 or f16 to f32, or from i8 to i32).
static Value widenedSource(Value v) {
  auto generic = v.getDefiningOp<linalg::GenericOp>();
  if (!generic || generic.getNumDpsInputs() != 1 || generic.getNumDpsInits() != 1 ||
      !llvm::all_of(generic.getIndexingMapsArray(),
                    [](AffineMap map) { return map.isIdentity(); }) ||
      generic.getNumParallelLoops() != generic.getNumLoops())
    return Value();
  Block &body = generic.getRegion().front();
  if (body.getOperations().size() != 2)
    return Value();
  Operation &ext = body.front();
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  if (!isa<arith::ExtFOp, arith::ExtSIOp>(ext) || ext.getOperand(0) != body.getArgument(0) ||
      yield.getValues().front() != ext.getResult(0))
    return Value();
  return generic.getDpsInputOperand(0)->get();
}

namespace {
/// A matrix product of widened operands reads the narrow ones: linalg.matmul
/// extends its inputs to the accumulator's type itself. A bf16 or f16 matmul
/// then accumulates in f32 (an i8 one in i32) without a widened copy of each
/// operand (twice or four times the memory traffic), and the CPU schedule can
/// pick a kernel that multiplies the narrow type directly (vdpbf16ps,
/// vpdpbusd). A transposed widened operand (a Linear layer's weight) is
/// transposed narrow.
template <typename ContractionOp>
struct FoldWideningIntoContraction : OpRewritePattern<ContractionOp> {
  using OpRewritePattern<ContractionOp>::OpRewritePattern;
  LogicalResult matchAndRewrite(ContractionOp op, PatternRewriter &rewriter) const override {
    if (!op.hasPureTensorSemantics() || op.hasUserDefinedMaps())
      return failure();
    SmallVector<Value> inputs;
    bool changed = false;
    for (OpOperand *input : op.getDpsInputOperands()) {
      Value v = input->get();
      if (Value narrow = widenedSource(v)) {
        inputs.push_back(narrow);
        changed = true;
        continue;
      }
      auto transpose = v.getDefiningOp<linalg::TransposeOp>();
      Value narrow = transpose ? widenedSource(transpose.getInput()) : Value();
      if (!narrow) {
        inputs.push_back(v);
        continue;
      }
      SmallVector<OpFoldResult> sizes =
          tensor::getMixedSizes(rewriter, transpose.getLoc(), transpose.getInit());
      Value init = tensor::EmptyOp::create(rewriter, transpose.getLoc(), sizes,
                                           getElementTypeOrSelf(narrow.getType()));
      inputs.push_back(linalg::TransposeOp::create(rewriter, transpose.getLoc(), narrow, init,
                                                   transpose.getPermutation())
                           .getResult()[0]);
      changed = true;
    }
    if (!changed)
      return failure();
    // A new op: the body's block arguments take the narrow types.
    auto product = ContractionOp::create(rewriter, op.getLoc(), op->getResultTypes(), inputs,
                                         op.getDpsInits());
    product->setDiscardableAttrs(op->getDiscardableAttrDictionary());
    rewriter.replaceOp(op, product->getResults());
    return success();
  }
};

/// Whether `v` (a float) holds a value of the narrower float type `narrow`
/// exactly: widened from it, or chosen among such values (a max, min or
/// select; a ReLU of a rounded value is one), or their negation or
/// magnitude. Mixed precision rounds every op's result, so that a ReLU or
/// a max pooling rounds values that need no rounding.
static bool holdsNarrowValue(Value v, FloatType narrow, unsigned depth = 0) {
  if (depth > 8)
    return false;
  Operation *def = v.getDefiningOp();
  if (!def)
    return false;
  auto fits = [&](Type type) {
    auto source = dyn_cast<FloatType>(getElementTypeOrSelf(type));
    return source &&
           APFloat::isRepresentableBy(source.getFloatSemantics(), narrow.getFloatSemantics());
  };
  if (auto ext = dyn_cast<arith::ExtFOp>(def))
    return fits(ext.getIn().getType());
  FloatAttr scalar;
  DenseFPElementsAttr splat;
  if (matchPattern(v, m_Constant(&scalar)) ||
      (matchPattern(v, m_Constant(&splat)) && splat.isSplat())) {
    APFloat value = scalar ? scalar.getValue() : splat.getSplatValue<APFloat>();
    APFloat rounded = value;
    bool lost = false;
    rounded.convert(narrow.getFloatSemantics(), APFloat::rmNearestTiesToEven, &lost);
    return !lost;
  }
  if (isa<arith::MaximumFOp, arith::MinimumFOp, arith::MaxNumFOp, arith::MinNumFOp>(def))
    return holdsNarrowValue(def->getOperand(0), narrow, depth + 1) &&
           holdsNarrowValue(def->getOperand(1), narrow, depth + 1);
  if (auto select = dyn_cast<arith::SelectOp>(def))
    return holdsNarrowValue(select.getTrueValue(), narrow, depth + 1) &&
           holdsNarrowValue(select.getFalseValue(), narrow, depth + 1);
  if (isa<arith::NegFOp, math::AbsFOp>(def))
    return holdsNarrowValue(def->getOperand(0), narrow, depth + 1);
  return false;
}

/// extf(truncf(x)), a float32 value rounded to a narrower float and back
/// (mixed precision's rounding of each op's result, fused into the op that
/// reads it): nothing when x holds a value of the narrow type already, else
/// for bf16 the rounding on x's bits, round to nearest even, in 32-bit
/// integers of x's shape (upstream's bf16 expansion rounds the same way but
/// into i16 lanes, which a round trip does not need). The conversions would
/// narrow each vector to i16
/// lanes and back, row by row of the tile (a bf16 CNN's pooling, whose tile
/// rows are 2 wide, ran 9 times slower than in float32).
/// The rounding on bits comes after fusion (`onBits`), so that the ops fused
/// later still see the conversions that make a value exact.
struct RoundThroughNarrowFloat : OpRewritePattern<arith::ExtFOp> {
  RoundThroughNarrowFloat(MLIRContext *ctx, bool onBits) : OpRewritePattern(ctx), onBits(onBits) {}
  bool onBits;
  LogicalResult matchAndRewrite(arith::ExtFOp ext, PatternRewriter &rewriter) const override {
    auto trunc = ext.getIn().getDefiningOp<arith::TruncFOp>();
    if (!trunc || trunc.getIn().getType() != ext.getType())
      return failure();
    Value x = trunc.getIn();
    auto narrow = cast<FloatType>(getElementTypeOrSelf(trunc.getType()));
    if (holdsNarrowValue(x, narrow)) {
      rewriter.replaceOp(ext, x);
      return success();
    }
    Type wideElement = getElementTypeOrSelf(x.getType());
    if (!onBits || !narrow.isBF16() || !wideElement.isF32() || trunc.getRoundingmodeAttr())
      return failure();
    Location loc = ext.getLoc();
    Type i32 = rewriter.getI32Type();
    Type bitsType = i32;
    if (auto vector = dyn_cast<VectorType>(x.getType()))
      bitsType = vector.clone(i32);
    auto constant = [&](int64_t value) {
      return createScalarOrSplatConstant(rewriter, loc, bitsType, value);
    };
    // bits + 0x7fff + (bit 16 of bits): ties to the even bf16, a carry into
    // the exponent where the value rounds up to the next binade or to inf.
    Value bits = arith::BitcastOp::create(rewriter, loc, bitsType, x);
    Value lsb = arith::AndIOp::create(
        rewriter, loc, arith::ShRUIOp::create(rewriter, loc, bits, constant(16)), constant(1));
    Value biased = arith::AddIOp::create(
        rewriter, loc, arith::AddIOp::create(rewriter, loc, bits, constant(0x7fff)), lsb);
    Value rounded = arith::BitcastOp::create(
        rewriter, loc, x.getType(),
        arith::AndIOp::create(rewriter, loc, biased, constant(static_cast<int32_t>(0xffff0000))));
    // A NaN stays a NaN (its payload need not survive).
    Value isNan = arith::CmpFOp::create(rewriter, loc, arith::CmpFPredicate::UNO, x, x);
    rewriter.replaceOpWithNewOp<arith::SelectOp>(ext, isNan, x, rounded);
    return success();
  }
};

/// truncf(max(extf(truncf(x)), y)) -> truncf(max(x, y)), through chains of
/// maxima and minima: rounding is monotone and idempotent, so rounding an
/// operand of a maximum that is rounded again to the same type changes
/// nothing. (Mixed precision rounds a pooling's result before its ReLU, and
/// the next convolution's tiles round the ReLU's result again: the bf16
/// CNN's first pooling rounded each value twice, once on its bits.)
struct DropRoundingBeforeRounding : OpRewritePattern<arith::TruncFOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(arith::TruncFOp trunc, PatternRewriter &rewriter) const override {
    if (trunc.getRoundingmodeAttr())
      return failure();
    Type narrow = getElementTypeOrSelf(trunc.getType());
    bool changed = false;
    SmallVector<Operation *> work;
    if (Operation *def = trunc.getIn().getDefiningOp())
      work.push_back(def);
    while (!work.empty()) {
      Operation *op = work.pop_back_val();
      if (!isa<arith::MaximumFOp, arith::MinimumFOp, arith::MaxNumFOp, arith::MinNumFOp>(op) ||
          !op->hasOneUse())
        continue;
      for (OpOperand &operand : op->getOpOperands()) {
        auto ext = operand.get().getDefiningOp<arith::ExtFOp>();
        auto inner = ext ? ext.getIn().getDefiningOp<arith::TruncFOp>() : nullptr;
        if (inner && !inner.getRoundingmodeAttr() &&
            getElementTypeOrSelf(inner.getType()) == narrow &&
            inner.getIn().getType() == operand.get().getType()) {
          rewriter.modifyOpInPlace(op, [&] { operand.set(inner.getIn()); });
          changed = true;
        } else if (Operation *def = operand.get().getDefiningOp()) {
          work.push_back(def);
        }
      }
    }
    return success(changed);
  }
};

/// The one op of a generic's body that the body yields, or null.
static Operation *soleBodyOp(linalg::GenericOp generic) {
  Block &body = generic.getRegion().front();
  if (!llvm::hasSingleElement(body.without_terminator()))
    return nullptr;
  Operation *op = &body.front();
  Operation *yield = body.getTerminator();
  if (op->getNumResults() != 1 || yield->getNumOperands() != 1 ||
      yield->getOperand(0) != op->getResult(0))
    return nullptr;
  return op;
}

/// The `OpTy` conversion (extf or truncf) that `generic` applies to each
/// element of its one input, with no reduction; null otherwise.
template <typename OpTy> static OpTy elementwiseConversion(linalg::GenericOp generic) {
  if (!generic || !generic.hasPureTensorSemantics() || generic.getNumDpsInputs() != 1 ||
      generic.getNumDpsInits() != 1 || generic.getNumReductionLoops() != 0)
    return nullptr;
  auto conversion = dyn_cast_or_null<OpTy>(soleBodyOp(generic));
  if (!conversion || conversion->getOperand(0) != generic.getRegion().getArgument(0))
    return nullptr;
  return conversion;
}

/// Whether `v` reaches the rest of the program only through max and min ops
/// (elementwise or reductions, their other operands exact in `narrow`),
/// reshapes, and roundings to `narrow`: such a chain gives the same rounded
/// results from unrounded values, as rounding is monotonic (and keeps 0 and
/// -inf): round(max(x, y)) = max(round(x), round(y)).
static bool reachesOnlyRoundings(Value v, FloatType narrow, unsigned depth = 0) {
  if (depth > 8 || v.use_empty())
    return false;
  for (OpOperand &use : v.getUses()) {
    Operation *user = use.getOwner();
    if (isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp>(user)) {
      if (!reachesOnlyRoundings(user->getResult(0), narrow, depth + 1))
        return false;
      continue;
    }
    auto generic = dyn_cast<linalg::GenericOp>(user);
    if (!generic || !generic.hasPureTensorSemantics() || generic.getNumDpsInputs() != 1 ||
        generic.getNumDpsInits() != 1 || use.getOperandNumber() != 0)
      return false;
    if (auto trunc = elementwiseConversion<arith::TruncFOp>(generic)) {
      if (getElementTypeOrSelf(trunc.getType()) != narrow || trunc.getRoundingmodeAttr())
        return false;
      continue;
    }
    Operation *op = soleBodyOp(generic);
    if (!isa_and_nonnull<arith::MaximumFOp, arith::MinimumFOp, arith::MaxNumFOp, arith::MinNumFOp>(
            op))
      return false;
    Block &body = generic.getRegion().front();
    for (Value operand : op->getOperands()) {
      if (operand == body.getArgument(0))
        continue;
      // A reduction's running value starts from a fill that must be exact.
      if (operand == body.getArgument(1)) {
        auto fill = generic.getDpsInits()[0].getDefiningOp<linalg::FillOp>();
        if (!fill || !holdsNarrowValue(fill.getInputs()[0], narrow))
          return false;
        continue;
      }
      if (!holdsNarrowValue(operand, narrow))
        return false;
    }
    if (!reachesOnlyRoundings(generic->getResult(0), narrow, depth + 1))
      return false;
  }
  return true;
}

/// Mixed precision rounds each op's result; a rounding whose value reaches
/// only max or min ops on the way to the next rounding (a ReLU, then a max
/// pooling: their results are rounded again) changes no result and is
/// dropped, so that those ops read the unrounded value. In the bf16 CNN the
/// first convolution's 401,408 results were rounded before ReLU and pooling,
/// and then the pooling's 100,352 again; 0.04 ms of its 0.71.
static void dropRoundingsBeforeMaxAndMin(Operation *root) {
  root->walk([&](linalg::GenericOp widen) {
    auto ext = elementwiseConversion<arith::ExtFOp>(widen);
    if (!ext)
      return;
    auto narrowing = widen.getDpsInputs()[0].getDefiningOp<linalg::GenericOp>();
    auto trunc = elementwiseConversion<arith::TruncFOp>(narrowing);
    auto identityMaps = [](linalg::GenericOp generic) {
      return llvm::all_of(generic.getIndexingMapsArray(),
                          [](AffineMap map) { return map.isIdentity(); });
    };
    if (!trunc || trunc.getRoundingmodeAttr() || !identityMaps(widen) || !identityMaps(narrowing))
      return;
    Value unrounded = narrowing.getDpsInputs()[0];
    auto narrow = cast<FloatType>(getElementTypeOrSelf(trunc.getType()));
    if (unrounded.getType() != widen->getResult(0).getType() ||
        !reachesOnlyRoundings(widen->getResult(0), narrow))
      return;
    widen->getResult(0).replaceAllUsesWith(unrounded);
  });
}

/// When `v`, used once, is another tensor `source` with its dimensions
/// permuted: a transpose of it, or the view expand_shape(transpose(
/// collapse_shape(source))) whose groups move whole (a channels-last
/// [N, H, W, F] transposed as [N, H W, F] -> [N, F, H W] and viewed as [N,
/// F, H, W]). `sourceDim[i]` is the dimension of `source` that dimension i
/// of `v` is.
static Value permutedView(Value v, SmallVector<int64_t> &sourceDim) {
  if (!v.hasOneUse())
    return Value();
  if (auto transpose = v.getDefiningOp<linalg::TransposeOp>()) {
    if (!transpose.hasPureTensorSemantics())
      return Value();
    sourceDim.assign(transpose.getPermutation().begin(), transpose.getPermutation().end());
    return transpose.getInput();
  }
  auto expand = v.getDefiningOp<tensor::ExpandShapeOp>();
  auto transpose = expand ? expand.getSrc().getDefiningOp<linalg::TransposeOp>() : nullptr;
  if (!transpose || !transpose.hasPureTensorSemantics() || !transpose->hasOneUse())
    return Value();
  auto collapse = transpose.getInput().getDefiningOp<tensor::CollapseShapeOp>();
  if (!collapse || !collapse.getSrcType().hasStaticShape() ||
      !expand.getResultType().hasStaticShape())
    return Value();
  ArrayRef<int64_t> perm = transpose.getPermutation();
  SmallVector<ReassociationIndices> from = collapse.getReassociationIndices();
  SmallVector<ReassociationIndices> to = expand.getReassociationIndices();
  ArrayRef<int64_t> sourceShape = collapse.getSrcType().getShape();
  ArrayRef<int64_t> viewShape = expand.getResultType().getShape();
  sourceDim.assign(viewShape.size(), 0);
  for (auto [i, group] : llvm::enumerate(to)) {
    const ReassociationIndices &moved = from[perm[i]];
    if (group.size() != moved.size())
      return Value();
    for (auto [dim, source] : llvm::zip_equal(group, moved)) {
      if (viewShape[dim] != sourceShape[source])
        return Value();
      sourceDim[dim] = source;
    }
  }
  return collapse.getSrc();
}

/// A generic that reads a permuted view of a tensor (permutedView) back in
/// the order of its own result reads the tensor itself: the two transposes
/// cancel. (The bf16 CNN's first convolution, pooled channels-last, was
/// transposed to planes and rounded back channels-last for the second
/// one's tiles: 49 us of 0.41 ms at batch 16.)
struct FoldTransposeRoundTrip : OpRewritePattern<linalg::GenericOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(linalg::GenericOp op, PatternRewriter &rewriter) const override {
    if (!op.hasPureTensorSemantics() || op.getNumDpsInits() != 1)
      return failure();
    AffineMap resultMap = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
    for (OpOperand *input : op.getDpsInputOperands()) {
      SmallVector<int64_t> sourceDim;
      Value source = permutedView(input->get(), sourceDim);
      AffineMap read = op.getMatchingIndexingMap(input);
      if (!source || read.getNumResults() != sourceDim.size())
        continue;
      SmallVector<AffineExpr> sourceRead(sourceDim.size());
      for (auto [dim, expr] : llvm::enumerate(read.getResults()))
        sourceRead[sourceDim[dim]] = expr;
      AffineMap composed = AffineMap::get(read.getNumDims(), 0, sourceRead, op.getContext());
      if (composed != resultMap)
        continue;
      SmallVector<AffineMap> maps = op.getIndexingMapsArray();
      maps[input->getOperandNumber()] = composed;
      rewriter.modifyOpInPlace(op, [&] {
        input->set(source);
        op.setIndexingMapsAttr(rewriter.getAffineMapArrayAttr(maps));
      });
      return success();
    }
    return failure();
  }
};

/// A transpose of a constant (a Linear layer's weight compiled in) folded by
/// moving its bytes: upstream's linalg constant folding goes through one
/// APFloat per element (48 of the 52 ms of this pass for the 669,000
/// compiled-in weights of the MLP 784-512-512-10).
struct FoldConstantTransposeBytes : OpRewritePattern<linalg::TransposeOp> {
  FoldConstantTransposeBytes(MLIRContext *ctx) : OpRewritePattern(ctx, /*benefit=*/2) {}
  LogicalResult matchAndRewrite(linalg::TransposeOp op, PatternRewriter &rewriter) const override {
    // Under the fusion control, as upstream's folding: a constant with other
    // readers is not copied.
    DenseElementsAttr input;
    if (!op.hasPureTensorSemantics() || !shouldFuse(&op->getOpOperand(0)) ||
        !matchPattern(op.getInput(), m_Constant(&input)))
      return failure();
    auto outType = dyn_cast<RankedTensorType>(op->getResult(0).getType());
    DenseElementsAttr transposed =
        outType ? mithril::transposeConstant(input, op.getPermutation(), outType) : nullptr;
    if (!transposed)
      return failure();
    rewriter.replaceOpWithNewOp<arith::ConstantOp>(op, transposed);
    return success();
  }
};

struct FuseElementwisePass : public mithril::impl::MithrilFuseElementwiseBase<FuseElementwisePass> {
  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    dropRoundingsBeforeMaxAndMin(getOperation());
    // First, before their widening casts fuse with the ops that produce the
    // narrow values.
    RewritePatternSet contractions(ctx);
    contractions.add<FoldWideningIntoContraction<linalg::MatmulOp>,
                     FoldWideningIntoContraction<linalg::BatchMatmulOp>>(ctx);
    if (failed(applyPatternsGreedily(getOperation(), std::move(contractions),
                                     mithril::withoutRegionSimplification())))
      return signalPassFailure();
    RewritePatternSet patterns(ctx);
    linalg::populateElementwiseOpsFusionPatterns(patterns, shouldFuse);
    patterns.add<RoundThroughNarrowFloat>(ctx, /*onBits=*/false);
    patterns.add<FoldTransposeRoundTrip, DropRoundingBeforeRounding, FoldConstantTransposeBytes>(
        ctx);
    linalg::populateFoldReshapeOpsByExpansionPatterns(patterns, shouldFuse);
    tensor::populateBubbleUpExpandShapePatterns(patterns);
    affine::AffineApplyOp::getCanonicalizationPatterns(patterns, ctx);
    linalg::GenericOp::getCanonicalizationPatterns(patterns, ctx);
    tensor::ExpandShapeOp::getCanonicalizationPatterns(patterns, ctx);
    tensor::CollapseShapeOp::getCanonicalizationPatterns(patterns, ctx);
    ctx->getLoadedDialect<linalg::LinalgDialect>()->getCanonicalizationPatterns(patterns);
    linalg::populateConstantFoldLinalgOperations(patterns, shouldFuse);
    GreedyRewriteConfig config = mithril::withoutRegionSimplification();
    config.setUseTopDownTraversal(true);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns), config)))
      return signalPassFailure();
    RewritePatternSet rounding(ctx);
    rounding.add<RoundThroughNarrowFloat>(ctx, /*onBits=*/true);
    if (failed(applyPatternsGreedily(getOperation(), std::move(rounding),
                                     mithril::withoutRegionSimplification())))
      signalPassFailure();
  }
};
} // namespace
