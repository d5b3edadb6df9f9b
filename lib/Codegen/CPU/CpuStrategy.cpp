//===- CpuStrategy.cpp - lowering configs for the CPU schedule ------------===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//

#include "mithril/Codegen/CPU/CpuStrategy.h"
#include "mithril/Conversion/MithrilToLinalg/MithrilToLinalg.h"

#include "mithril/Codegen/CPU/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/X86TargetParser.h"

#include <algorithm>
#include <numeric>

#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace mithril {
#define GEN_PASS_DEF_MITHRILCPUSTRATEGY
#include "mithril/Codegen/CPU/Passes.h.inc"
} // namespace mithril

using namespace mlir;
using namespace mithril;
using namespace mithril::cpu;

int64_t RegisterFile::columns(linalg::LinalgOp op) const {
  Type et = getElementTypeOrSelf(op->getResult(0).getType());
  unsigned elementBits = et.isIntOrFloat() ? et.getIntOrFloatBitWidth() : 32;
  return 2 * static_cast<int64_t>(bits) / std::max(elementBits, 32u);
}

int64_t RegisterFile::matrixVectorLanes(Type element) const {
  if (!element.isF32() && !element.isF64())
    return kGemvLanes;
  return bits / element.getIntOrFloatBitWidth();
}

/// Columns of a bf16 dot-product register tile of 4 rows: 4 registers of f32.
static constexpr int64_t kWideDotColumns = 64;

/// Whether matmul `op` (a linalg.matmul block, or packing's generic over
/// (m, panel, column in panel, k / 2, 2)) multiplies bf16 on vdpbf16ps
/// register tiles of 4 rows x 64 columns rather than 8 x 32. Per step of the
/// reduction, 4 broadcasts of A and 4 loads of B feed 16 dot products, where
/// 8 x 32 needs 8 + 2. The bf16 MLP at batch 256 on one Zen 4 thread, 14
/// alternated runs: 1.97 -> 1.90 ms (median of minima; 1.79 -> 1.77 with bf16
/// terminals); a C model of the two kernels put them 1% apart, at 210-224 of
/// ~226 GFLOP/s. In f32 the wide tile measured no gain and 8 x 32 stays. AMX
/// hosts keep 32-column panels, two B tiles wide.
static bool wideDotProductTile(linalg::LinalgOp op, const RegisterFile &regs) {
  if (!regs.bf16DotProduct || regs.bf16Tiles || op.getNumDpsInputs() != 2 ||
      !getElementTypeOrSelf(op.getDpsInputOperand(0)->get().getType()).isBF16() ||
      !getElementTypeOrSelf(op->getResult(0).getType()).isF32())
    return false;
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  // Packed: the panel is the columns' loop.
  if (op.getNumLoops() == 5)
    return ranges[2] == kWideDotColumns;
  // A block packs into 64-column panels when it has two or more of them.
  return isa<linalg::MatmulOp>(op.getOperation()) && !ShapedType::isDynamic(ranges[1]) &&
         ranges[1] % kWideDotColumns == 0 && ranges[1] > kWideDotColumns;
}

/// The register tile of a wide float product on wideFloatTiles targets:
/// 6 rows x four 512-bit registers.
static constexpr int64_t kWideFloatRows = 6;
/// Four 512-bit registers of columns of `op`'s inputs: 64 float32, 32 float64.
static int64_t wideFloatColumns(linalg::LinalgOp op) {
  return 2048 /
         getElementTypeOrSelf(op.getDpsInputOperand(0)->get().getType()).getIntOrFloatBitWidth();
}
/// The shallowest reduction a product takes wide tiles for: the backward
/// products of a training step at batch 64 (64 deep) stay 8 x 32.
static constexpr int64_t kWideFloatMinDepth = 256;

/// Whether `op` multiplies two float32 (or two float64) operands into its
/// one result of the same type.
static bool sameTypeFloatProduct(linalg::LinalgOp op) {
  if (op.getNumDpsInputs() != 2 || op->getNumResults() != 1)
    return false;
  Type element = getElementTypeOrSelf(op.getDpsInputOperand(0)->get().getType());
  return (element.isF32() || element.isF64()) &&
         getElementTypeOrSelf(op.getDpsInputOperand(1)->get().getType()) == element &&
         getElementTypeOrSelf(op->getResult(0).getType()) == element;
}

/// Whether float32 or float64 matmul `op` (a linalg.matmul, a block of one,
/// or packing's generic over (m, panel, column in panel, k)) takes 6 x 64
/// (float64: 6 x 32) register tiles: on wideFloatTiles targets, with two or
/// more panels of that width and at least kWideFloatMinDepth steps of
/// reduction (packed: a panel of that width). Per reduction step, 4 loads of
/// B and 6 broadcasts of A feed 24 FMAs, where 8 x 32 feeds 16 with 2 + 8:
/// the B panel streams from L2 at 10.7 bytes per FMA instead of 8. On one
/// core of an Intel Xeon with AMX (2 MiB L2), with the same sums in the same
/// order (bit-identical): sgemm 2048 +8% (paired calls in one process), sgemm
/// 1024 17.96 -> 16.9 ms (two threads 9.42 -> 8.8), the MLP 784-512-512-10 at
/// batch 256 2.63 -> 2.48 ms; the CNN and MLP training steps unchanged. Wider
/// rows (12 or 14 x 32) spilled an accumulator in LLVM's code (4% and 38%
/// slower). float64 (8 x 16 otherwise), paired: dgemm 512 +5.8%, 1024 +0-4%,
/// 1536 +10%, 2048 +9%. Zen 4 measured no gain from 64-column f32 tiles
/// (wideDotProductTile), and the other AVX-512 cores are unmeasured: they
/// keep 8 x 32 (8 x 16). A product of at most kNarrowTileRowsUpTo rows that
/// 8-row tiles cover exactly (a small batch's layers) keeps 8 x 32 too: each
/// row tile reads the whole B panel from L2, and 8 x 32 reads it fewer
/// times for fewer bytes. One core of an Intel Xeon Emerald Rapids (no
/// AMX), the MLP 784-512-512-10 with its weights compiled in, paired
/// launches: batch 16 0.163 -> 0.160 ms, 24 0.237 -> 0.228, 32 0.31 ->
/// 0.295, 48 0.44 -> 0.43, 64 level; batch 12 and 18 (which 6 rows divide)
/// are faster with 6 x 64 and keep it. The rows are the whole product's: its
/// cache blocks carry the strategy's register tile (a 1024-row product's
/// 64-row blocks keep 6 x 64).
static constexpr int64_t kNarrowTileRowsUpTo = 64;
static bool wideFloatTile(linalg::LinalgOp op, const RegisterFile &regs) {
  if (!regs.wideFloatTiles || regs.bits < 512 || !sameTypeFloatProduct(op))
    return false;
  int64_t columns = wideFloatColumns(op);
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  // Packed: the panel is the columns' loop.
  if (kernelOf(op) == CpuKernel::PackedMatmul)
    return op.getNumLoops() == 4 && ranges[2] == columns;
  if (!isa<linalg::MatmulOp>(op.getOperation()))
    return false;
  // A block of a product: the whole product's choice.
  if (LoweringConfigAttr config = getLoweringConfig(op))
    if (ArrayRef<int64_t> tile = config.getRegisterTile(); tile.size() == 3)
      return tile[0] == kWideFloatRows && tile[1] == columns;
  if (!ShapedType::isDynamic(ranges[0]) && ranges[0] <= kNarrowTileRowsUpTo &&
      ranges[0] % regs.rows() == 0)
    return false;
  return !ShapedType::isDynamic(ranges[1]) && !ShapedType::isDynamic(ranges[2]) &&
         ranges[1] % columns == 0 && ranges[1] > columns && ranges[2] >= kWideFloatMinDepth;
}

/// Rows of a register tile of a one-column matmul (the rest of 9 columns in
/// AVX2's 8-lane vectors), which runs down its rows a vector of them at a
/// time: a whole vector. AVX2's 6 rows took a masked 8-lane vector each
/// step, the accumulators not kept in registers (256 x 512 x 1 at 1.6
/// GFLOP/s), or shrank to 4 in row blocks of 128.
static constexpr int64_t kOneColumnRows = 8;

static bool oneColumnMatmul(linalg::LinalgOp op) {
  return isa<linalg::MatmulOp>(op.getOperation()) && op.getStaticLoopRanges()[1] == 1;
}

/// The most rows of a float matmul that one 512-bit register tile takes
/// whole where 8-row tiles do not divide them (a last layer's 10 classes,
/// swapped: W [10, 512] by x^T): 10 x 32 f32 (10 x 16 f64) is 20
/// accumulators, and the product reads its B once instead of once for 8
/// rows and again, at a quarter of the FMAs per load, for the other 2.
/// (12 x 32, 24 accumulators, spilled in LLVM's code; see wideFloatTile.)
static constexpr int64_t kWholeRowTileUpTo = 10;
static bool wholeRowsTile(linalg::LinalgOp op, const RegisterFile &regs) {
  if (regs.bits < 512 || !sameTypeFloatProduct(op))
    return false;
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  bool packed = kernelOf(op) == CpuKernel::PackedMatmul && op.getNumLoops() == 4;
  if (!packed && !isa<linalg::MatmulOp>(op.getOperation()))
    return false;
  return !ShapedType::isDynamic(ranges[0]) && ranges[0] > regs.rows() &&
         ranges[0] <= kWholeRowTileUpTo;
}

/// Rows of the register tile of a float matmul `op` on vector registers (a
/// linalg.matmul or packing's generic of one).
static int64_t floatTileRows(linalg::LinalgOp op, const RegisterFile &regs) {
  if (wideFloatTile(op, regs))
    return kWideFloatRows;
  if (wholeRowsTile(op, regs))
    return op.getStaticLoopRanges()[0];
  return oneColumnMatmul(op) ? kOneColumnRows : regs.rows();
}

int64_t RegisterFile::matmulRows(linalg::LinalgOp op) const {
  // (Wide bf16 dot-product tiles and the float tiles take different
  // element types.)
  return wideDotProductTile(op, *this) ? 4 : floatTileRows(op, *this);
}

/// Whether matmul `op` (as for wideDotProductTile) is one AMX tile of 16
/// columns wide (a last layer's classes padded by padColumnsForTiles): its
/// one panel is that tile.
static bool oneTileOfColumns(linalg::LinalgOp op, const RegisterFile &regs) {
  if (op.getNumDpsInputs() != 2 ||
      !regs.tilesFor(getElementTypeOrSelf(op.getDpsInputOperand(0)->get().getType())))
    return false;
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  if (op.getNumLoops() == 5)
    return ranges[2] == kAmxTileRows;
  return isa<linalg::MatmulOp>(op.getOperation()) && ranges[1] == kAmxTileRows;
}

int64_t RegisterFile::matmulColumns(linalg::LinalgOp op) const {
  if (oneTileOfColumns(op, *this))
    return kAmxTileRows;
  if (wideFloatTile(op, *this))
    return wideFloatColumns(op);
  return wideDotProductTile(op, *this) ? kWideDotColumns : columns(op);
}

/// The size of the host's cache of `level` per core from sysfs ("1024K"),
/// if it says: the data cache at level 1, the unified one above.
static std::optional<int64_t> hostCacheBytes(int level) {
  for (int index = 0; index < 8; ++index) {
    std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index) + "/";
    auto levelFile = llvm::MemoryBuffer::getFileAsStream(dir + "level");
    if (!levelFile)
      break;
    if (StringRef((*levelFile)->getBuffer()).trim() != std::to_string(level))
      continue;
    if (auto type = llvm::MemoryBuffer::getFileAsStream(dir + "type");
        type && StringRef((*type)->getBuffer()).trim() == "Instruction")
      continue;
    auto size = llvm::MemoryBuffer::getFileAsStream(dir + "size");
    if (!size)
      return std::nullopt;
    StringRef text = StringRef((*size)->getBuffer()).trim();
    int64_t scale = 1;
    if (text.consume_back("K"))
      scale = 1 << 10;
    else if (text.consume_back("M"))
      scale = 1 << 20;
    int64_t value;
    if (text.getAsInteger(10, value) || value <= 0)
      return std::nullopt;
    return value * scale;
  }
  return std::nullopt;
}

/// The L1 data cache per core of a CPU named by LLVM: 48 KiB on Intel's
/// cores from Ice Lake on and on Zen 5, 32 KiB on the others.
static int64_t namedL1Bytes(StringRef cpu) {
  return llvm::StringSwitch<int64_t>(cpu)
      .Cases({"icelake-client", "icelake-server", "tigerlake", "rocketlake", "alderlake",
              "raptorlake", "meteorlake", "arrowlake", "arrowlake-s", "lunarlake", "pantherlake",
              "sapphirerapids", "emeraldrapids", "graniterapids", "graniterapids-d",
              "diamondrapids", "znver5"},
             48 << 10)
      .Default(32 << 10);
}

/// The L2 cache per core of a CPU named by LLVM, so that code compiled for a
/// named CPU gets that CPU's cache blocks whatever the host (and lit tests
/// name the L2 they check): 2 MiB on Sapphire Rapids and later Xeons, 512
/// KiB on Zen 1 to 3, and 1 MiB for the others (Skylake-SP to Ice Lake-SP,
/// Zen 4 and 5; client cores are taken as 1 MiB too).
static int64_t namedL2Bytes(StringRef cpu) {
  return llvm::StringSwitch<int64_t>(cpu)
      .Cases(
          {"sapphirerapids", "emeraldrapids", "graniterapids", "graniterapids-d", "diamondrapids"},
          2 << 20)
      .Cases({"znver1", "znver2", "znver3"}, 512 << 10)
      .Default(1 << 20);
}

/// The width of the vector datapaths of a CPU named by LLVM that has
/// `vectorBits`-bit registers: 256 on Zen 4 (512-bit instructions in two
/// halves), the registers' width on the others.
static unsigned namedDatapathBits(StringRef cpu, unsigned vectorBits) {
  return cpu == "znver4" ? std::min(256u, vectorBits) : vectorBits;
}

CpuTarget mithril::cpuTargetFromFeatures(const llvm::StringMap<bool> &features) {
  CpuTarget target;
  bool avx512 = features.lookup("avx512f");
  target.vectorBits = avx512 ? 512 : features.lookup("avx") ? 256 : 128;
  target.datapathBits = target.vectorBits;
  target.bf16DotProduct = avx512 && features.lookup("avx512bf16");
  target.int8DotProduct = avx512 && features.lookup("avx512vnni");
  bool tiles = avx512 && features.lookup("amx-tile");
  target.bf16Tiles = tiles && target.bf16DotProduct && features.lookup("amx-bf16");
  target.int8Tiles = tiles && target.int8DotProduct && features.lookup("amx-int8");
  // The cores, not the tiles, make 6 x 64 pay: AVX512-FP16 marks the same
  // Intel cores where a hypervisor hides AMX (an Emerald Rapids VM without
  // amx_tile: sgemm 1024 and 2048 ~10% faster, bit-identical).
  target.wideFloatTiles = tiles || (avx512 && features.lookup("avx512fp16"));
  target.slowBF16DotProduct = target.bf16DotProduct && features.lookup("avx512fp16");
  return target;
}

/// What pinHostCpu put in the host's place, if anything: the named CPU's
/// target, computed once.
static std::optional<CpuTarget> &pinnedHost() {
  static std::optional<CpuTarget> target;
  return target;
}

/// Whether LLVM's table gives some x86-64 CPU the feature `name`.
static bool isKnownFeature(StringRef name) {
  static const llvm::StringSet<> known = [] {
    llvm::StringSet<> names;
    SmallVector<StringRef> cpus;
    llvm::X86::fillValidCPUArchList(cpus, /*Only64Bit=*/true);
    for (StringRef cpu : cpus)
      for (const auto &feature : namedCpuFeatures(cpu))
        names.insert(feature.getKey());
    return names;
  }();
  return known.contains(name);
}

bool mithril::pinHostCpu(StringRef spec) {
  SmallVector<StringRef> parts;
  spec.split(parts, ',');
  StringRef cpu = parts.front();
  if (cpu.empty() || !cpuTarget(cpu))
    return false;
  llvm::StringMap<bool> features = namedCpuFeatures(cpu);
  for (StringRef change : llvm::drop_begin(parts)) {
    bool enable = change.consume_front("+");
    if (!enable && !change.consume_front("-"))
      return false;
    if (!isKnownFeature(change))
      return false;
    llvm::X86::updateImpliedFeatures(change, enable, features);
    features[change] = enable;
  }
  CpuTarget target = cpuTargetFromFeatures(features);
  target.l2Bytes = namedL2Bytes(cpu);
  target.l1Bytes = namedL1Bytes(cpu);
  target.datapathBits = namedDatapathBits(cpu, target.vectorBits);
  pinnedHost() = target;
  return true;
}

std::optional<CpuTarget> mithril::cpuTarget(StringRef cpu) {
  if (cpu.empty() && pinnedHost())
    return pinnedHost();
  // The host's is read once per process (CPUID and sysfs): every compile's
  // strategy and schedule ask for it.
  if (cpu.empty()) {
    static const CpuTarget host = [] {
      CpuTarget target = cpuTargetFromFeatures(llvm::sys::getHostCPUFeatures());
      if ((target.bf16Tiles || target.int8Tiles) && !hostAllowsAmxTiles())
        target.bf16Tiles = target.int8Tiles = false;
      if (std::optional<int64_t> l2 = hostCacheBytes(2))
        target.l2Bytes = *l2;
      if (std::optional<int64_t> l1 = hostCacheBytes(1))
        target.l1Bytes = *l1;
      target.datapathBits = namedDatapathBits(llvm::sys::getHostCPUName(), target.vectorBits);
      return target;
    }();
    return host;
  }
  if (llvm::X86::parseArchX86(cpu, /*Only64Bit=*/true) == llvm::X86::CK_None)
    return std::nullopt;
  CpuTarget target = cpuTargetFromFeatures(namedCpuFeatures(cpu));
  target.l2Bytes = namedL2Bytes(cpu);
  target.l1Bytes = namedL1Bytes(cpu);
  target.datapathBits = namedDatapathBits(cpu, target.vectorBits);
  return target;
}

llvm::StringMap<bool> mithril::namedCpuFeatures(StringRef cpu) {
  llvm::StringMap<bool> features;
  SmallVector<StringRef> names;
  llvm::X86::getFeaturesForCPU(cpu, names);
  // LLVM's table lists a CPU's features without those they imply (Alder
  // Lake's has avx2 but not avx): close the set over the implications.
  for (StringRef name : names) {
    features[name] = true;
    llvm::X86::updateImpliedFeatures(name, /*Enabled=*/true, features);
  }
  return features;
}

bool mithril::hostAllowsAmxTiles() {
#if defined(__linux__) && defined(__x86_64__)
  // ARCH_REQ_XCOMP_PERM for XTILEDATA (state component 18): without it the
  // first tile instruction raises SIGILL. The permission holds for every
  // thread of the process and for its forks.
  static const bool allowed = syscall(SYS_arch_prctl, 0x1023, 18) == 0;
  return allowed;
#else
  return false;
#endif
}

std::optional<unsigned> mithril::vectorRegisterBits(StringRef cpu) {
  if (std::optional<CpuTarget> target = cpuTarget(cpu))
    return target->vectorBits;
  return std::nullopt;
}

FailureOr<StrategyOptions> cpu::strategyOptions(Operation *anchor, StringRef pass,
                                                StringRef targetCpu, unsigned vectorBits,
                                                ArrayRef<int64_t> cacheTile, unsigned threads,
                                                int64_t minParallelWork) {
  if (vectorBits != 0 && vectorBits != 128 && vectorBits != 256 && vectorBits != 512)
    return anchor->emitError(pass)
           << ": vector-bits must be 0 (the host's), 128, 256 or 512, got " << vectorBits;
  std::optional<CpuTarget> target = cpuTarget(targetCpu);
  if (!target)
    return anchor->emitError(pass)
           << ": unknown target-cpu '" << targetCpu
           << "' (an x86-64 CPU LLVM knows: znver2, znver4, sapphirerapids, ...)";
  if (!cacheTile.empty() &&
      (cacheTile.size() != 3 || llvm::any_of(cacheTile, [](int64_t b) { return b <= 0; })))
    return anchor->emitError(pass)
           << ": cache-tile needs 3 positive sizes (rows, columns, reduction)";
  StrategyOptions options;
  options.registers.bits = vectorBits ? vectorBits : target->vectorBits;
  // The dot products are 512-bit instructions.
  options.registers.bf16DotProduct = target->bf16PairProducts() && options.registers.bits >= 512;
  options.registers.bf16MatrixVectorDots = target->bf16DotProduct && options.registers.bits >= 512;
  options.registers.int8DotProduct = target->int8DotProduct && options.registers.bits >= 512;
  options.registers.bf16Tiles = target->bf16Tiles && options.registers.bf16DotProduct;
  options.registers.int8Tiles = target->int8Tiles && options.registers.int8DotProduct;
  // A width given (vector-bits) asks for that width's generic tiles.
  options.registers.wideFloatTiles =
      target->wideFloatTiles && vectorBits == 0 && options.registers.bits >= 512;
  options.l2Bytes = target->l2Bytes;
  options.l1Bytes = target->l1Bytes;
  options.datapathBits = std::min(target->datapathBits, options.registers.bits);
  if (!cacheTile.empty()) {
    options.cacheTile.assign(cacheTile.begin(), cacheTile.end());
    options.cacheTileGiven = true;
  } else if (target->l2Bytes < (512 << 10)) {
    // A 256 x 256 f32 block of the right operand (256 KiB) and the left
    // operand's 128 x 256 would not stay in a small L2: half the columns.
    options.cacheTile = {128, 128, 256};
  } else if (target->l2Bytes >= (2 << 20)) {
    // A 2 MiB L2 (Sapphire and Emerald Rapids) holds blocks twice as deep:
    // the accumulators are loaded and stored half as often (sgemm 1024 and
    // 2048: 6% faster on one Emerald Rapids core).
    options.cacheTile = {128, 256, 512};
  }
  options.threads = threads;
  options.minParallelWork = minParallelWork;
  return options;
}

/// Whether `op`'s body calls a float math function that the CPU pipeline
/// computes as a polynomial (mithril-approximate-math).
static bool hasPolynomialMath(linalg::LinalgOp op) {
  return op
      ->walk([](Operation *inner) {
        return isa<math::ExpOp, math::TanhOp, math::ErfOp, math::LogOp, math::Log1pOp>(inner)
                   ? WalkResult::interrupt()
                   : WalkResult::advance();
      })
      .wasInterrupted();
}

/// The most elements (outputs x window) of a small-window reduction's tile:
/// eight 512-bit registers of f32.
static constexpr int64_t kMaxWindowTileElements = 128;

/// For an op whose trailing loops are reductions over small static windows
/// (at most 16 elements in all) after parallel loops, the innermost parallel
/// loop when it is short enough to stay whole in a tile (64).
static std::optional<unsigned> smallWindowColumns(linalg::LinalgOp op) {
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  unsigned first = iterators.size();
  while (first > 0 && iterators[first - 1] == utils::IteratorType::reduction)
    --first;
  if (first == 0 || first == iterators.size() ||
      llvm::any_of(ArrayRef(iterators).take_front(first),
                   [](utils::IteratorType it) { return it != utils::IteratorType::parallel; }))
    return std::nullopt;
  int64_t window = 1;
  for (int64_t r : ArrayRef(ranges).drop_front(first)) {
    if (ShapedType::isDynamic(r))
      return std::nullopt;
    window *= r;
  }
  int64_t columns = ranges[first - 1];
  if (window > 16 || ShapedType::isDynamic(columns) || columns > 64)
    return std::nullopt;
  return first - 1;
}

/// A transpose of the last two dimensions of 32-bit elements, or an
/// elementwise op of them that reads an operand so (a bias and ReLU reading
/// a swapped product, SwapWeightProducts.cpp): an operand read through a
/// permutation that ends in the last two loops swapped, results written in
/// loop order. 16 x 16 blocks transpose in registers.
static bool isRegisterTranspose(linalg::LinalgOp op) {
  unsigned loops = op.getNumLoops();
  if (!isa<linalg::GenericOp, linalg::TransposeOp>(op.getOperation()) || loops < 2 ||
      op.getNumReductionLoops() != 0)
    return false;
  AffineExpr last = getAffineDimExpr(loops - 1, op.getContext());
  AffineExpr beforeLast = getAffineDimExpr(loops - 2, op.getContext());
  bool readsSwapped = false;
  for (OpOperand &operand : op->getOpOperands()) {
    Type element = getElementTypeOrSelf(operand.get().getType());
    if (!element.isIntOrFloat() || element.getIntOrFloatBitWidth() != 32)
      return false;
    AffineMap map = op.getMatchingIndexingMap(&operand);
    if (op.isDpsInit(&operand)) {
      if (!map.isIdentity())
        return false;
      continue;
    }
    readsSwapped |= map.isPermutation() && map.getResult(loops - 2) == last &&
                    map.getResult(loops - 1) == beforeLast;
  }
  return readsSwapped;
}

/// A transpose of pairs of 16-bit elements (the last dimension, 2, stays;
/// the two before it swap): packDotProductGroups' packing of a bf16 weight.
/// Each pair moves as one 32-bit element, 16 x 16 of them in registers.
static bool isPairTranspose(linalg::LinalgOp op) {
  auto transpose = dyn_cast<linalg::TransposeOp>(op.getOperation());
  if (!transpose)
    return false;
  ArrayRef<int64_t> perm = transpose.getPermutation();
  unsigned rank = perm.size();
  // (The init's type: a transpose on buffers has no result.)
  auto result = cast<ShapedType>(transpose.getInit().getType());
  if (rank < 3 || perm[rank - 1] != int64_t(rank - 1) || perm[rank - 2] != int64_t(rank - 3) ||
      perm[rank - 3] != int64_t(rank - 2) || result.getDimSize(rank - 1) != 2 ||
      !result.getElementType().isIntOrFloat() || result.getElementTypeBitWidth() != 16)
    return false;
  for (unsigned i = 0; i + 3 < rank; ++i)
    if (perm[i] != int64_t(i))
      return false;
  return true;
}

CpuKernel cpu::kernelOf(linalg::LinalgOp op) {
  if (LoweringConfigAttr config = getLoweringConfig(op))
    return config.getKernel();
  if (isa<linalg::MatmulOp, linalg::BatchMatmulOp>(op.getOperation()))
    return CpuKernel::Matmul;
  if (isRegisterTranspose(op) || isPairTranspose(op))
    return CpuKernel::Transpose;
  if (smallWindowColumns(op))
    return CpuKernel::WindowReduction;
  return CpuKernel::Default;
}

/// The default tile: the last two loops to 8 x two registers of f32, the
/// others to 1, so that no vector grows beyond a few registers; a reduction
/// over small windows keeps a row of outputs with their windows.
/// Operands from which an op's tile is one vector (defaultTile).
static constexpr unsigned kManyOperands = 16;

static SmallVector<int64_t> defaultTile(linalg::LinalgOp op, const RegisterFile &regs) {
  unsigned loops = op.getNumLoops();
  SmallVector<int64_t> sizes(loops, 1);
  if (std::optional<unsigned> columns = smallWindowColumns(op)) {
    // A reduction over small windows (a pooling, also once elementwise
    // fusion has merged its producer and dropped the pooling's kernel): a
    // row of outputs with their whole windows per tile, at most
    // kMaxWindowTileElements in all. (A softmax's row maximum over 64 x 10
    // whole was one vector<64x10>, transposed by 640 element moves: 1,250
    // LLVM shuffles each, a third of an MLP training step's compile.)
    for (unsigned i = *columns; i < loops; ++i)
      sizes[i] = 0;
    SmallVector<int64_t> ranges = op.getStaticLoopRanges();
    int64_t window = 1;
    for (unsigned i = *columns + 1; i < loops; ++i)
      window *= ranges[i];
    int64_t outputs = ranges[*columns];
    // A reduction along one loop (a softmax's row maximum or sum over 10
    // classes) takes at most one tile's columns of elements, as narrow rows
    // do below (Zen 4: MLP training step 0.59-0.63 -> 0.56-0.59 s to
    // compile, the same run time); poolings (two window loops) keep
    // kMaxWindowTileElements: with 32 the CNN forward ran 3% slower.
    int64_t maxElements = loops - *columns - 1 == 1
                              ? std::min<int64_t>(kMaxWindowTileElements, regs.elementwiseColumns())
                              : kMaxWindowTileElements;
    if (outputs * window > maxElements) {
      int64_t tile = std::max<int64_t>(1, maxElements / window);
      while (tile > 1 && outputs % tile != 0)
        --tile;
      sizes[*columns] = tile;
    }
    return sizes;
  }
  if (loops >= 1)
    sizes[loops - 1] = regs.elementwiseColumns();
  // A row reduction of float32 into float64 (a softmax's or a layer norm's
  // sums): half the columns, so that the tile's partial sums, carried in
  // float64 lanes across the row (carryLanePartials), take half the
  // registers rather than all of them.
  // (AVX2's 16 registers: 4 rows of them too.)
  bool reductionInDoubles = false;
  SmallVector<int64_t> loopRanges = op.getStaticLoopRanges();
  auto longerThan = [&](unsigned loop, int64_t size) {
    return ShapedType::isDynamic(loopRanges[loop]) || loopRanges[loop] > size;
  };
  if (loops >= 1 && longerThan(loops - 1, sizes[loops - 1]) && op.getNumReductionLoops() == 1 &&
      op->getNumResults() == 1 &&
      op.getIteratorTypesArray().back() == utils::IteratorType::reduction &&
      getElementTypeOrSelf(op->getResult(0).getType()).getIntOrFloatBitWidth() == 64 &&
      llvm::all_of(op.getDpsInputOperands(), [](OpOperand *input) {
        return getElementTypeOrSelf(input->get().getType()).getIntOrFloatBitWidth() < 64;
      }))
    sizes[loops - 1] /= 2, reductionInDoubles = true;
  if (loops >= 2)
    sizes[loops - 2] = reductionInDoubles && regs.bits < 512 ? 4 : 8;
  // A body with a math function that becomes a polynomial (exp, tanh, erf,
  // log: mithril-approximate-math) keeps its constants and every register's
  // chain of steps live at once: 4 rows, 8 registers of chains. On 8 x 32
  // tiles LLVM spilled a softmax's exp to the stack (a 256 x 1000 softmax on
  // one Zen 5 core: 65 -> 59 us).
  // (An op that one tile covers keeps it whole.)
  if (loops >= 2 && hasPolynomialMath(op) &&
      (longerThan(loops - 2, sizes[loops - 2]) || longerThan(loops - 1, sizes[loops - 1])))
    sizes[loops - 2] = 4;
  // An op of many operands (a Winograd transform: 16 inputs or 16 outputs,
  // and some 40 additions per element) on one row of one vector: its body
  // is unrolled once per register of the tile, and on 8 x 32 tiles (16
  // registers) its values did not fit the register file either.
  if (op->getNumOperands() >= kManyOperands && loops >= 1) {
    std::fill(sizes.begin(), sizes.end(), 1);
    sizes[loops - 1] = regs.elementwiseColumns() / 2;
    return sizes;
  }
  // Rows narrower than a tile's columns (10 classes, a 14- or 28-wide
  // image): as many rows as one tile's columns hold (at least one, and a
  // divisor of the rows, so that no partial tile is left). An n-D vector
  // becomes one LLVM vector per row anyway, so 8 rows were 8 copies of each
  // op's code (of a whole exp or log polynomial) for the same instructions
  // per element. (Zen 4, one thread: MLP training step 0.70 -> 0.62 s and
  // CNN training step 0.77 -> 0.58 s to compile, the same run times.)
  if (loops >= 2) {
    SmallVector<int64_t> ranges = op.getStaticLoopRanges();
    int64_t width = ranges[loops - 1], height = ranges[loops - 2];
    if (!ShapedType::isDynamic(width) && width > 0 && width < regs.elementwiseColumns()) {
      int64_t rows = std::clamp<int64_t>(regs.elementwiseColumns() / width, 1, 8);
      if (ShapedType::isDynamic(height))
        rows = 1;
      while (rows > 1 && height % rows != 0)
        --rows;
      sizes[loops - 2] = rows;
      // The last two loops covered whole (a Winograd tile's 2 x 2 outputs, a
      // pooling window): the loops before them join the tile, whole or by a
      // divisor, up to one tile's columns of elements. A pooling gradient
      // fused with the output transform of the convolution before it ran on
      // 2 x 2 tiles, 100,352 iterations of 4 elements; as 7 x 2 x 2 it runs
      // a seventh of the iterations.
      // (Mixed-precision CNN training step 4.57-4.67 -> 4.36-4.43 ms, its
      // compile 3-7% longer; AMD EPYC Zen 4.)
      // Only loops every operand is indexed by join: the vectorized read of
      // an operand broadcast along a joined loop, with a unit last loop,
      // lost the broadcast's order ([1, 5, 1] broadcast to [5, 5, 1] came
      // out transposed; diff-fuzz 1515:308).
      if (rows == height) {
        SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
        SmallVector<AffineMap> maps = op.getIndexingMapsArray();
        auto indexesAll = [&](unsigned loop) {
          return llvm::all_of(maps, [&](AffineMap map) {
            return llvm::is_contained(map.getResults(), getAffineDimExpr(loop, op.getContext()));
          });
        };
        int64_t elements = width * height;
        for (int i = int(loops) - 3; i >= 0; --i) {
          int64_t range = ranges[i];
          if (ShapedType::isDynamic(range) || range <= 0 ||
              iterators[i] != utils::IteratorType::parallel || !indexesAll(i))
            break;
          int64_t take = std::max<int64_t>(1, regs.elementwiseColumns() / elements);
          take = std::min(take, range);
          while (take > 1 && range % take != 0)
            --take;
          sizes[i] = take;
          elements *= take;
          if (take != range)
            break;
        }
      }
    }
  }
  return sizes;
}

void cpu::restoreZeroAccumulator(RewriterBase &rewriter, linalg::GenericOp op) {
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPoint(op);
  OpOperand *init = op.getDpsInitOperand(0);
  Value zero = arith::ConstantOp::create(
      rewriter, op.getLoc(), rewriter.getZeroAttr(getElementTypeOrSelf(init->get().getType())));
  auto fill = linalg::FillOp::create(rewriter, op.getLoc(), zero, init->get());
  rewriter.modifyOpInPlace(op, [&] {
    // On tensors the product reads the fill's result; on buffers the fill
    // writes the accumulator in place.
    if (fill->getNumResults() == 1)
      init->set(fill.getResult(0));
    op->removeAttr(kZeroAccumulatorAttr);
  });
}

bool cpu::onAmxTiles(linalg::LinalgOp op, const RegisterFile &regs) {
  // Loops (m, panel, column, k / g, g), or a batch of them (Winograd's
  // products: point, m, panel, column, k / g, g).
  unsigned loops = op.getNumLoops();
  if ((loops != 5 && loops != 6) || op.getNumDpsInputs() != 2)
    return false;
  Type et = getElementTypeOrSelf(op.getDpsInputOperand(0)->get().getType());
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  ArrayRef<int64_t> product = ArrayRef<int64_t>(ranges).take_back(5);
  int64_t columns = loops == 5 ? regs.columns(op) : product[2];
  if (!regs.tilesFor(et) || columns % kAmxTileRows != 0)
    return false;
  return !ShapedType::isDynamicShape(ranges) && product[0] % kAmxTileRows == 0 &&
         product[3] % (amxStepElements(et) / product[4]) == 0;
}

SmallVector<int64_t> cpu::registerTile(linalg::LinalgOp op, const RegisterFile &regs) {
  unsigned loops = op.getNumLoops();
  switch (kernelOf(op)) {
  case CpuKernel::PackedMatmul:
    // 8 rows (4 on wide bf16 dot-product tiles) x one panel's columns, one
    // reduction step at a time; with dot
    // products (packDotProductGroups), one group of steps at a time, each
    // group whole.
    if (loops == 4)
      return {regs.matmulRows(op), 1, regs.matmulColumns(op), 1};
    if (loops == 5) {
      // On AMX tiles: 32 rows x the panel, with the block's whole reduction
      // (mithril-x86-tile-matmuls keeps the accumulators in tiles).
      if (onAmxTiles(op, regs)) {
        int64_t rows = op.getStaticLoopRanges()[0];
        return {rows % kAmxRegisterTileRows == 0 ? kAmxRegisterTileRows : kAmxTileRows, 1,
                regs.columns(op), 0, 0};
      }
      return {regs.matmulRows(op), 1, regs.matmulColumns(op), 1, 0};
    }
    // A batch of them, packed when lowered (Winograd's bf16 products: loops
    // point, m, panel, column, k / 2, pair): rows x the panel; on AMX tiles
    // with the reduction whole, as above.
    if (loops == 6) {
      SmallVector<int64_t> ranges = op.getStaticLoopRanges();
      if (!onAmxTiles(op, regs))
        return {1, regs.rows(), 1, ranges[3], 1, 0};
      int64_t rows = ranges[1] % kAmxRegisterTileRows == 0 ? kAmxRegisterTileRows : kAmxTileRows;
      return {1, rows, 1, ranges[3], 0, 0};
    }
    break;
  case CpuKernel::ConvFlat:
    // Loops n, f, p, c, kh, kw: 8 output channels x a row of flat positions
    // accumulate in registers, one input channel and kernel position at a
    // time, broadcasting a weight per channel against contiguous input.
    // (Winograd's products, 784 tiles, split into 768 columns on these tiles
    // and the last 16: Scheduler::splitTileRemainders.)
    if (loops == 6)
      return {1, regs.rows(), regs.columns(op), 1, 1, 1};
    break;
  case CpuKernel::ConvFlatWeightGrad:
    // Loops f, c, kh, kw, lane, n, block: 4 output x 4 input channels of
    // one register of lanes each (16 f32 or 8 f64 with AVX-512) accumulate
    // over blocks of flat positions; with AVX2, 4 x 2 of 8 f32 or 4 f64, 8
    // of the 16 ymm registers. (4 x 2 of 16 lanes took all 16 and LLVM
    // spilled in the inner loop: the bench CNN's second convolution's
    // weight gradient, 16 x 32 x 14 x 14 to 64 channels, in AVX2 code on a
    // Zen 4 core 2.88 -> 1.60-1.70 ms; 2 x 2 of 16 lanes 1.78-1.87, 4 x 1
    // 1.90; AVX-512 code 1.30. The CNN's training step in float64, AVX2
    // code, 13.8-21.6 -> 12.3-12.7 ms.)
    if (loops == 7) {
      Type et = getElementTypeOrSelf(op->getResult(0).getType());
      int64_t elementBits = et.isIntOrFloat() ? et.getIntOrFloatBitWidth() : 32;
      int64_t lanes = std::min<int64_t>(mithril::kConvFlatLanes, regs.bits / elementBits);
      return {4, regs.bits >= 512 ? 4 : 2, 1, 1, lanes, 1, 1};
    }
    // bf16 in pairs of images (loops ..., n / 2, block, pair): the same 4 x
    // 4 accumulators, each step one vdpbf16ps of 16 lanes by 2 images
    // (Scheduler::lowerBF16WeightGradTiles).
    if (loops == 8)
      return {4, 4, 1, 1, mithril::kConvFlatLanes, 1, 1, 2};
    break;
  case CpuKernel::PoolWindow: {
    // Pooling over non-overlapping windows: a row of output columns with
    // their windows per tile, every other loop one at a time.
    SmallVector<int64_t> sizes(loops, 1);
    if (LoweringConfigAttr config = getLoweringConfig(op))
      for (int64_t loop : config.getWindow())
        if (loop < static_cast<int64_t>(loops))
          sizes[loop] = 0;
    return sizes;
  }
  case CpuKernel::MatrixVector: {
    // Loops: rows and columns of the result, the reduction steps, and the
    // lanes of partial sums; accumulators: rows x columns of lanes, in at
    // most 16 zmm registers of AVX-512's 32 (4 x 4 of one register each: 8
    // loads per 16 FMAs), or 8 of AVX2's 16 ymm registers, which leaves
    // registers for the rows read: 2 x 4 of one register (f32 and f64,
    // matrixVectorLanes), 1 x 8 for one row, 2 x 2 of two (16 lanes).
    // (The MLP 784-512-512-10 at batch 16 on a Zen 4 core: 0.32 -> 0.26 ms
    // with 16. Its AVX2 code, the same core, one thread, outputs identical:
    // with 16 lanes as 4 x 2, all 16 ymm registers, LLVM spilled
    // accumulators to the stack in the inner loop; 2 x 2 took batch 16
    // 0.33-0.36 -> 0.254-0.261 ms, 12 0.25-0.27 -> 0.194-0.197, 4 0.089-0.095
    // -> 0.061, 2 0.071-0.078 -> 0.044; then 8 lanes as 2 x 4, 6 loads per 8
    // FMAs where 2 x 2 of 16 lanes took 8: batch 16 0.253 -> 0.229 ms, two
    // threads 0.140 -> 0.124; batch 1 as 1 x 8, 0.033 -> 0.031. In f64 on
    // AVX-512, 16 lanes took two registers each, 32 for 4 x 4: 8 lanes,
    // the MLP at batch 16 0.45-0.54 -> 0.41-0.47 ms.) Tiles divide the
    // loops exactly (a partial tile would not vectorize), but for AVX2's
    // rows of 3 below, which are split.
    AffineMap out = op.getIndexingMapMatchingResult(op->getResult(0));
    SmallVector<int64_t> ranges = op.getStaticLoopRanges();
    int64_t rowRange = ranges[out.getDimPosition(0)], colRange = ranges[out.getDimPosition(1)];
    int64_t rows = kGemvRowTile;
    // The bf16 form with A widened to f32 beforehand (on targets whose
    // vdpbf16ps is slow): the tile widens each weight row it reads, so 8
    // rows of A share it (8 x 2: 4 widening ops for 32 FMAs, where 4 x 4
    // took 8). (The MLP 784-512-512-10 in bf16 at batch 16, Intel Xeon
    // Emerald Rapids without AMX, one core.)
    if (loops == 5 && getElementTypeOrSelf(op.getDpsInputOperand(0)->get().getType()).isF32())
      rows = 2 * kGemvRowTile;
    // (The bf16 form, which widens each weight row once for the rows that
    // share it, keeps its tile with AVX2: 2 x 2 measured 0.400 against
    // 0.383-0.393 ms at batch 16, within the noise, and widens 4 times as
    // often.)
    bool ymm = regs.bits < 512;
    Type resultElement = getElementTypeOrSelf(op->getResult(0).getType());
    int64_t laneRegisters = 1;
    if (loops == 4 && out.getNumResults() == 3 && resultElement.isIntOrFloat()) {
      int64_t laneBits = ranges[out.getDimPosition(2)] * resultElement.getIntOrFloatBitWidth();
      laneRegisters = std::max<int64_t>(1, llvm::divideCeil(laneBits, regs.bits));
    }
    // AVX2's lanes of one register, from 5 rows (or 3): 3 x 4, 12
    // accumulators, each FMA 6 cycles after the last into it where 2 x 4's 8
    // waited exactly the FMA latency (4 cycles, two ports); rows past the
    // tiles of 3 take tiles of 2 (fuseMatrixVectorLanes splits them). Its
    // FMAs go column by column (lowerFloatMatrixVectorTiles): LLVM read the
    // 4 weight rows first and spilled. (The MLP 784-512-512-10 on one Zen 4
    // core, AVX2 code, alternated: batch 8 0.123 -> 0.115 ms, 12 0.176 ->
    // 0.163, 15 0.236 -> 0.201, 16 0.219 -> 0.216 (0.230 -> 0.216 in a
    // slower stretch); two threads, batch 8 0.066 -> 0.061. A C model of the
    // loops: 96 -> 103 GFLOP/s, and 3 x 4 lost 2% to weights 16 bytes off
    // a 32-byte boundary where 2 x 4 lost 10%.)
    bool threeRows = ymm && loops == 4 && laneRegisters == 1 &&
                     (rowRange % kGemvNarrowRowTile == 0 || rowRange >= 5);
    if (ymm && loops == 4)
      rows = threeRows ? kGemvNarrowRowTile : std::min<int64_t>(rows, 2);
    int64_t accumulators = (!ymm ? 16 : threeRows ? 12 : 8) / laneRegisters;
    while (!threeRows && rows > 1 && rowRange % rows != 0)
      --rows;
    // The largest power of 2 <= accumulators / rows, at most 8 (one row
    // with 16 columns was slower: 0.048 -> 0.063 ms at batch 1).
    int64_t cols = std::min<int64_t>(8, llvm::PowerOf2Ceil(accumulators / rows + 1) / 2);
    while (cols > 1 && colRange % cols != 0)
      cols /= 2;
    // Columns that no power of 2 divides (3, 5, 7, 9, 15) took one a tile,
    // each row of A read once per column: 5 loads per 4 FMAs. A divisor of
    // them up to 8, with fewer rows where the accumulators need, that does
    // more FMAs per load takes its place. (256 x 512 by 7 columns, one Zen 4
    // core: 0.034 -> 0.019 ms as 2 x 7; AVX2 code 0.041 -> 0.023 as 1 x 7,
    // 10 columns 0.035 -> 0.028 as 2 x 5; AVX-512's 4 x 2 and 2 x 5 for 10
    // within the noise.)
    if (loops == 4) {
      auto fmasPerLoad = [](int64_t r, int64_t c) {
        return static_cast<double>(r * c) / static_cast<double>(r + c);
      };
      int64_t bestRows = rows, bestCols = cols;
      for (int64_t c = cols + 1; c <= std::min<int64_t>(8, colRange); ++c) {
        int64_t r = std::min(rows, accumulators / c);
        while (r > 1 && rowRange % r != 0 && !(threeRows && r == kGemvNarrowRowTile))
          --r;
        if (colRange % c == 0 && r >= 1 && fmasPerLoad(r, c) > fmasPerLoad(bestRows, bestCols))
          bestRows = r, bestCols = c;
      }
      rows = bestRows, cols = bestCols;
    }
    SmallVector<int64_t> sizes(loops, 0);
    for (auto [i, it] : llvm::enumerate(op.getIteratorTypesArray()))
      if (it == utils::IteratorType::reduction)
        sizes[i] = 1;
    sizes[out.getDimPosition(0)] = rows;
    sizes[out.getDimPosition(1)] = cols;
    // The bf16 form (rewriteBF16MatrixVectorProduct): each pair whole.
    if (loops == 5)
      sizes[4] = 0;
    return sizes;
  }
  case CpuKernel::ConvSpatial: {
    // A convolution as a matmul of output channels by output columns: a
    // block of 8 channels x 32 columns accumulates in registers over the
    // input channels and kernel positions, one at a time, broadcasting a
    // weight per channel against a contiguous row of the input. Loops (n,
    // g, f, spatial..., c, window...).
    if (loops >= 6 && loops % 2 == 0) {
      int64_t spatial = (loops - 4) / 2;
      SmallVector<int64_t> sizes(loops, 1);
      sizes[2] = regs.rows();
      sizes[2 + spatial] = regs.columns(op);
      return sizes;
    }
    break;
  }
  case CpuKernel::ConvChannelsLast:
    // Loops (n, oh, ow, f, c, kh, kw): output columns x one or two registers
    // of channels accumulate in registers (up to 16 with AVX-512, 12 with
    // AVX2), one input channel and kernel position at a time. The columns
    // divide the row (fitTilesToLoops would otherwise shrink the tile to a
    // divisor, 28 columns to 4 rather than 7); of the two widths, the one
    // that keeps more accumulators busy.
    if (loops == 7) {
      SmallVector<int64_t> ranges = op.getStaticLoopRanges();
      int64_t lanes = regs.bits / 32, accumulators = 2 * regs.rows();
      int64_t bestChannels = std::min(ranges[3], regs.columns(op)), bestColumns = 1;
      for (int64_t registers : {2, 1}) {
        int64_t channels = std::min(ranges[3], registers * lanes);
        int64_t perColumn = llvm::divideCeil(channels, lanes);
        int64_t columns = accumulators / perColumn;
        if (ShapedType::isDynamic(ranges[2]))
          columns = std::min<int64_t>(columns, regs.rows());
        else
          while (columns > 1 && ranges[2] % columns != 0)
            --columns;
        if (columns * perColumn >
            bestColumns * static_cast<int64_t>(llvm::divideCeil(bestChannels, lanes))) {
          bestChannels = channels;
          bestColumns = columns;
        }
      }
      return {1, 1, bestColumns, bestChannels, 1, 1, 1};
    }
    break;
  case CpuKernel::Transpose:
    // A square of one register's 32-bit lanes a side transposes in
    // registers (the shuffle lowerings at the end of the schedule): 16 x 16
    // with AVX-512, 8 x 8 with AVX2. (In AVX2 code the MLP training step's
    // 16 x 16 tiles were 442 shuffles of 16-lane rows that LLVM split in
    // halves; in 8 x 8 tiles its compile took 18% fewer instructions, 2.58G
    // -> 2.10G, and its run time stayed level.)
    if (isRegisterTranspose(op)) {
      SmallVector<int64_t> sizes(loops, 1);
      sizes[loops - 1] = sizes[loops - 2] = registerTransposeSide(regs);
      return sizes;
    }
    // 16 x 16 pairs, the pairs whole (the loop lowering moves each as an
    // i32: transposePairsAs32Bit).
    if (isPairTranspose(op)) {
      SmallVector<int64_t> sizes(loops, 1);
      sizes[loops - 3] = sizes[loops - 2] = 16;
      sizes[loops - 1] = 0;
      return sizes;
    }
    break;
  case CpuKernel::Matmul:
    // A register block of rows x two registers of columns (sixteen 512-bit
    // f32 accumulators with AVX-512), stepping the reduction one at a time.
    if (isa<linalg::MatmulOp>(op.getOperation())) {
      return {floatTileRows(op, regs),
              wideFloatTile(op, regs) ? wideFloatColumns(op) : regs.columns(op), 1};
    }
    if (isa<linalg::BatchMatmulOp>(op.getOperation()))
      return {1, regs.rows(), regs.columns(op), 1};
    break;
  case CpuKernel::TileMatmul:
    // Written whole by mithril-x86-tile-matmuls.
    return SmallVector<int64_t>(loops, 0);
  case CpuKernel::TileConv:
    // Loops (n, oh, ow, f, kh, kw, c / g, g): two output rows (one where
    // the rows are odd) x 16 columns x 32 channels, the reduction whole: 2
    // x 2 accumulator tiles with their two A and two B tiles, the eight
    // tile registers (mithril-x86-tile-matmuls).
    if (loops == 8) {
      SmallVector<int64_t> ranges = op.getStaticLoopRanges();
      int64_t rows = ranges[1] % 2 == 0 ? 2 : 1;
      int64_t channels = ranges[3] % (2 * kAmxTileRows) == 0 ? 2 * kAmxTileRows : kAmxTileRows;
      return {1, rows, kAmxTileRows, channels, 0, 0, 0, 0};
    }
    break;
  case CpuKernel::LaneSum:
  case CpuKernel::WindowReduction:
  case CpuKernel::Default:
    break;
  }
  return defaultTile(op, regs);
}

SmallVector<AffineMap> cpu::tileMatmulMaps(MLIRContext *ctx) {
  AffineExpr dm, dn, dk, dg;
  bindDims(ctx, dm, dn, dk, dg);
  return {AffineMap::get(4, 0, {dm, dk, dg}, ctx), AffineMap::get(4, 0, {dk, dn, dg}, ctx),
          AffineMap::get(4, 0, {dm, dn}, ctx)};
}

SmallVector<int64_t> cpu::configuredRegisterTile(linalg::LinalgOp op, const RegisterFile &regs) {
  if (LoweringConfigAttr config = getLoweringConfig(op))
    if (config.getRegisterTile().size() == op.getNumLoops())
      return SmallVector<int64_t>(config.getRegisterTile());
  return registerTile(op, regs);
}

/// Whether `v` is computed from a constant alone (a weight compiled in,
/// through its casts, transposes and reshapes): packed when compiling.
static bool isCompiledIn(Value v) {
  while (Operation *def = v.getDefiningOp()) {
    if (isa<arith::ConstantOp>(def))
      return true;
    if (isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp>(def)) {
      v = def->getOperand(0);
      continue;
    }
    auto producer = dyn_cast<linalg::LinalgOp>(def);
    if (!producer || producer.getNumDpsInputs() != 1 ||
        producer.getNumParallelLoops() != producer.getNumLoops())
      return false;
    v = producer.getDpsInputOperand(0)->get();
  }
  return false;
}

/// A product of fewer rows than a register tile's (a small batch's `x @ w`,
/// its backward `dy @ w`) by a right operand it reads as stored: blocks of
/// all its rows, the columns of up to kFewRowsResultBytes of the result (L1)
/// and kFewRowsReductionBlock steps, so that the right operand streams row
/// after row, whole rows at a time, while the accumulators come from L1 once
/// a block. Blocks of the usual 256 x 256 read 32 columns of each of 256
/// rows in turn, a new page every 128 bytes: 1 x 1000 by 1000 took 0.30 ms
/// against numpy's 0.050, 7 rows 3.6 ms against 0.33 (one Zen 4 core; now
/// 0.056 and 0.139; AVX2 code 0.76 -> 0.054 and 2.45 -> 0.23). (4 steps a
/// block: 1 x 1024 by 1024 0.066 ms, 8: 0.053, 16: 0.063, 32: 0.110.)
static constexpr int64_t kFewRowsResultBytes = 16 * 1024;
static constexpr int64_t kPageBytes = 4096;
static constexpr int64_t kFewRowsReductionBlock = 8;

/// Whether matmul `op` is such a product: float32 or float64, of static
/// sizes, 1 to rows() - 1 rows, its right operand not compiled in (those are
/// packed when compiling). matmulCacheTile blocks it so and parallelSplit
/// splits it by that.
static bool streamsFewRows(linalg::LinalgOp op, const RegisterFile &regs) {
  if (!isa<linalg::MatmulOp>(op.getOperation()))
    return false;
  Type element = getElementTypeOrSelf(op.getDpsInputOperand(0)->get().getType());
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  return (element.isF32() || element.isF64()) && !llvm::any_of(ranges, ShapedType::isDynamic) &&
         ranges[0] > 0 && ranges[0] < regs.rows() && !isCompiledIn(op.getDpsInputOperand(1)->get());
}

bool cpu::takesRowTilesOuter(Type element, Type accumulator, int64_t rows, int64_t columns,
                             int64_t depth, const StrategyOptions &options) {
  if (!element.isF32() || !accumulator.isF32() || options.registers.bits >= 512)
    return false;
  int64_t elementBytes = element.getIntOrFloatBitWidth() / 8;
  return (rows + depth) * columns * elementBytes > options.l2Bytes;
}

SmallVector<int64_t, 3> cpu::matmulCacheTile(linalg::LinalgOp op, const StrategyOptions &options) {
  SmallVector<int64_t, 3> block = options.cacheTile;
  if (options.cacheTileGiven)
    return block;
  // Each reduction block loads and stores every accumulator tile of the
  // result once. While a column block of the result (rows x block columns)
  // stays in L2 that costs little; once it fills the L2, the tiles come
  // from L3 and memory, block after block, and a deeper reduction block
  // loads them fewer times. (Zen 4, one core, 1 MiB L2: sgemm 1024 21.0 ->
  // 20.0 ms and 2048 172 -> 159 ms, dgemm 2048 351 -> 328 ms, a 4096 x 512 x
  // 1024 product 43.4 -> 39.5; its AVX2 code, 6 x 16 tiles: sgemm 1024
  // 21.9 -> 20.9 ms, 2048 171-177 -> 159-164 ms; 512 to 1000 rows within 1%
  // either way; the bench CNN's training step, whose products have at most
  // 256 rows, was 2-3% slower with every block deepened.)
  // Narrow inputs keep theirs: 8-bit and tile blocks are deepened by the
  // schedule, and bf16 on vector registers measured no better.
  Type element = getElementTypeOrSelf(op.getDpsInputOperand(0)->get().getType());
  if (!element.isF32() && !element.isF64())
    return block;
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  int64_t rows = ranges[0], columns = ranges[1], reduction = ranges[2];
  if (ShapedType::isDynamic(rows) || ShapedType::isDynamic(columns) ||
      ShapedType::isDynamic(reduction))
    return block;
  // (An empty batch, 0 rows, keeps the usual blocks.)
  if (streamsFewRows(op, options.registers)) {
    int64_t elementBytes = element.getIntOrFloatBitWidth() / 8;
    int64_t fit = std::max<int64_t>(64, kFewRowsResultBytes / (rows * elementBytes));
    block[0] = rows;
    block[1] = std::min(columns, fit);
    block[2] = std::min(reduction, kFewRowsReductionBlock);
    return block;
  }
  if (reduction <= block[2])
    return block;
  // A right operand compiled in is packed whole when compiling: a deeper
  // block packs no more per call, and each accumulator tile is loaded and
  // stored once instead of once per block, as a swapped product's
  // (SwapWeightProducts.cpp). Zen 4, weights compiled in, alternated in one
  // process, bit-identical: the MLP 784-512-512-10 at batch 256 3.14 -> 3.01
  // ms on one thread, 1.56 -> 1.50 on two, batch 16 0.190 -> 0.186 (two
  // threads 0.101 -> 0.102), a Linear 4096 -> 1024 at batch 256 20.8 -> 19.8
  // ms, at 64 5.27 -> 5.08, 2048 -> 2048 at 256 on two threads 10.6 -> 10.1;
  // 1024 x 1024 x 1024 and the bench CNN level; its AVX2 code (haswell, 6 x
  // 16 tiles) the MLP at batch 256 3.24 -> 3.09 ms, at 16 0.200 -> 0.193.
  // (float64 as deep in bytes.)
  int64_t deepBlock = kDeepReductionBlock * 32 / element.getIntOrFloatBitWidth();
  if (isCompiledIn(op.getDpsInputOperand(1)->get())) {
    block[2] = std::max(block[2], std::min(reduction, deepBlock));
    return block;
  }
  int64_t resultBlockBytes =
      rows * std::min(columns, block[1]) * element.getIntOrFloatBitWidth() / 8;
  // As deep in bytes as float32's: float64 rows 512 deep (Intel Xeon with
  // AMX, one core, paired calls, bit-identical: dgemm 1024 +8.4%, 1536
  // +2.4%, 2048 +4.8% against 1024 deep; 256 deep was 1.6% slower at 2048;
  // Zen 4 measured float64 1024 deep against 256 only).
  // Register tiles rows outermost (AVX2 float32) keep 256-step blocks while
  // the column block is no larger than the L2: each row tile's 6 x 256 block
  // of A then stays in L1 while it sweeps the panels. One Zen 4 core, AVX2
  // code, paired in one process: sgemm 1024 (a column block of 1 MiB, the
  // L2's size) 11% slower in blocks of 1024 steps; sgemm 2048 (2 MiB) 4%
  // faster in them.
  bool rowTilesOuter =
      takesRowTilesOuter(element, getElementTypeOrSelf(op->getResult(0).getType()), rows,
                         std::min(columns, block[1]), std::min(reduction, block[2]), options);
  if (rowTilesOuter ? resultBlockBytes > options.l2Bytes : resultBlockBytes >= options.l2Bytes) {
    block[2] = std::max(block[2], deepBlock);
    // Half the rows, so that the left operand's block (rows x reduction
    // block, 256 KiB) still leaves the L2 to the panels and accumulators:
    // paired, one core of the Xeon with AMX, bit-identical: sgemm 2048 +2.3%
    // (its AVX2 code +3%), dgemm 1024 +2.5%, 2048 +1.7%. Narrower tiles
    // (AVX2) take 16 rows, three tiles a panel, where the L2 holds the
    // packed block of the right operand that each block of rows rereads:
    // alternated launches on the same core, AVX2 code, dgemm 2048 +4.9% (two
    // threads +5.8%), sgemm 2048 +2.7% (two threads +2.3%), 1024 within
    // noise; 32 rows were slower than 64 for dgemm, and the 512-bit tiles
    // gained nothing. (An L2 smaller than that block, as Zen 2's 512 KiB,
    // keeps 64 rows: unmeasured there.)
    int64_t packedBytes = block[1] * block[2] * element.getIntOrFloatBitWidth() / 8;
    bool narrow = options.registers.bits < 512 && packedBytes <= options.l2Bytes;
    block[0] = std::min(block[0], narrow ? kDeepRowBlockNarrow : kDeepRowBlock);
    // Row tiles outermost load their rows' block of A (6 x 1024 float32,
    // 24 KiB, from L3) into L1 once per column block: blocks of twice the
    // columns halve those loads. One Zen 4 core, AVX2 code, paired in one
    // process (best call of each round): sgemm 2048 +1.2-3.9% in five
    // pairs, 2112 +1.4%, 4096 x 1024 by 1024 x 1024 +3.7% and +7.4% (-5.5%
    // in a noisy stretch), 1536 and 2048 x 1024 by 1024 x 4096 level; two
    // threads, sgemm 2048 +0.8-1.1%. Four times the columns gained no more.
    // (Zen 2's 512 KiB L2 takes them too: unmeasured there.)
    if (rowTilesOuter)
      block[1] = std::min(columns, 2 * block[1]);
  }
  return block;
}

/// The element type `v` holds, looking through a widening of it (an int8
/// product's operands are i32 extensions of bytes until the schedule packs
/// them).
static Type narrowElementType(Value v) {
  if (auto widen = v.getDefiningOp<linalg::GenericOp>())
    if (widen.getNumDpsInputs() == 1 && widen.getNumParallelLoops() == widen.getNumLoops() &&
        llvm::all_of(widen.getIndexingMapsArray(), [](AffineMap m) { return m.isIdentity(); }))
      if (isa_and_present<arith::ExtSIOp, arith::ExtUIOp, arith::ExtFOp>(
              widen.getBody()->getTerminator()->getOperand(0).getDefiningOp()))
        return getElementTypeOrSelf(widen.getDpsInputOperand(0)->get().getType());
  return getElementTypeOrSelf(v.getType());
}

/// Rows of a matmul's split below which each thread's share is too thin to
/// read all of a compiled-in weight for.
static constexpr int64_t kMinRowsPerThread = 32;

/// Columns of a matmul at most this fraction of its rows split by rows.
static constexpr int64_t kRowsPerColumnForRows = 4;

/// Whether threads split a matmul by rows rather than by columns. By
/// columns each thread packs only its share of the right operand, but reads
/// all of the left one, which the previous op's threads wrote each in its own
/// cache. A weight compiled in is packed already: by rows, each thread reads
/// it whole (clean lines any core may hold) and keeps the rows it wrote
/// before. (Intel Xeon with AMX, two threads, MLP 784-512-512-10 with its
/// weights compiled in: batch 256 float32 0.94 -> 0.90 ms, bf16 0.29 -> 0.26,
/// int8 0.37 -> 0.33; batch 64 bf16 0.095 -> 0.078, int8 0.11 -> 0.092,
/// float32 level. At batch 16 and 32 columns stay ahead: bf16 at batch 16
/// 0.03 -> 0.23 ms by rows.) So do products of few columns by many rows,
/// whose right operand each thread packs whole at a fraction of the left
/// one's cost (a bf16 convolution on AMX tiles as one product of its
/// windows, 3136 x 288 by 288 x 64: by columns each thread packed all 3136
/// rows, 0.17 ms against 0.10 on one thread; the bench CNN in bf16 on two
/// threads, weights passed in, 0.49 -> 0.40 ms).
static bool splitsRows(linalg::LinalgOp op, unsigned threads) {
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  if (ShapedType::isDynamic(ranges[0]) || ranges[0] < kMinRowsPerThread * threads)
    return false;
  if (!ShapedType::isDynamic(ranges[1]) && ranges[1] * kRowsPerColumnForRows <= ranges[0])
    return true;
  return isCompiledIn(op.getDpsInputOperand(1)->get());
}

std::optional<std::pair<unsigned, int64_t>>
cpu::parallelSplit(linalg::LinalgOp op, LoweringConfigAttr config, const StrategyOptions &options) {
  if (options.threads < 2 || op->getNumResults() == 0)
    return std::nullopt;
  // An op inside a parallel loop of the lowering's own (Winograd's blocks
  // of tiles) runs on the thread that takes its iteration.
  if (op->getParentOfType<scf::ForallOp>())
    return std::nullopt;
  // A transpose that only feeds matmuls as their right operand (a Linear
  // layer's weight) is not computed: their blocks pack straight from its
  // input. Split, it was (0.24 of 1.74 ms for an MLP at batch 256 on two
  // threads).
  if (isa<linalg::TransposeOp>(op.getOperation()) &&
      llvm::all_of(op->getResult(0).getUses(), [](OpOperand &use) {
        return isa<linalg::MatmulOp>(use.getOwner()) && use.getOperandNumber() == 1;
      }))
    return std::nullopt;
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  // Each iteration writes an element of every result: a Winograd transform
  // of 16 points over [C, N, 7, 7] tiles is 16 times the work of its loops
  // (the bf16 CNN's input transform stayed on one thread).
  int64_t work = op->getNumResults();
  for (int64_t r : ranges) {
    if (ShapedType::isDynamic(r))
      return std::nullopt;
    work = r > 0 && work > std::numeric_limits<int64_t>::max() / r ? work : work * r;
  }
  // A matrix-vector product streams its weight from memory: two threads
  // read it twice as fast, so it is worth splitting at a fraction of the work
  // (kGemvWorkDivisor), by weight rows.
  bool gemv = config.getKernel() == CpuKernel::MatrixVector;
  // Elementwise ops (an SGD step, a ReLU's gradient) stream memory too, with
  // a few operations per element: they split from a sixteenth of the work.
  // (The MLP's training step at batch 64 on two threads: 1.21 -> 0.92 ms.)
  // Reductions over small windows (poolings) stream memory the same way.
  // (The bench CNN's pooling after its first convolution stayed on one
  // thread.)
  // Not an op that reads at fixed positions (the nine taps of the Winograd
  // filter transform in planes, [f, c, i, j] at constant i and j), which the
  // vectorizer leaves to scalar loops: LLVM vectorizes those with gathers on
  // one thread but not in a split's chunk, whose views it cannot tell apart
  // (too many run-time alias checks). The bench CNN's filter transform took
  // 48 us on two threads against 9 on one.
  bool readsFixedPositions = llvm::any_of(op.getIndexingMapsArray(), [](AffineMap map) {
    return llvm::any_of(map.getResults(), [](AffineExpr e) {
      auto constant = dyn_cast<AffineConstantExpr>(e);
      return constant && constant.getValue() != 0;
    });
  });
  // So do plain reductions that read each input element once (a full
  // reduction's chunks per thread). (Not a matrix-vector product's lane
  // sums, which its chunks sum themselves.)
  bool readsOnce = config.getKernel() == CpuKernel::Default && op.getNumReductionLoops() > 0 &&
                   op.getNumDpsInputs() > 0 &&
                   llvm::all_of(op.getDpsInputOperands(), [&](OpOperand *input) {
                     return op.getMatchingIndexingMap(input).isPermutation();
                   });
  bool elementwise =
      !readsFixedPositions && (op.getNumParallelLoops() == op.getNumLoops() ||
                               config.getKernel() == CpuKernel::PoolWindow ||
                               config.getKernel() == CpuKernel::WindowReduction || readsOnce);
  int64_t minWork = options.minParallelWork;
  int64_t threshold = gemv          ? minWork / kGemvWorkDivisor
                      : elementwise ? minWork / kElementwiseWorkDivisor
                                    : minWork;
  if (work < threshold)
    return std::nullopt;
  // A product of few rows (matmulCacheTile's: B streamed row after row)
  // splits its columns across threads only where each thread's part of a row
  // of B is a page or more. Half a page each, both cores read every page of
  // B, and two threads were slower than one (one Zen 4 core against two: 4 x
  // 2048 by 1024 0.17 -> 0.32 ms, 4 x 1024 by 1024 0.083 -> 0.138, 4 x 512 by
  // 512 0.022 -> 0.030; a page each, 2 x 1024 by 2048 0.124 -> 0.093, 1 x
  // 2048 by 2048 0.294 -> 0.232).
  if (streamsFewRows(op, options.registers)) {
    Type element = getElementTypeOrSelf(op.getDpsInputOperand(1)->get().getType());
    if (ranges[1] / options.threads * element.getIntOrFloatBitWidth() / 8 < kPageBytes)
      return std::nullopt;
  }
  bool tileProduct = isa<linalg::MatmulOp>(op.getOperation()) &&
                     options.registers.tilesFor(narrowElementType(op.getDpsInputOperand(0)->get()));
  // A product on AMX tiles with fewer rows than a tile per thread stays on
  // one thread: its tiles take microseconds, less than two threads' handoff
  // and the other core's reads of what they wrote (the bf16 MLP at batch 16,
  // weights compiled in, Intel Xeon with AMX: 0.035 ms on two threads, 0.031
  // on one and now on two). (Kept on one thread below 32 rows a thread, the
  // MLP at batch 32 was slower.)
  if (tileProduct && !ShapedType::isDynamic(ranges[0]) &&
      ranges[0] < kAmxTileRows * options.threads)
    return std::nullopt;
  SmallVector<int64_t> tiles(config.getRegisterTile());
  if (tiles.size() != ranges.size())
    tiles = registerTile(op, options.registers);
  SmallVector<unsigned> order;
  if (isa<linalg::MatmulOp>(op.getOperation())) {
    order =
        splitsRows(op, options.threads) ? SmallVector<unsigned>{0, 1} : SmallVector<unsigned>{1, 0};
  } else if (gemv) {
    // By weight rows, else (a weight of 10 rows in tiles of 2) by A's rows.
    AffineMap result = op.getIndexingMapMatchingResult(op->getResult(0));
    order = {result.getDimPosition(1), result.getDimPosition(0)};
  } else {
    for (unsigned i = 0; i < ranges.size(); ++i)
      order.push_back(i);
  }
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  unsigned threads = options.threads;
  for (unsigned loop : order) {
    if (iterators[loop] != utils::IteratorType::parallel)
      continue;
    int64_t tile = std::max<int64_t>(tiles[loop], 1);
    // A product on AMX tiles keeps whole tiles of rows in each chunk (784
    // rows in two chunks of 392 fell back to vector registers).
    if (loop == 0 && tileProduct)
      tile = std::lcm(tile, kAmxTileRows);
    if (ranges[loop] < int64_t(threads) * tile)
      continue;
    int64_t chunk = llvm::divideCeil(ranges[loop], threads);
    chunk = llvm::divideCeil(chunk, tile) * tile;
    // Equal chunks: a smaller last one would have a dynamic shape.
    if (ranges[loop] % chunk != 0)
      continue;
    return std::make_pair(loop, chunk);
  }
  return std::nullopt;
}

LoweringConfigAttr cpu::selectLoweringConfig(linalg::LinalgOp op, const StrategyOptions &options) {
  LoweringConfigAttr config = getLoweringConfig(op);
  if (!config)
    config = LoweringConfigAttr::get(op->getContext(), kernelOf(op));
  if (config.getRegisterTile().size() != op.getNumLoops())
    config = config.withRegisterTile(registerTile(op, options.registers));
  if (isa<linalg::MatmulOp>(op.getOperation()) && config.getCacheTile().empty())
    config = config.withCacheTile(matmulCacheTile(op, options));
  if (config.getThreads().empty())
    if (auto split = parallelSplit(op, config, options))
      config = config.withThreads(split->first, split->second);
  return config;
}

namespace {
struct CpuStrategyPass : public mithril::impl::MithrilCpuStrategyBase<CpuStrategyPass> {
  using MithrilCpuStrategyBase::MithrilCpuStrategyBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    FailureOr<StrategyOptions> options = strategyOptions(
        module, getArgument(), targetCpu, vectorBits, cacheTile, threads, minParallelWork);
    if (failed(options))
      return signalPassFailure();
    module.walk([&](linalg::LinalgOp op) {
      if (op.hasPureTensorSemantics() && op.getNumLoops() > 0)
        setLoweringConfig(op, selectLoweringConfig(op, *options));
    });
  }
};
} // namespace
