//===- Schedule.h - the CPU schedule's steps -------------------*- C++ -*-===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
// Internal to lib/Codegen/CPU: the steps of mithril-cpu-schedule, defined in
// CpuSchedule.cpp (thread splits, cache blocks, register tiles), MatrixVector.cpp
// (matrix-vector products on a weight's layout) and Packing.cpp (packed panels
// and the dot-product kernels).
//
//===----------------------------------------------------------------------===//

#ifndef MITHRIL_LIB_CODEGEN_CPU_SCHEDULE_H
#define MITHRIL_LIB_CODEGEN_CPU_SCHEDULE_H

#include "mithril/Codegen/CPU/CpuStrategy.h"
#include "mithril/Conversion/MithrilToLinalg/MithrilToLinalg.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"

namespace mithril::cpu::detail {

using namespace mlir;

/// The elements one 32-bit lane of a dot-product instruction multiplies and
/// sums along the reduction: pairs of bf16 (vdpbf16ps), quads of i8
/// (vpdpbusd).
inline int64_t dotProductGroup(Type element) { return element.isBF16() ? 2 : 4; }
/// vpdpbusd multiplies unsigned by signed bytes: the signed activations are
/// offset by this (their sign bit flipped), and the products of the offset by
/// each column's weights are subtracted again.
inline constexpr int64_t kInt8Offset = 128;

/// The loop order of a matrix-vector tile nest: columns (weight rows)
/// outermost, so that each block of the weight is read once while the few
/// rows of the left operand stay in cache.
inline SmallVector<int64_t> gemvInterchange(linalg::LinalgOp op) {
  AffineMap out = op.getIndexingMapMatchingResult(op->getResult(0));
  SmallVector<int64_t> order = {out.getDimPosition(1), out.getDimPosition(0)};
  for (int64_t i = 0, e = op.getNumLoops(); i < e; ++i)
    if (!llvm::is_contained(order, i))
      order.push_back(i);
  return order;
}

/// Convolutions (and packed matmul blocks) are tiled in two levels
/// (tileForRegisters) and with their unit loops dropped before vectorization.
inline bool isConvolutionTile(Operation *op) {
  CpuKernel kernel = getCpuKernel(op);
  return kernel == CpuKernel::ConvSpatial || kernel == CpuKernel::ConvFlat ||
         kernel == CpuKernel::ConvChannelsLast || kernel == CpuKernel::ConvFlatWeightGrad ||
         kernel == CpuKernel::PackedMatmul;
}

inline bool hasKernel(Operation *op, CpuKernel kernel) { return getCpuKernel(op) == kernel; }

/// Fits tile sizes to static loop ranges: a loop no longer than its tile is
/// not tiled (0), and other tiles shrink to a size that divides the loop
/// (a partial tile would have a dynamic shape and stay scalar): a power of 2
/// where one is at least half the tile, else the largest divisor.
/// Dynamic loops keep their tile when `tileDynamic`, and are left whole
/// otherwise.
inline void fitTilesToLoops(MutableArrayRef<int64_t> sizes, ArrayRef<int64_t> ranges,
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
    if (range % size == 0)
      continue;
    // A power of 2 of at least half the tile, where one divides the loop,
    // over the largest divisor: 16 columns of 784 are whole vectors, 28
    // were 16 + 8 + 4 lanes.
    int64_t divisor = size, powerOf2 = llvm::bit_floor(static_cast<uint64_t>(size));
    while (range % divisor != 0)
      --divisor;
    while (powerOf2 > 1 && range % powerOf2 != 0)
      powerOf2 /= 2;
    size = 2 * powerOf2 >= size ? powerOf2 : divisor;
  }
}

inline bool touchesBooleans(Operation *op) {
  auto isBool = [](Type t) { return getElementTypeOrSelf(t).isInteger(1); };
  return llvm::any_of(op->getOperandTypes(), isBool) || llvm::any_of(op->getResultTypes(), isBool);
}

/// The last op of the elementwise chain that consumes `op`: single uses into
/// all-parallel linalg ops with an identity output map and the same result
/// shape (a matmul's bias and activation, say, and the rounding of a bf16
/// model's float32 product to bf16).
inline SmallVector<linalg::LinalgOp> elementwiseChain(linalg::LinalgOp op) {
  auto shape = [](Value v) { return cast<ShapedType>(v.getType()).getShape(); };
  SmallVector<linalg::LinalgOp> chain = {op};
  while (chain.back()->getNumResults() == 1 && chain.back()->hasOneUse()) {
    auto user = dyn_cast<linalg::LinalgOp>(*chain.back()->getUsers().begin());
    if (!user || !user.hasPureTensorSemantics() || user->getNumResults() != 1 ||
        user.getNumParallelLoops() != user.getNumLoops() ||
        !user.getIndexingMapMatchingResult(user->getResult(0)).isIdentity() ||
        shape(user->getResult(0)) != shape(chain.back()->getResult(0)))
      break;
    chain.push_back(user);
  }
  return chain;
}

/// The block [offsets, offsets + sizes) of a matrix constant of whole-byte
/// elements, padded with zeros at the end to `padded` (the block's own sizes
/// if empty); null for any other constant.
DenseElementsAttr sliceOfMatrix(DenseElementsAttr attr, ArrayRef<int64_t> offsets,
                                ArrayRef<int64_t> sizes, ArrayRef<int64_t> padded = {});

/// The reduction block, in steps, of a bf16 product on AMX tiles whose strip
/// of C stays in L2 (Scheduler::tileReductionBlock).
inline constexpr int64_t kShallowTileReduction = 256;

/// One run of the schedule: the context and what the strategy sizes for.
class Scheduler {
public:
  Scheduler(MLIRContext *ctx, const StrategyOptions &strategy) : ctx(ctx), strategy(strategy) {}

  MLIRContext *ctx;
  StrategyOptions strategy;

  /// What the strategy sizes the tiles for (the target's registers and L2,
  /// and the pass options).
  /// Gives an op the schedule creates the config of `kernel` that the
  /// strategy chooses for it: the register tile, and before the ops are split
  /// across threads (`beforeSplit`) the thread split.
  void configureTile(Operation *op, CpuKernel kernel, bool beforeSplit = false) const;

  /// A matmul with at most kGemvMaxRows rows (or fewer than kGemvNarrowColumns
  /// columns) whose right operand is a transposed matrix (a Linear layer's
  /// weight, stored [out, in]) becomes a
  /// matrix-vector product on the weight's own layout: the reduction is split
  /// into steps of kGemvLanes lanes of partial sums, so that each step reads
  /// contiguous rows of the weight and does full-width FMAs, and the lanes
  /// are summed once at the end. The transpose is no longer materialized.
  LogicalResult rewriteMatrixVectorProducts(IRRewriter &rewriter, ArrayRef<linalg::LinalgOp> ops);
  /// The parts of its reduction a matrix-vector product of `rows` rows and
  /// `steps` steps of `lanes` `element`s takes, one after the other, so that
  /// A's part stays in L1 (MatrixVector.cpp).
  int64_t matrixVectorReductionParts(int64_t rows, int64_t steps, int64_t lanes,
                                     Type element) const;

  /// A reduction of a whole tensor to one value (a loss's mean, an int8
  /// activation's max|x|) accumulates in vector lanes: its input, viewed
  /// flat, is reduced into kFullReductionLanes partial values (independent
  /// registers) that are combined once at the end. Tiled as it was, each
  /// register tile was reduced across its lanes into the scalar (max|x| of
  /// 256 x 784: 0.33 ms, about 15 times the memory's time).
  LogicalResult splitFullReductions(IRRewriter &rewriter, ArrayRef<linalg::LinalgOp> ops);

  /// Partial reductions (of splitFullReductions) that read the same tensor
  /// the same way become one op with a result each: the input is read once
  /// for all of them (an int8 activation's minimum and maximum, one pass
  /// over x instead of two).
  void mergeSiblingPartials(IRRewriter &rewriter, ArrayRef<linalg::GenericOp> partials);

  /// A bf16 matmul of many rows and few columns (the 10 classes of a last
  /// layer) on a transposed weight, for AMX tiles: the weight padded with
  /// zero rows to one tile of 16 columns, the result the first columns of
  /// the padded product. Fails (and leaves the matmul) unless the target has
  /// bf16 tiles, the rows are whole tiles, the columns 4 to 15 and the
  /// reduction at least one step of tiles.
  LogicalResult padColumnsForTiles(IRRewriter &rewriter, linalg::MatmulOp matmul,
                                   linalg::TransposeOp transpose);

  /// The bf16 form of a matrix-vector product for vdpbf16ps: A [m][k] and
  /// the weight W [n][k] viewed as [.][k / 32][16][2], partial sums P[m][n]
  /// [16] accumulating A[m][kk][l][p] * W[n][kk][l][p] over kk and p (one
  /// vdpbf16ps per row, column and 32 reduction steps: both operands read
  /// contiguously), then summed over the 16 lanes. Fails (and leaves the
  /// matmul) unless both operands are bf16, the target has AVX512-BF16 and
  /// the reduction is a multiple of 32.
  LogicalResult rewriteBF16MatrixVectorProduct(IRRewriter &rewriter, linalg::MatmulOp matmul,
                                               linalg::TransposeOp transpose);

  /// The int8 form for vpdpbusd, for a weight compiled in (a constant
  /// [k][n] of int8 levels, mithril-quantize-int8's): the weight is stored
  /// transposed, W [n][k] viewed as [.][k / 64][16][4], and partial sums
  /// P[m][n][16] accumulate zext(W ^ 0x80) * sext(A) over each lane's four
  /// bytes (one vpdpbusd per row, column and 64 reduction steps, both
  /// operands contiguous); the lanes are summed into C less 128 times each
  /// row's sum of A (what the weight's offset added); a reduction that is
  /// no multiple of 64 is padded with zeros. Fails (and leaves the matmul)
  /// unless the target has AVX512-VNNI and the reduction is at least 128.
  LogicalResult rewriteInt8MatrixVectorProduct(IRRewriter &rewriter, linalg::MatmulOp matmul);

  /// A bf16 matmul of a weight compiled in, on a 512-bit target whose bf16
  /// products widen to float32, of at least kWidenCompiledInRows rows: a
  /// float32 product of the weight converted when compiling and A widened
  /// (WidenBF16Products.cpp).
  void widenCompiledInBF16Products(IRRewriter &rewriter, ArrayRef<linalg::LinalgOp> ops);

  /// A matmul C = A * W^T (a Linear layer's weight, stored [out, in]) of
  /// float32 or float64 (or bf16 on AMX tiles or on pair products:
  /// swapsOntoTiles, swapsOnPairProducts) whose weight has at least
  /// kSwapWeightRatio times as many columns as A has rows (a training batch)
  /// becomes C = (W * A^T)^T: the packed kernel then copies A^T into panels
  /// instead of the weight (whose panels took the MLP's first layer 17% of
  /// its product at batch 64), and broadcasts the weight's elements from
  /// where they lie. The result comes back through a transpose of C, or,
  /// where an element-wise op computes A from a product swapped before, A^T
  /// comes from that op run over its loops swapped (then that product's
  /// epilogue), whatever the ratio. A weight compiled in (a constant W^T by
  /// then) is transposed back when compiling and swapped too, on two or more
  /// threads from kSwapCompiledInRows rows.
  void swapWeightProducts(IRRewriter &rewriter, ArrayRef<linalg::LinalgOp> ops);

  /// How swapWeightProducts swaps `matmul`: the weight's transpose or the
  /// compiled-in W^T, and the op computing A where it computes A^T instead;
  /// none where it stays. `aComesTransposed` says A will come so (the
  /// product before it swaps; swapsAfterSwappedProduct).
  struct WeightSwap {
    linalg::TransposeOp transpose;
    DenseElementsAttr compiledIn;
    linalg::GenericOp aProducer;
  };
  std::optional<WeightSwap> weightSwap(linalg::MatmulOp matmul,
                                       bool aComesTransposed = false) const;
  /// Whether `matmul` will swap because its A is computed element for
  /// element from a product that swaps (whose consumer then reads it
  /// transposed, so that A too comes transposed at no cost): asked before
  /// swapWeightProducts runs.
  bool swapsAfterSwappedProduct(linalg::MatmulOp matmul) const;
  /// Whether `matmul` is a bf16 product on AMX tiles of kSwapTileMinRows to
  /// kSwapTileMaxRows rows, which swaps where weightSwap's sizes allow,
  /// matrix-vector products included: the weight's rows, read in place, are
  /// then the tiles' A, and only A^T is packed into pairs (its columns
  /// padded to whole tiles), not the weight each call.
  bool swapsOntoTiles(linalg::MatmulOp matmul) const;
  /// Whether `matmul` is a bf16 product of more than kGemvMaxRows rows (a
  /// multiple of 32) on vdpbf16ps pair products without AMX tiles (Zen 4),
  /// which swaps where weightSwap's sizes allow: the weight's rows are then
  /// the register tiles' broadcast pairs, read in place, and A^T's pairs
  /// are packed instead of the weight's. A layer of fewer columns than the
  /// lane sums' (the MLP's last) swaps only where `aComesTransposed`.
  bool swapsOnPairProducts(linalg::MatmulOp matmul, bool aComesTransposed = false) const;

  /// Splits a matmul whose sizes the register tiles and cache blocks do not
  /// divide into the part they divide and the rest, until they do: columns
  /// at a multiple of the register tile's (784 = 24 x 32 + 16), then of the
  /// cache block's (992 = 3 x 256 + 224), and rows at a multiple of the
  /// register tile's. Tiles must divide their loop to keep static shapes,
  /// and with the largest divisor instead (28 columns for 784, 248 x 31 for
  /// 1000 x 992) a 512 x 64 x 784 matmul took 8 ms instead of 0.25, and a
  /// 1000^3 one ran at 5 GFLOP/s (partial vectors, and no packing).
  LogicalResult peelMatmulRemainders(IRRewriter &rewriter, ArrayRef<linalg::LinalgOp> ops);
  /// The narrow rests of columns peelMatmulRemainders splits off as
  /// matrix-vector products where they take one; the rests left matmuls.
  FailureOr<SmallVector<Operation *>> narrowRestsAsMatrixVector(IRRewriter &rewriter,
                                                                ArrayRef<Operation *> rests);
  /// The element-wise op that alone reads a float matmul's result, element
  /// for element (an SGD update, a bias and activation); null otherwise.
  linalg::GenericOp productEpilogue(linalg::LinalgOp op) const;
  /// Splits the epilogue of a matmul that peelMatmulRemainders split into
  /// two parts at the same place, each piece reading its part directly.
  void splitEpilogueWithParts(IRRewriter &rewriter, linalg::GenericOp epilogue,
                              unsigned productOperand, unsigned dimension, int64_t at,
                              Operation *firstPart, Operation *secondPart);

  /// Splits the reduction of a matmul whose blocks would run on AMX tiles
  /// but for a reduction of no whole 64-byte steps (784 bf16 = 24 steps of
  /// 32 + 16) into the whole steps and the rest, the rest padded with zeros
  /// to one step and accumulating into the first part's result on tiles too
  /// (a block's tiles must all have one shape). A transposed right operand
  /// (a Linear layer's weight) is split before its transpose, and a
  /// constant one folds into constants, so that both parts still pack from
  /// the weight itself.
  void splitReductionsForTiles(IRRewriter &rewriter, ArrayRef<linalg::LinalgOp> ops);

  /// The reduction block (in elements) of matmul `op` on AMX tiles:
  /// kShallowTileReduction for bf16 while the strip of C it reloads takes a
  /// quarter of the L2 or less, else four times the cache tile's (every
  /// block loads and stores the accumulator tiles).
  int64_t tileReductionBlock(linalg::LinalgOp op) const;

  static SmallVector<linalg::LinalgOp> collectTensorOps(ModuleOp module);

  /// The tile levels of a convolution's weight gradient (loops f, c, kh, kw,
  /// lane, n, block): first channel tiles over a few images, whose rows of
  /// input and output gradient then stay in L1 while all kernel positions
  /// (the second level) read them; then the reductions. Without the image
  /// chunks every kernel position streams all images from L2.
  static SmallVector<SmallVector<int64_t>>
  weightGradLevels(linalg::LinalgOp op, ArrayRef<int64_t> parallel, ArrayRef<int64_t> reduction);

  /// Tiles every op to its config's register tile. A convolution is
  /// tiled in two levels: its parallel loops, then the reductions of the
  /// tile, whose loops then carry just the tile's accumulator (and hoisting
  /// keeps it in registers).
  LogicalResult tileForRegisters(IRRewriter &rewriter, ArrayRef<linalg::LinalgOp> ops);

  /// The levels of tiles tileForRegisters makes of `op`, outermost first,
  /// without the levels that tile nothing.
  SmallVector<SmallVector<int64_t>> registerTileLevels(linalg::LinalgOp op) const;

  /// Tiles `root` with `options`, fusing into its tiles the producers in
  /// `fusible` (and only those), and points the uses of its results at the
  /// tiled ones.
  static FailureOr<scf::SCFTileAndFuseResult>
  tileAndFuse(IRRewriter &rewriter, Operation *root, scf::SCFTileAndFuseOptions options,
              const llvm::DenseSet<Operation *> &fusible);

  /// Tiles each lane sum of a matrix-vector product by the product's register
  /// tile (rows x columns) and computes the partial sums of the tile inside,
  /// from a zero-filled accumulator: the lanes of a tile are summed while
  /// still in registers, and the [rows, columns, lanes] partial sums never
  /// go to memory (at batch 16 they were a third of the weight's size).
  /// Where an element-wise op reads the sums (productEpilogue: a bias and
  /// activation), it is the tiles' root, so each tile applies it to its sums
  /// in registers and writes the result once.
  LogicalResult fuseMatrixVectorLanes(IRRewriter &rewriter, ArrayRef<linalg::LinalgOp> ops);
  /// Splits the rows of `tile` (its root, a lane sum or the epilogue after
  /// one, with the lane sum, partial sums and fills fused into it over some
  /// weight rows) at `at`: rows before it in tiles of `rowTileSize`'s, the
  /// rest in tiles of matrixVectorRowSplitRest's.
  LogicalResult splitMatrixVectorRows(IRRewriter &rewriter, ArrayRef<Operation *> tile,
                                      unsigned rowLoop, int64_t at, ArrayRef<int64_t> rowTileSize);

  /// Tiles matmuls larger than a cache block into blocks of their config's
  /// cache tile (rows, columns, reduction): the register tiles then reuse a
  /// block of the right operand from L2 instead of streaming it from memory.
  LogicalResult tileForCache(IRRewriter &rewriter, ArrayRef<linalg::LinalgOp> ops);
  /// Tiles a matmul whose reduction one cache block takes whole in blocks
  /// of rows and columns together with its epilogue (productEpilogue): each
  /// block's product, packed, then its epilogue.
  bool tileWithEpilogue(IRRewriter &rewriter, linalg::LinalgOp op, linalg::GenericOp epilogue,
                        ArrayRef<int64_t> block, llvm::DenseSet<Operation *> &erased);

  /// A matmul into a zero fill, deeper than its reduction block (bf16 on AMX
  /// tiles, float32 or float64 on vector registers), split into that first
  /// block and the rest (which accumulates into the first's result): the
  /// first, whose accumulators start at zero, or null where it does not
  /// apply.
  linalg::MatmulOp splitFirstTileBlock(IRRewriter &rewriter, linalg::LinalgOp op);

  /// When `b` is a unit-stride block of a 2-D linalg.transpose's result, the
  /// same block of the transpose's input (columns and rows swapped); null
  /// otherwise.
  static Value transposedSource(IRRewriter &rewriter, Value b);

  /// Rewrites a matmul block C += A * B so that B is first copied into
  /// panels of one register tile's columns, [columns / cols][k][cols]: the
  /// register tiles then read a panel contiguously (32 KiB that stay in L1
  /// while the row tiles pass) instead of rows a whole matrix apart, which
  /// share a few L1 sets. The product becomes a generic over (m, panel,
  /// column in panel, k) of kernel packed_matmul, on C viewed as
  /// [m][panel][cols]. False when the block does not qualify.
  /// `startsAtZero`: the block's C is known to hold zeros (a zero-filled
  /// output whose reduction is not split into blocks), so an i8 block writes
  /// its offset products instead of subtracting them from C.
  /// With `startsAtZero` (C is a zero fill nothing else reads), sets
  /// `fillUnneeded` when the packed product writes every element of C
  /// without reading it, so that the caller may drop the fill.
  /// `rowsServed`: the rows of the whole product when the caller hoists the
  /// packing out of its row loop (each packed block then serves them all),
  /// else 0 (the block's rows).
  bool packRightOperand(IRRewriter &rewriter, linalg::MatmulOp block, bool startsAtZero = false,
                        bool *fillUnneeded = nullptr, int64_t rowsServed = 0);

  /// The cache block (rows, columns, reduction) of matmul `op`: its
  /// config's, else the strategy's.
  ArrayRef<int64_t> cacheBlockOf(linalg::LinalgOp op) const;

  /// Whether `op`'s rows no register tile divides stay whole until its
  /// blocks are packed (splitRowRemainder then splits each packed product).
  bool packsRowsTogether(linalg::LinalgOp op) const;
  /// Whether such a matmul's rows split once all the same, the rest fewer
  /// than a tile's rows, rather than off each of its many row blocks.
  bool splitsRowRestBeforeBlocks(linalg::LinalgOp op) const;

  /// Splits `op` (a matmul block, or the product packRightOperand builds)
  /// into the rows its register tiles divide and the rest, each configured
  /// for its rows: after packing, both parts read the one packed block.
  void splitRowRemainder(IRRewriter &rewriter, linalg::LinalgOp op);

  /// Splits the tiles' remainders off flat convolutions whose positions are
  /// an odd number of vectors (Winograd's 784 tiles: 768 on two-vector
  /// tiles, then the last vector) and off batch matmuls whose rows or
  /// columns no register tile divides, inside the loops over images (and
  /// channel blocks), each part starting from its own zero fill, so that
  /// the fills still fuse into the register tiles.
  void splitTileRemainders(IRRewriter &rewriter, ArrayRef<linalg::LinalgOp> ops);

  /// Splits element-wise ops and row reductions whose rows are not whole
  /// vectors (1000 float32) into the whole vectors of each row (992, on
  /// tiles of 32) and the rest (8, one partial vector): the register tiles
  /// would otherwise shrink to a divisor of the row (25 lanes, a full and a
  /// masked register per row of the tile).
  void splitColumnRemainders(IRRewriter &rewriter, ArrayRef<linalg::LinalgOp> ops);

  /// Matmuls that kept narrow operands (bf16 or f16 into f32) but were not
  /// packed (too few columns: a Linear layer of 10 outputs) read them
  /// widened: extending each element inside the register tile made a 256 x
  /// 512 x 10 bf16 product 10 times slower than in f32.
  static void widenUnpackedOperands(IRRewriter &rewriter, ArrayRef<linalg::LinalgOp> ops);

  /// `v` with its elements extended to `type` (a float at least as wide).
  static Value widenElements(IRRewriter &rewriter, Location loc, Value v, Type type);
  /// The i8 tensor `v` with each element's sign bit flipped (v + 128 as
  /// unsigned bytes).
  static Value flipSignBits(IRRewriter &rewriter, Location loc, Value v);

  /// The dot-product form of packRightOperand (vdpbf16ps for bf16, vpdpbusd
  /// for i8): B is packed in groups of g consecutive reduction steps side by
  /// side (g = 2 for bf16, 4 for i8), [columns / cols][k / g][cols][g], so
  /// that one 32-bit lane holds the g elements an instruction multiplies by a
  /// broadcast group of A (A viewed as [m][k / g][g]). The product is a
  /// generic over (m, panel, column in panel, k / g, group) that
  /// lowerDotProductTiles writes as dot products. For i8, A's bytes enter the
  /// unsigned operand offset by 128, and 128 times each column's sum of B is
  /// subtracted from the block's sums.
  /// Returns whether the product writes C without reading it (i8 from zero:
  /// the offset products are written first; bf16 from zero on AMX tiles:
  /// kZeroAccumulatorAttr).
  bool packDotProductGroups(IRRewriter &rewriter, linalg::MatmulOp block, Value a, Value b, Value c,
                            bool startsAtZero);

  /// `cPanels` [m][panel][col] minus 128 times each column's sum of the
  /// packed i8 block [panel][k / 4][col][4]: the products of vpdpbusd's
  /// offset, which the block's dot products add. With `overwrite` (C holds
  /// zeros), C is not read.
  static Value subtractOffsetProducts(IRRewriter &rewriter, Location loc, Value packed,
                                      Value cPanels, bool overwrite, Value sums = Value());

  /// Each column's sum of a packed i8 block [panel][k / 4][col][4], as
  /// [panel][col] i32.
  static Value columnSums(IRRewriter &rewriter, Location loc, Value packed);

  /// A block of a constant ([k][n] when `kByN`, else [n][k], through slices
  /// of slices) as packRightOperand packs it, [n / cols][k][cols], or in
  /// groups of `group` > 1 reduction steps as packDotProductGroups does (bf16
  /// pairs, i8 quads), [n / cols][k / group][cols][group]: a slice of the
  /// whole matrix packed when compiling. Null when `block` is no such block.
  static Value packedConstantPanels(IRRewriter &rewriter, Location loc, Value block, bool kByN,
                                    int64_t cols, int64_t group);

  /// A slice of an i8 constant packed as packDotProductGroups packs it, and
  /// its column sums, both computed when compiling (null when `block` is not
  /// a static slice of a constant).
  static std::pair<Value, Value> packedConstant(IRRewriter &rewriter, Location loc, Value block,
                                                bool kByN, int64_t cols, int64_t group);

  /// Fuses each row reduction (a softmax's maximum and sum, a layer norm's
  /// moments, an int8 weight's row scales) into the row blocks of the
  /// element-wise op that reads its result broadcast along the rows, with
  /// the element-wise ops and fills between them: one loop over blocks of
  /// rows (split across threads where the consumer's config splits its
  /// rows), each block's rows read from memory once and reused from L1.
  void fuseRowReductions(IRRewriter &rewriter, ArrayRef<linalg::LinalgOp> ops);
  /// Tiles element-wise `root` by `sizes` (an scf.forall across threads, or
  /// an scf.for), fusing the row reductions it reads and the ops between
  /// them into each tile; the tiled root, or null where it has no such
  /// chain or does not tile. The originals go into `erased`.
  linalg::GenericOp fuseIntoRowTiles(IRRewriter &rewriter, linalg::GenericOp root,
                                     ArrayRef<int64_t> sizes, bool acrossThreads,
                                     llvm::DenseSet<Operation *> &erased);

  /// The tiles of a loop of row or attention blocks get configs for their
  /// own sizes, on their loop's thread (none split across threads again).
  void configureTiles(ArrayRef<Operation *> tiles);

  /// Attention, row block by row block: a batched product of a softmax-like
  /// row chain's result (P * V) tiled over blocks of P's rows, with the
  /// chain and the batched product that computes its scores (Q * K^T) fused
  /// into each block. A block's scores and P stay in the L1 cache, where
  /// the whole [batch, rows, rows] scores went through memory twice. The
  /// chain's ops lose the leading dimensions the products collapse first.
  void fuseAttentionBlocks(IRRewriter &rewriter, ArrayRef<linalg::LinalgOp> ops);

  /// Splits each op with enough work, together with the elementwise chain
  /// that consumes it and the fill that initializes it, into `threads`
  /// chunks of one scf.forall: one parallel region per chain, and the chain
  /// stays fusible inside each chunk.
  LogicalResult splitAcrossThreads(IRRewriter &rewriter, ArrayRef<linalg::LinalgOp> ops);

  /// A convolution tile reads its input at output + kernel position, which
  /// is no permutation of the loops and does not vectorize; with the unit
  /// kernel, channel and row loops dropped, it reads along the output columns
  /// only, as a matmul tile does. Transpose tiles with unit dimensions (a
  /// 1 x 16 x 16 block of packed panels) likewise become 2-D transposes in
  /// registers.
  static void dropTileUnitDims(IRRewriter &rewriter, ModuleOp module);

  /// A tile of a reduction over small windows (a pooling, alone or with
  /// the elementwise ops fusion merged into it) iterates in the order of its
  /// input's layout, [.., oh, kh, ow, kw] instead of [.., oh, ow, kh, kw]:
  /// its input is then read as it lies, without a transpose in registers,
  /// and ReduceSmallWindowsWithShuffles reduces the windows.
  static void orderWindowTiles(IRRewriter &rewriter, ModuleOp module);

  /// All of a static tile as one vector (the dot-product lowerings read
  /// their operands and accumulators whole).
  static Value readWholeTile(IRRewriter &rewriter, Location loc, Value tensor, VectorType type);

  /// `vector` written over all of the static tile `tensor`; the new tensor.
  static Value writeWholeTile(IRRewriter &rewriter, Location loc, Value vector, Value tensor);

  /// sums [rows][cols][16] f32 plus, for every (row, column), the pairwise
  /// products of row `left[row]` and column `right[column]` (32 bf16 each:
  /// 16 lanes of 2 reduction steps): one vdpbf16ps each, or, with `left`
  /// widened to f32 beforehand ([rows][2][16]: even steps, then odd ones),
  /// two FMAs each on `right`'s halves widened in registers.
  Value addBF16DotProducts(IRRewriter &rewriter, Location loc, Value sums, Value left,
                           Value right) const;

  /// Writes the register tiles of packDotProductGroups' products as dot
  /// products: per row, the row's group of A (a pair of bf16, or a quad of i8
  /// offset to unsigned) broadcast to every 32-bit lane, times 16 columns'
  /// groups of B, summed into 16 accumulators by one vdpbf16ps or vpdpbusd.
  /// Each tile is (after dropTileUnitDims) a generic over (m, n, group)
  /// reading A[m][g], B[n][g] and accumulating C[m][n]; one that is not stays
  /// for the vectorizer, which computes the same numbers element by element.
  /// Tiles of the whole reduction that fit the target's AMX tiles get kernel
  /// TileMatmul instead (isTileMatmul), and stay for after bufferization.
  void lowerDotProductTiles(IRRewriter &rewriter, ModuleOp module) const;
  bool isTileMatmul(linalg::GenericOp op) const;

  /// Writes the register tiles of rewriteBF16MatrixVectorProduct's partial
  /// sums as vdpbf16ps: a tile over (rows, columns, one step, 16 lanes,
  /// pair) reads each row of A and of the weight as 32 contiguous bf16 and
  /// adds their pairwise products to the (row, column) lanes.
  void lowerBF16MatrixVectorTiles(IRRewriter &rewriter, ModuleOp module) const;

  /// Writes the register tiles of a bf16 convolution weight gradient's
  /// partial sums (conv_flat_weight_grad over pairs of images: loops f, c,
  /// kh, kw, lane, n / 2, block, pair) as vdpbf16ps: each input channel's
  /// and each output channel's 16 lanes of both images are 32 contiguous
  /// bf16, and one dot product per (output, input) channel adds the pair's
  /// products to its 16 lanes of f32 sums.
  void lowerBF16WeightGradTiles(IRRewriter &rewriter, ModuleOp module) const;

  /// Writes the register tiles of a float matrix-vector product's partial
  /// sums (loops rows, columns, one step, lanes) as FMAs column by column:
  /// the rows of A once, then each weight row and the FMAs that share it.
  static void lowerFloatMatrixVectorTiles(IRRewriter &rewriter, ModuleOp module);

  /// Writes the register tiles of rewriteInt8MatrixVectorProduct's partial
  /// sums as the contractions mithril-x86-dot-products makes vpdpbusd: per
  /// (row, column), 64 bytes of the weight (offset to unsigned) and of A.
  static void lowerInt8MatrixVectorTiles(IRRewriter &rewriter, ModuleOp module);

  /// An op with a loop of static size 0 computes nothing: its results are its
  /// inits (an empty tensor, or the fill of a reduction over nothing). Tiling
  /// it would divide by the zero range.
  static void foldEmptyLoops(IRRewriter &rewriter, ArrayRef<linalg::LinalgOp> ops);

  /// Gives each op that accumulates into a fill shared with others (CSE
  /// merges the equal zero fills of same-shaped outputs: two Linear layers
  /// of 512 outputs) a fill of its own. A shared fill cannot be fused into
  /// one op's tiles or dropped, and bufferization copied it for every op
  /// but the last (512 KiB a layer of an MLP at batch 256).
  static void unshareFills(IRRewriter &rewriter, ArrayRef<linalg::LinalgOp> ops);

  /// An elementwise op that reads and writes whole tensors in order (every
  /// operand's map the identity, or a scalar's) runs over them viewed flat
  /// when their rows are no multiple of a tile's `columns` and the whole
  /// is: rows of 784 (an int8 activation's quantization) were tiles of 28
  /// columns, two vectors of which one masked, and rows of 10 (the logits)
  /// vectors of 10 lanes.
  static void flattenElementwise(IRRewriter &rewriter, ArrayRef<linalg::LinalgOp> ops,
                                 int64_t columns);
};

/// The zero fill that only `op` reads (its init), taken off it: the caller
/// splits `op` and gives each part a fill of its own (fillEachPart), which
/// fuses into the part's register tiles rather than writing the whole
/// output before the parts read it back. Null where there is none.
linalg::FillOp detachAccumulatorFill(linalg::LinalgOp op);

/// Gives each of `parts` (of an op whose fill detachAccumulatorFill took)
/// `fill` over its own init, and erases the original fill.
void fillEachPart(RewriterBase &rewriter, linalg::FillOp fill, ArrayRef<TilingInterface> parts);

/// Erases the ops of `originals` left unread, consumers first, into
/// `erased`: what tiling with fused producers leaves behind.
void eraseUnread(RewriterBase &rewriter, ArrayRef<Operation *> originals,
                 llvm::DenseSet<Operation *> &erased);

/// Rows [offset, offset + rows) of an attention and the leading columns of
/// scores they read.
struct AttentionRows {
  int64_t offset, rows, columns;
};

/// One part of an attention's rows: its product P * V and the ops that
/// compute its P (the scores' product, the chain, their fills).
struct AttentionPart {
  linalg::LinalgOp product;
  llvm::SetVector<Operation *> fusible;
};

/// The parts, of whole blocks of `block` rows, that attention P * V (`pv`,
/// P computed by the softmax-like chain of `members` from the scores of
/// `qk`, over [batch, rows, columns] loops) is cheaper computed in, each
/// with only the leading columns (whole multiples of `quantum`) that a
/// constant additive mask leaves some row of it: the columns after are -inf
/// in every row of the part, which the chain makes zeros of P and ignores in
/// its row reductions (checked on the ops' bodies, for finite data). Empty
/// where no mask hides enough.
SmallVector<AttentionRows> maskedRowParts(ArrayRef<Operation *> members, linalg::LinalgOp qk,
                                          linalg::LinalgOp pv, int64_t block, int64_t quantum);

/// Computes `pv` as `parts`: each a copy of the members and the product on
/// its rows and columns, written into its rows of the result; erases the
/// originals (into `erased`). Failure (and nothing changed) where an op
/// does not take a part's rows.
FailureOr<SmallVector<AttentionPart>> splitAttentionRows(RewriterBase &rewriter,
                                                         ArrayRef<Operation *> members,
                                                         linalg::LinalgOp qk, linalg::LinalgOp pv,
                                                         ArrayRef<AttentionRows> parts,
                                                         llvm::DenseSet<Operation *> &erased);

} // namespace mithril::cpu::detail

#endif // MITHRIL_LIB_CODEGEN_CPU_SCHEDULE_H
