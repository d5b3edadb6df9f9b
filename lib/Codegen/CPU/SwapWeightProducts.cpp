//===- SwapWeightProducts.cpp - a few rows by a large weight, transposed --===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
// C = A * W^T with a weight much larger than A (a Linear layer of a training
// batch) computed as C = (W * A^T)^T: the packed kernel copies its right
// operand into panels, and that operand is then A, not the weight. Between
// two such layers the element-wise op (bias, activation) is computed
// transposed, so that neither transposition is ever done.
//
//===----------------------------------------------------------------------===//

#include "Schedule.h"
#include "mithril/Support/TransposeConstant.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tensor/Utils/Utils.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"

using namespace mlir;
using namespace mithril;
using namespace mithril::cpu;
using namespace mithril::cpu::detail;

/// `product`'s (C's) only user where it can read C^T instead: an
/// element-wise op reading C element for element (32-bit elements: the
/// 16 x 16 register transposes); null otherwise.
static linalg::GenericOp transposedReader(Value product) {
  if (!product.hasOneUse() || !getElementTypeOrSelf(product.getType()).isF32())
    return nullptr;
  OpOperand &use = *product.use_begin();
  auto consumer = dyn_cast<linalg::GenericOp>(use.getOwner());
  if (!consumer || !consumer.hasPureTensorSemantics() || !consumer.isDpsInput(&use) ||
      consumer.getNumLoops() != 2 || consumer.getNumReductionLoops() != 0)
    return nullptr;
  AffineMap identity = AffineMap::getMultiDimIdentityMap(2, product.getContext());
  if (consumer.getMatchingIndexingMap(&use) != identity ||
      llvm::any_of(consumer.getDpsInitsMutable(), [&](OpOperand &init) {
        return consumer.getMatchingIndexingMap(&init) != identity;
      }))
    return nullptr;
  return consumer;
}

/// Reads `product`'s (C's) only user through C^T, `swapped`, where
/// transposedReader allows: the transposition back then happens in its
/// 16 x 16 register tiles (a Transpose kernel), not in a pass of its own
/// before it (the MLP at batch 256: its bias and ReLU read and wrote C once
/// more for each layer).
static bool readTransposedInConsumer(IRRewriter &rewriter, Value product, Value swapped) {
  linalg::GenericOp consumer = transposedReader(product);
  if (!consumer)
    return false;
  OpOperand &use = *product.use_begin();
  SmallVector<AffineMap> maps = consumer.getIndexingMapsArray();
  maps[use.getOperandNumber()] =
      AffineMap::getPermutationMap(ArrayRef<unsigned>{1, 0}, rewriter.getContext());
  rewriter.modifyOpInPlace(consumer, [&] {
    use.set(swapped);
    consumer.setIndexingMapsAttr(rewriter.getAffineMapArrayAttr(maps));
    // (Its tile, chosen for rows, is chosen again: 16 x 16.)
    consumer->removeAttr(LoweringConfigAttr::opAttrName);
  });
  return true;
}

/// `value` transposed ([r, c] -> [c, r]) into a new tensor.
static Value transposed(IRRewriter &rewriter, Location loc, Value value) {
  auto type = cast<RankedTensorType>(value.getType());
  Value init = tensor::EmptyOp::create(rewriter, loc,
                                       ArrayRef<int64_t>{type.getDimSize(1), type.getDimSize(0)},
                                       type.getElementType());
  return linalg::TransposeOp::create(rewriter, loc, value, init, ArrayRef<int64_t>{1, 0})
      ->getResult(0);
}

/// The 2-D element-wise generic computing `value`, which only one op reads
/// (the product about to swap), which neither reads its init nor its
/// indices, and which reads some input through `map`; null otherwise.
static linalg::GenericOp elementwiseProducer(Value value, AffineMap map,
                                             function_ref<bool(Value)> inputIs) {
  auto generic = value.getDefiningOp<linalg::GenericOp>();
  if (!generic || !value.hasOneUse() || generic->getNumResults() != 1 ||
      !generic.hasPureTensorSemantics() || generic.getNumLoops() != 2 ||
      generic.getNumParallelLoops() != 2 || generic.hasIndexSemantics())
    return nullptr;
  OpOperand *init = generic.getDpsInitOperand(0);
  if (!generic.getMatchingIndexingMap(init).isIdentity() ||
      generic.payloadUsesValueFromOperand(init))
    return nullptr;
  if (llvm::none_of(generic.getDpsInputOperands(), [&](OpOperand *input) {
        return generic.getMatchingIndexingMap(input) == map && inputIs(input->get());
      }))
    return nullptr;
  return generic;
}

/// Where computing `a` transposed saves a transposed read: its producer
/// reads some operand through [i, j] -> [j, i] (a swapped product's
/// consumer, readTransposedInConsumer).
static linalg::GenericOp transposableProducer(Value a) {
  AffineMap swap = AffineMap::getPermutationMap(ArrayRef<unsigned>{1, 0}, a.getContext());
  return elementwiseProducer(a, swap, [](Value) { return true; });
}

/// `generic` (transposableProducer) computed over its loops swapped: its
/// result transposed, every operand it read through [i, j] -> [j, i] now
/// read element for element. An MLP's bias and ReLU between two swapped
/// products then write the next product's A^T directly, and are the
/// element-wise epilogue of the product before them (productEpilogue):
/// the result is never transposed into place and back.
static Value computeTransposed(IRRewriter &rewriter, linalg::GenericOp generic) {
  MLIRContext *ctx = rewriter.getContext();
  AffineMap swap = AffineMap::getPermutationMap(ArrayRef<unsigned>{1, 0}, ctx);
  SmallVector<AffineMap> maps;
  for (OpOperand *input : generic.getDpsInputOperands())
    maps.push_back(generic.getMatchingIndexingMap(input).compose(swap));
  maps.push_back(AffineMap::getMultiDimIdentityMap(2, ctx));
  auto type = cast<RankedTensorType>(generic->getResult(0).getType());
  Location loc = generic.getLoc();
  rewriter.setInsertionPoint(generic);
  Value init = tensor::EmptyOp::create(rewriter, loc,
                                       ArrayRef<int64_t>{type.getDimSize(1), type.getDimSize(0)},
                                       type.getElementType());
  auto transposedOp =
      linalg::GenericOp::create(rewriter, loc, TypeRange{init.getType()}, generic.getDpsInputs(),
                                ValueRange{init}, maps, generic.getIteratorTypesArray());
  transposedOp->setDiscardableAttrs(generic->getDiscardableAttrDictionary());
  transposedOp->removeAttr(LoweringConfigAttr::opAttrName);
  IRMapping mapping;
  generic.getRegion().cloneInto(&transposedOp.getRegion(), mapping);
  return transposedOp->getResult(0);
}

/// The static loop ranges of a product of two bf16 operands into float32
/// sums; empty for any other.
static SmallVector<int64_t> bf16ProductRanges(linalg::MatmulOp matmul) {
  auto isBF16 = [](Value v) { return getElementTypeOrSelf(v.getType()).isBF16(); };
  if (!isBF16(matmul.getDpsInputOperand(0)->get()) ||
      !isBF16(matmul.getDpsInputOperand(1)->get()) ||
      !getElementTypeOrSelf(matmul.getDpsInitOperand(0)->get().getType()).isF32())
    return {};
  SmallVector<int64_t> ranges = cast<linalg::LinalgOp>(matmul.getOperation()).getStaticLoopRanges();
  if (llvm::any_of(ranges, ShapedType::isDynamic))
    return {};
  return ranges;
}

/// (One core of an Intel Xeon with AMX, the bf16 MLP 784-512-512-10 with its
/// weights passed, launches alternated: batch 16 0.25 -> 0.05 ms, from lane
/// sums of vdpbf16ps on the weight's rows; 32 0.11 -> 0.07, 64 0.19 ->
/// 0.12, 256 0.49 -> 0.45, from tiles of the weight packed into pairs each
/// call; two threads, batch 16 0.15 -> 0.05. Rows that are not whole tiles
/// are padded to whole tiles with zeros: batch 2, 4, 8 and 12 0.050, 0.074,
/// 0.14 and 0.20 -> 0.037, 0.041, 0.044 and 0.045 from vdpbf16ps. One row
/// stays on those (0.033 against 0.043), and on two threads, which split
/// the lane sums but gain nothing on tiles, so do two and three rows (batch
/// 2 0.027 against 0.040; batch 4 0.044 against 0.040).
/// From 128 rows the packed weight's cost is spread over enough rows, and
/// the unswapped product keeps its bias and activation as its epilogue, in
/// one parallel region: 256 rows gained 7% on one thread, and on two the
/// result's transposition back was a region of its own.)
bool Scheduler::swapsOntoTiles(linalg::MatmulOp matmul) const {
  SmallVector<int64_t> ranges = bf16ProductRanges(matmul);
  Type et = BFloat16Type::get(matmul.getContext());
  if (ranges.empty() || !strategy.registers.tilesFor(et))
    return false;
  int64_t minRows = strategy.threads > 1 ? kSwapTileMinRowsThreaded : kSwapTileMinRows;
  return ranges[0] >= minRows && ranges[0] <= kSwapTileMaxRows && ranges[1] % kAmxTileRows == 0 &&
         ranges[2] >= amxStepElements(et);
}

/// (One core of an AMD EPYC Zen 4, the bf16 MLP 784-512-512-10 with its
/// weights passed, launches alternated, outputs identical: batch 32 0.243
/// -> 0.211 ms, 64 0.450 -> 0.410, 128 0.87 -> 0.816, 256 1.80-1.96 ->
/// 1.82-1.84, the packing of the weight's pairs each call traded for
/// x^T's; two threads level at 64 to 256, batch 32 0.131-0.155 -> 0.123-0.128.)
bool Scheduler::swapsOnPairProducts(linalg::MatmulOp matmul, bool aComesTransposed) const {
  SmallVector<int64_t> ranges = bf16ProductRanges(matmul);
  if (ranges.empty() || !strategy.registers.bf16DotProduct ||
      strategy.registers.tilesFor(BFloat16Type::get(matmul.getContext())))
    return false;
  // Rows past the matrix-vector products', in whole panels of C^T's
  // register tile (32 columns; the sizes measured: 48 or 80 would leave a
  // panel's remainder); columns past the narrow layers' lane sums; whole
  // pairs. Fewer columns where A comes transposed from a swapped product
  // (the MLP's last layer, 10 columns): A's lane sums would otherwise read A
  // from a transposition back, and the swapped product packs A^T as the
  // layer before packed its own.
  int64_t panel = strategy.registers.columns(cast<linalg::LinalgOp>(matmul.getOperation()));
  return ranges[0] > kGemvMaxRows && ranges[0] % panel == 0 &&
         (ranges[1] >= kGemvNarrowColumns || aComesTransposed) && ranges[2] % 2 == 0;
}

std::optional<Scheduler::WeightSwap> Scheduler::weightSwap(linalg::MatmulOp matmul,
                                                           bool aComesTransposed) const {
  if (!matmul.hasPureTensorSemantics() || matmul.hasUserDefinedMaps())
    return std::nullopt;
  WeightSwap swap;
  Value b = matmul.getDpsInputOperand(1)->get();
  swap.transpose = b.getDefiningOp<linalg::TransposeOp>();
  if (swap.transpose && swap.transpose.getPermutation() != ArrayRef<int64_t>{1, 0})
    swap.transpose = nullptr;
  // A weight compiled in reaches the schedule transposed already (W^T, a
  // constant of its own since the elementwise fusion).
  if (!swap.transpose && (!b.hasOneUse() || !matchPattern(b, m_Constant(&swap.compiledIn)) ||
                          swap.compiledIn.isSplat()))
    return std::nullopt;
  // Float products of one type, and bf16 ones on AMX tiles or on pair
  // products (swapsOntoTiles, swapsOnPairProducts; int8 has its own forms).
  Value a = matmul.getDpsInputOperand(0)->get();
  Value c = matmul.getDpsInitOperand(0)->get();
  Type et = getElementTypeOrSelf(c.getType());
  SmallVector<int64_t> ranges = cast<linalg::LinalgOp>(matmul.getOperation()).getStaticLoopRanges();
  if (llvm::any_of(ranges, ShapedType::isDynamic))
    return std::nullopt;
  int64_t rows = ranges[0], columns = ranges[1], depth = ranges[2];
  // Where A is computed by an op that reads a swapped product transposed,
  // A^T costs nothing (computeTransposed).
  swap.aProducer = transposableProducer(a);
  bool bf16Swap =
      swapsOntoTiles(matmul) || swapsOnPairProducts(matmul, aComesTransposed || swap.aProducer);
  if (!bf16Swap && (!isa<Float32Type, Float64Type>(et) || getElementTypeOrSelf(a.getType()) != et ||
                    getElementTypeOrSelf(b.getType()) != et))
    return std::nullopt;
  // (A bf16 weight compiled in is packed into pairs when compiling; C^T
  // padded to whole tiles starts from zeros.)
  if (bf16Swap &&
      (!swap.transpose || (rows % kAmxTileRows != 0 && !c.getDefiningOp<linalg::FillOp>())))
    return std::nullopt;
  // The weight at least kSwapWeightRatio times A: packing it cost more
  // than packing A and transposing the (rows x columns) result back.
  // Where A comes transposed (swap.aProducer), only the (columns x rows)
  // result is transposed back: the MLP's last layer, 10 columns.
  if (columns < kSwapWeightRatio * rows && !swap.aProducer && !aComesTransposed)
    return std::nullopt;
  // While A^T, packed, stays within twice the L2: on one or two threads,
  // its reduction whole (below), the split along A's rows. Zen 4, 1 MiB
  // L2, Linear layers with bias and ReLU, alternated launches: 128 x 4096
  // -> 4096 12% faster swapped on two threads, 256 x 2048 -> 1024 7%,
  // 512 x 1024 -> 2048 4% (8% on one), the MLP at batch 256 5%; 1024 x
  // 1024 -> 4096 (A^T 4 MiB) 3% slower on one thread and on two.
  int64_t packedBytes =
      rows * depth *
      static_cast<int64_t>(getElementTypeOrSelf(a.getType()).getIntOrFloatBitWidth() / 8);
  if (packedBytes > 2 * strategy.l2Bytes)
    return std::nullopt;
  // A weight compiled in is packed when compiling, so swapping saves no
  // packing; it pays on two or more threads from kSwapCompiledInRows rows,
  // where each thread then reads its own rows of the weight in place
  // instead of all of its panels (split by rows) or of A (by columns).
  // Intel Xeon Emerald Rapids (no AMX), two threads, the MLP 784-512-512-10
  // with its weights compiled in, alternated in one process: batch 256
  // 1.196-1.228 -> 1.131-1.137 ms (as fast as with the weights passed);
  // batch 128 0.641 -> 0.718 and 64 0.298 -> 0.318 swapped, so those stay;
  // one thread at 256 stays too (2.175 unswapped against 2.256).
  if (swap.compiledIn && (strategy.threads < 2 || rows < kSwapCompiledInRows))
    return std::nullopt;
  return swap;
}

bool Scheduler::swapsAfterSwappedProduct(linalg::MatmulOp matmul) const {
  Value a = matmul.getDpsInputOperand(0)->get();
  AffineMap identity = AffineMap::getMultiDimIdentityMap(2, a.getContext());
  // A product that swaps and whose consumer, A's producer, will then read
  // it transposed: A comes transposed, and `matmul` swaps too.
  auto producer = a.getDefiningOp<linalg::GenericOp>();
  auto readsSwappedProduct = [&](Value input) {
    auto product = input.getDefiningOp<linalg::MatmulOp>();
    return product && transposedReader(input) == producer && weightSwap(product).has_value();
  };
  return producer && elementwiseProducer(a, identity, readsSwappedProduct) &&
         weightSwap(matmul, /*aComesTransposed=*/true).has_value();
}

void Scheduler::swapWeightProducts(IRRewriter &rewriter, ArrayRef<linalg::LinalgOp> ops) {
  for (linalg::LinalgOp op : ops) {
    auto matmul = dyn_cast<linalg::MatmulOp>(op.getOperation());
    if (!matmul)
      continue;
    std::optional<WeightSwap> swap = weightSwap(matmul);
    if (!swap)
      continue;
    auto [transpose, compiledIn, aProducer] = *swap;
    Value a = matmul.getDpsInputOperand(0)->get();
    Value b = matmul.getDpsInputOperand(1)->get();
    Value c = matmul.getDpsInitOperand(0)->get();
    Type et = getElementTypeOrSelf(c.getType());
    SmallVector<int64_t> ranges = op.getStaticLoopRanges();
    int64_t rows = ranges[0], columns = ranges[1], depth = ranges[2];
    Location loc = matmul.getLoc();
    rewriter.setInsertionPoint(matmul);
    Value weight;
    if (transpose) {
      weight = transpose.getInput();
    } else {
      auto weightType = RankedTensorType::get({columns, depth}, et);
      DenseElementsAttr values = transposeConstant(compiledIn, {1, 0}, weightType);
      if (!values)
        continue;
      weight = arith::ConstantOp::create(rewriter, loc, values);
    }
    Value aT = aProducer ? computeTransposed(rewriter, aProducer) : transposed(rewriter, loc, a);
    rewriter.setInsertionPoint(matmul);
    // On tiles, A^T's columns padded with zeros to whole tiles (C^T's
    // columns past A's rows are then zeros, never read).
    int64_t swappedColumns = rows;
    if (swapsOntoTiles(matmul) && rows % kAmxTileRows != 0) {
      swappedColumns = llvm::alignTo(rows, kAmxTileRows);
      Type aType = getElementTypeOrSelf(aT.getType());
      Value zero =
          arith::ConstantOp::create(rewriter, loc, cast<TypedAttr>(rewriter.getZeroAttr(aType)));
      aT = tensor::createPadHighOp(RankedTensorType::get({depth, swappedColumns}, aType), aT, zero,
                                   /*nofold=*/false, loc, rewriter);
    }
    auto fill = c.getDefiningOp<linalg::FillOp>();
    // On pair products, a weight of fewer rows than the lane sums take (the
    // MLP's last layer, 10 classes) padded with zero rows to whole register
    // tiles: the rows the tiles leave would be a product of their own, which
    // packs A^T's pairs a second time (on two threads, alone while the other
    // waits: 10 rows as 8 + 2 took 31 us of the MLP at batch 256 on a Zen 5,
    // padded to 12, 18 us). (The tile's rows are the strategy's for a probe
    // of the product's shape.)
    int64_t swappedRows = columns;
    if (fill && columns < kGemvNarrowColumns &&
        swapsOnPairProducts(matmul, /*aComesTransposed=*/true)) {
      Value probeC =
          tensor::EmptyOp::create(rewriter, loc, ArrayRef<int64_t>{columns, swappedColumns}, et);
      auto probe = linalg::MatmulOp::create(rewriter, loc, TypeRange{probeC.getType()},
                                            ValueRange{weight, aT}, ValueRange{probeC});
      int64_t tileRows =
          strategy.registers.matmulRows(cast<linalg::LinalgOp>(probe.getOperation()));
      rewriter.eraseOp(probe);
      rewriter.eraseOp(probeC.getDefiningOp());
      if (columns % tileRows != 0) {
        swappedRows = llvm::alignTo(columns, tileRows);
        Type weightType = getElementTypeOrSelf(weight.getType());
        Value zero = arith::ConstantOp::create(rewriter, loc,
                                               cast<TypedAttr>(rewriter.getZeroAttr(weightType)));
        weight = tensor::createPadHighOp(RankedTensorType::get({swappedRows, depth}, weightType),
                                         weight, zero, /*nofold=*/false, loc, rewriter);
      }
    }
    // C^T starts from what C started from: zeros, or C transposed.
    // (A fill of its own, into an alloc_tensor as unshareFills makes them:
    // two equal fills of empty tensors would merge, and bufferization copy
    // the shared one.)
    Value cT;
    if (fill) {
      Value dest = bufferization::AllocTensorOp::create(
          rewriter, loc, RankedTensorType::get({swappedRows, swappedColumns}, et), ValueRange{});
      cT = linalg::FillOp::create(rewriter, loc, fill.getInputs(), dest)->getResult(0);
    } else {
      cT = transposed(rewriter, loc, c);
    }
    auto swapped = linalg::MatmulOp::create(rewriter, loc, TypeRange{cT.getType()},
                                            ValueRange{weight, aT}, ValueRange{cT});
    // One reduction block as deep as the reduction (up to
    // kDeepReductionBlock): the weight is read in place, so a deeper block
    // packs no more, and each accumulator tile of C^T is loaded and stored
    // once instead of once per block (784 inputs: 7 blocks of 112). Zen 4,
    // one thread, alternated launches: the MLP at batch 256 3.16 -> 3.10 ms,
    // its training step at batch 128 4.39 -> 4.16 ms (launch minima).
    if (!strategy.cacheTileGiven) {
      LoweringConfigAttr config = cpu::selectLoweringConfig(swapped, strategy);
      SmallVector<int64_t> block(config.getCacheTile());
      block[2] = std::max(block[2], std::min(depth, kDeepReductionBlock));
      setLoweringConfig(swapped, config.withCacheTile(block));
    }
    Value result = swapped->getResult(0);
    if (swappedColumns != rows || swappedRows != columns)
      result = tensor::ExtractSliceOp::create(
          rewriter, loc, result, getAsIndexOpFoldResult(ctx, {0, 0}),
          getAsIndexOpFoldResult(ctx, {columns, rows}), getAsIndexOpFoldResult(ctx, {1, 1}));
    if (readTransposedInConsumer(rewriter, matmul->getResult(0), result))
      rewriter.eraseOp(matmul);
    else
      rewriter.replaceOp(matmul, transposed(rewriter, loc, result));
    // The weight's transpose, or the constant W^T it replaced.
    if (Operation *source = b.getDefiningOp(); source->use_empty())
      rewriter.eraseOp(source);
    if (fill && fill->use_empty())
      rewriter.eraseOp(fill);
    if (aProducer && aProducer->use_empty())
      rewriter.eraseOp(aProducer);
  }
}
