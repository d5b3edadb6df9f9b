//===- CpuStrategy.h - lowering configs for the CPU schedule ----*- C++ -*-===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
// The strategy chooses, per linalg op, the `mithril.lowering_config` that
// mithril-cpu-schedule carries out: the register kernel, the register tile
// sized for the target's vector registers, the cache block of matmuls sized
// for its L2, and the loop split across threads.
//
//===----------------------------------------------------------------------===//

#ifndef MITHRIL_CODEGEN_CPU_CPUSTRATEGY_H
#define MITHRIL_CODEGEN_CPU_CPUSTRATEGY_H

#include "mithril/Codegen/CPU/CpuTarget.h"
#include "mithril/Dialect/Mithril/IR/LoweringConfig.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>
#include <utility>

namespace mithril::cpu {

/// The vector registers register tiles are sized for: 32 of 512 bits with
/// AVX-512, 16 of 256 bits with AVX2 (and 16 of 128 without AVX). A register
/// tile of rows x two registers of accumulators must leave registers for the
/// operands it broadcasts and loads: 8 x 2 = 16 of 32, or 6 x 2 = 12 of 16 (a
/// tile sized for the other would spill, or leave FMA units idle).
struct RegisterFile {
  unsigned bits = 512;
  /// Whether bf16 matmuls multiply pairs of bf16 into f32 lanes (vdpbf16ps)
  /// rather than widen each element first (CpuTarget::bf16PairProducts).
  bool bf16DotProduct = false;
  /// Whether bf16 matrix-vector products (a few rows, or a few columns) keep
  /// their bf16 lanes form: wherever vdpbf16ps exists, fast or not (they
  /// read half the bytes). Where it is slow (bf16DotProduct false), those of
  /// two rows or more multiply on FMAs, A widened once and the weight's rows
  /// in registers; a single row stays on vdpbf16ps.
  bool bf16MatrixVectorDots = false;
  /// Whether i8 matmuls multiply quads of bytes into i32 lanes (vpdpbusd).
  bool int8DotProduct = false;
  /// Whether packed bf16 (i8) matmul blocks run on AMX tiles: register
  /// tiles of kAmxRegisterTileRows x one panel, the block's reduction whole.
  bool bf16Tiles = false;
  bool int8Tiles = false;
  /// Whether float32 matmuls of at least two 64-column panels and a deep
  /// reduction take 6 x 64 register tiles (24 accumulators; per reduction
  /// step 4 loads of B and 6 broadcasts of A feed 24 FMAs, where 8 x 32
  /// feeds 16 with 2 + 8). See wideFloatTile in CpuStrategy.cpp.
  bool wideFloatTiles = false;

  /// Rows of a matmul register tile.
  int64_t rows() const { return bits >= 512 ? 8 : 6; }
  /// Columns of a register tile: two registers of the op's element type per
  /// row (32 f32 or 16 f64 with AVX-512; 16 or 8 with AVX2).
  int64_t columns(mlir::linalg::LinalgOp op) const;
  /// Columns of one vector register of the op's element type (half of
  /// columns(op)): a column rest of whole ones vectorizes as they are.
  int64_t vectorColumns(mlir::linalg::LinalgOp op) const { return columns(op) / 2; }
  /// Rows and columns of the register tile of a matmul (a linalg.matmul
  /// block, or the generic that packing makes of it): rows() x columns(op),
  /// except for bf16 products on vdpbf16ps, 4 rows x 4 registers (64 columns)
  /// where the columns allow (see wideDotProductTile), and wide float32
  /// products with wideFloatTiles, 6 x 64 (see wideFloatTile).
  int64_t matmulRows(mlir::linalg::LinalgOp op) const;
  int64_t matmulColumns(mlir::linalg::LinalgOp op) const;
  /// Whether matmul blocks of `element` inputs run on AMX tiles.
  bool tilesFor(mlir::Type element) const {
    return (bf16Tiles && element.isBF16()) || (int8Tiles && element.isInteger(8));
  }
  /// Columns of the tile of any other op: two registers of f32.
  int64_t elementwiseColumns() const { return bits / 16; }
  /// Lanes of partial sums of a matrix-vector product of `element`s: one
  /// register of f32 or f64 (each accumulator of the register tile one
  /// register, so that AVX2's 16 hold 8 of them), kGemvLanes otherwise.
  int64_t matrixVectorLanes(mlir::Type element) const;
};

/// The side of a 32-bit transpose done in registers: one register's lanes,
/// 16 with AVX-512 and 8 below (AVX2's 8 x 8 takes 24 single-register
/// shuffles, where a 16 x 16 in halves took LLVM's legalizer twice the
/// registers and many more shuffles).
inline int64_t registerTransposeSide(const RegisterFile &regs) { return regs.bits >= 512 ? 16 : 8; }

/// What the strategy chooses for: the target and the schedule's knobs.
struct StrategyOptions {
  RegisterFile registers;
  /// The matmul cache block (rows, columns, reduction).
  llvm::SmallVector<int64_t, 3> cacheTile = {128, 256, 256};
  /// Whether `cacheTile` is the pass option's (used as given for every
  /// matmul) rather than the target's default (which matmulCacheTile adapts).
  bool cacheTileGiven = false;
  /// The target's L2 cache per core in bytes.
  int64_t l2Bytes = 1 << 20;
  /// The target's L1 data cache per core in bytes.
  int64_t l1Bytes = 32 << 10;
  /// The bits of a vector the target's core computes a cycle per pipe: its
  /// datapaths' width (CpuTarget::datapathBits) or the registers', if
  /// narrower.
  unsigned datapathBits = 512;
  unsigned threads = 1;
  int64_t minParallelWork = 1 << 19;
};

/// The options for `targetCpu` (LLVM's name, or the host when empty), with
/// `vectorBits` unless 0 and the cache block `cacheTile` unless empty (else
/// one that fits the target's L2). Fails, with an error on `anchor` that
/// names `pass`, on an unknown CPU or a malformed option.
mlir::FailureOr<StrategyOptions> strategyOptions(mlir::Operation *anchor, llvm::StringRef pass,
                                                 llvm::StringRef targetCpu, unsigned vectorBits,
                                                 llvm::ArrayRef<int64_t> cacheTile,
                                                 unsigned threads, int64_t minParallelWork);

/// The reduction block of a float matmul whose rows make a column block of
/// its result as large as the L2 (see matmulCacheTile).
inline constexpr int64_t kDeepReductionBlock = 1024;
/// The rows of such a block, for 512-bit register tiles.
inline constexpr int64_t kDeepRowBlock = 64;
/// The rows of such a block for narrower register tiles (AVX2's 6 x 8
/// float64 and 6 x 16 float32: one cache line of a panel a step).
inline constexpr int64_t kDeepRowBlockNarrow = 16;

/// Whether a float product packed in blocks of `columns` x `depth` of its
/// right operand, serving `rows` rows (all those the packed block serves),
/// takes its register tiles rows outermost (kRowTilesOuterAttr): AVX2's 6 x 16
/// float32 tiles, where the result (rows x columns) and the packed block do
/// not fit the L2 together.
bool takesRowTilesOuter(mlir::Type element, mlir::Type accumulator, int64_t rows, int64_t columns,
                        int64_t depth, const StrategyOptions &options);

/// The cache block (rows, columns, reduction) of `op`, a matmul: the
/// options' target default, with a deeper reduction block for f32 and f64
/// products whose rows make a column block of the result (rows x block
/// columns) at least as large as the L2 (larger, for products whose register
/// tiles take their rows outermost).
llvm::SmallVector<int64_t, 3> matmulCacheTile(mlir::linalg::LinalgOp op,
                                              const StrategyOptions &options);

/// Threads split a matrix-vector product from min-parallel-work / 8
/// multiply-adds, and elementwise ops from a sixteenth (see parallelSplit).
inline constexpr int64_t kGemvWorkDivisor = 8;
inline constexpr int64_t kElementwiseWorkDivisor = 16;
/// A matrix-vector product sums lanes of partial sums (16 but for f32 and f64:
/// RegisterFile::matrixVectorLanes); at most 16 rows, tiled by up to 4, or
/// any number of rows against a weight of fewer than 16 columns (a
/// classifier's last layer of 10), which would not fill the registers of a
/// packed panel.
inline constexpr int64_t kGemvLanes = 16;
inline constexpr int64_t kGemvMaxRows = 16;
inline constexpr int64_t kGemvRowTile = 4;
inline constexpr int64_t kGemvNarrowColumns = 16;
/// AVX2's float matrix-vector tiles take 3 rows (12 accumulators: each
/// waits 6 cycles between its FMAs, more than their 4-cycle latency, where
/// 2 rows' 8 waited exactly that) where there are at least 5 rows or a
/// multiple of 3; rows past the tiles of 3 take tiles of 2 (or one row).
inline constexpr int64_t kGemvNarrowRowTile = 3;
/// Where the rows of a matrix-vector product in tiles of `tileRows` split:
/// the most whole tiles whose rest is even (16 rows: 12 in tiles of 3, 4 in
/// tiles of 2); 0 if no tile of them fits.
inline int64_t matrixVectorRowSplit(int64_t rows, int64_t tileRows) {
  for (int64_t at = rows - rows % tileRows; at > 0; at -= tileRows)
    if ((rows - at) % 2 == 0)
      return at;
  return rows >= tileRows ? rows - rows % tileRows : 0;
}
/// The row tile of the rest: 2 rows, or 1 where they are odd.
inline int64_t matrixVectorRowSplitRest(int64_t rows) { return rows % 2 == 0 ? 2 : 1; }
/// A weight compiled in is packed for the blocked kernels when compiling,
/// which beats a matrix-vector product's reads of its rows at 16 rows (the
/// MLP 784-512-512-10: 0.235 against 0.250 ms on one thread, the same on
/// two), but not at 8 or fewer, where the matrix-vector product also splits
/// across threads (batch 1 on two threads: 0.140 -> 0.026 ms; batch 8: 0.141
/// -> 0.080 ms; Intel Xeon with AMX, avx512f).
inline constexpr int64_t kGemvConstantMaxRows = 8;

/// A float product of A by a transposed weight swaps its operands (packing
/// A rather than the weight) when the weight has at least this many times
/// as many columns as A has rows.
inline constexpr int64_t kSwapWeightRatio = 2;
/// Rows from which a product of a weight compiled in is swapped as well, on
/// two or more threads (SwapWeightProducts.cpp).
inline constexpr int64_t kSwapCompiledInRows = 256;
/// The most rows of a bf16 product on AMX tiles that swaps (its weight read
/// in place instead of packed into pairs each call; SwapWeightProducts.cpp).
inline constexpr int64_t kSwapTileMaxRows = 64;
/// The fewest rows of one that does, on one thread and on more.
inline constexpr int64_t kSwapTileMinRows = 2;
inline constexpr int64_t kSwapTileMinRowsThreaded = 4;

/// Rows from which a bf16 product of a weight compiled in multiplies it as a
/// float32 constant (converted when compiling) on a target whose bf16
/// products widen (WidenBF16Products.cpp); fewer rows read the bf16 weight
/// on vdpbf16ps matrix-vector tiles, half the bytes.
inline constexpr int64_t kWidenCompiledInRows = 8;

/// An AMX tile: 16 rows of 64 bytes (16 f32 or i32 accumulators, 16 groups
/// of a bf16 pair or an i8 quad). A register tile of a matmul on AMX is two
/// tiles down (32 rows) and a 32-column panel across.
inline constexpr int64_t kAmxTileRows = 16;
inline constexpr int64_t kAmxTileRowBytes = 64;
inline constexpr int64_t kAmxRegisterTileRows = 2 * kAmxTileRows;

/// The reduction steps of one AMX tile row of `element`s (a 64-byte row: 32
/// bf16, 64 i8).
inline int64_t amxStepElements(mlir::Type element) {
  return kAmxTileRowBytes * 8 / element.getIntOrFloatBitWidth();
}

/// Whether packDotProductGroups' product `op` (loops m, panel, column in
/// panel, k / group, group; or a batch of them, Winograd's bf16 products,
/// with the point as a first loop) goes onto AMX tiles: the target has tiles for its
/// element type, and it is static and of whole tiles (rows and panel columns
/// multiples of 16, the reduction of 64-byte steps). Only such tiles: a
/// function's tiles then all have one shape, which LLVM's tile register
/// allocation needs (each tile register keeps one shape in a configuration).
bool onAmxTiles(mlir::linalg::LinalgOp op, const RegisterFile &regs);

/// A unit attribute on a product that goes onto AMX tiles: its accumulator
/// starts at zero (a zero fill that nothing else reads, dropped), so
/// mithril-x86-tile-matmuls starts the accumulator tiles with tilezero instead
/// of loading them.
inline constexpr llvm::StringLiteral kZeroAccumulatorAttr = "mithril.zero_accumulator";

/// A unit attribute on a packed product (kernel packed_matmul) whose register
/// tiles take its rows outermost, each row tile sweeping every panel (its
/// rows of A stay in L1, the panels stream from L2), rather than the panels
/// outermost (each panel stays in L1 while the row tiles pass).
inline constexpr llvm::StringLiteral kRowTilesOuterAttr = "mithril.row_tiles_outer";

/// Gives a product marked kZeroAccumulatorAttr that will not run on tiles
/// its zeros back: a zero fill of its accumulator (tensor or buffer) before
/// it, and the mark removed.
void restoreZeroAccumulator(mlir::RewriterBase &rewriter, mlir::linalg::GenericOp op);

/// The indexing maps of a packed product's register tile on AMX tiles, loops
/// (m, n, k / group, group): A [m][k / g][g], B [k / g][n][g], C [m][n].
llvm::SmallVector<mlir::AffineMap> tileMatmulMaps(mlir::MLIRContext *ctx);

/// The op's register kernel: its config's, else what its form is (matmul,
/// 16 x 16 transpose, reduction over small windows, or the default).
CpuKernel kernelOf(mlir::linalg::LinalgOp op);

/// The register tile of `op` for its kernel: one size per loop, 0 for a
/// loop left whole.
llvm::SmallVector<int64_t> registerTile(mlir::linalg::LinalgOp op, const RegisterFile &regs);

/// The op's register tile as its config gives it (when it has one for this
/// many loops), else registerTile().
llvm::SmallVector<int64_t> configuredRegisterTile(mlir::linalg::LinalgOp op,
                                                  const RegisterFile &regs);

/// The loop to split across threads and the chunk of each, if the op has
/// enough work: the outermost parallel loop that gives each thread at least
/// one register tile of `config`, in chunks of whole register tiles. Matmuls
/// prefer their column loop, so that each thread reads half the weights.
std::optional<std::pair<unsigned, int64_t>>
parallelSplit(mlir::linalg::LinalgOp op, LoweringConfigAttr config, const StrategyOptions &options);

/// The config of `op`: the kernel (kept from an existing config, which the
/// lowering may have set), its register tile, a matmul's cache block and the
/// thread split.
LoweringConfigAttr selectLoweringConfig(mlir::linalg::LinalgOp op, const StrategyOptions &options);

} // namespace mithril::cpu

#endif // MITHRIL_CODEGEN_CPU_CPUSTRATEGY_H
