//===- CpuTarget.h - what code generation knows of an x86-64 CPU -*- C++ -*-===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//

#ifndef MITHRIL_CODEGEN_CPU_CPUTARGET_H
#define MITHRIL_CODEGEN_CPU_CPUTARGET_H

#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <optional>

namespace mithril {

/// The bytes of a cache line on every x86-64 CPU we target: what one
/// prefetch brings in (the mithril-prefetch-* passes).
inline constexpr int64_t kCacheLineBytes = 64;

/// What the CPU strategy needs to know of an x86-64 CPU: the width of its
/// vector registers (512 bits with AVX-512, whose 32 registers hold 8-row
/// tiles; 256 with AVX, 16 registers, 6 rows; 128 otherwise), the
/// low-precision dot products it has, and its L2 cache.
struct CpuTarget {
  unsigned vectorBits = 128;
  /// vdpbf16ps: pairs of bf16 multiplied and summed into f32 (AVX512-BF16,
  /// which also rounds f32 to bf16 in one instruction, vcvtneps2bf16).
  bool bf16DotProduct = false;
  /// Whether vdpbf16ps issues at under half the rate of the float32 FMAs:
  /// on the Intel cores from Sapphire Rapids on (known, as for
  /// wideFloatTiles, by AVX512-FP16) it issues about once in two cycles
  /// against two FMAs a cycle (Emerald Rapids, one core, 12 independent
  /// sums: 85 against 189 GFLOP/s), so a bf16 product multiplies faster
  /// widened to float32. Zen 4 and 5 run it at least at their FMA rate.
  bool slowBF16DotProduct = false;
  /// vpdpbusd: quads of u8 x s8 summed into i32 (AVX512-VNNI).
  bool int8DotProduct = false;
  /// AMX tiles: tdpbf16ps (AMX-BF16) and tdpbusd (AMX-INT8) multiply 16-row
  /// tiles of 64-byte rows into 16 x 16 f32 or i32 tiles. For the host, only
  /// when Linux also lets this process use them (arch_prctl, asked once).
  bool bf16Tiles = false;
  bool int8Tiles = false;
  /// Whether wide float32 products take 6 x 64 register tiles (four
  /// registers of columns) rather than 8 x 32: the Intel cores from
  /// Sapphire Rapids on, where they were measured faster (see
  /// RegisterFile::wideFloatTiles), known by AMX or, where a hypervisor
  /// hides AMX, by AVX512-FP16. Whether the process may use the AMX tiles
  /// does not matter here.
  bool wideFloatTiles = false;
  /// The width in bits of the core's vector datapaths: 256 on AMD Zen 4,
  /// which runs each 512-bit instruction as two 256-bit halves (its FMAs on
  /// zmm registers issue at half the rate of those on ymm ones, the same
  /// flops a cycle), else the registers' width. What the core consumes a
  /// cycle, not what a register holds (Scheduler::matrixVectorReductionParts).
  unsigned datapathBits = 512;
  /// The L2 cache per core in bytes: the host's from sysfs; a named CPU's
  /// from a table (2 MiB for Sapphire Rapids and later Xeons, 512 KiB for
  /// Zen 1 to 3); else 1 MiB.
  int64_t l2Bytes = 1 << 20;
  /// The L1 data cache per core in bytes: the host's from sysfs; a named
  /// CPU's from a table (48 KiB on Intel's cores from Ice Lake on and on Zen
  /// 5); else 32 KiB.
  int64_t l1Bytes = 32 << 10;

  /// Whether bf16 matrix products (matmuls, convolutions) multiply bf16
  /// pairs, on vdpbf16ps or AMX tiles, rather than widen each element to
  /// float32 for the FMAs: with vdpbf16ps unless it is slow, and always
  /// where the AMX tiles are usable (their kernels and the vector code around
  /// them are made for pairs). Matrix-vector products keep bf16 weights
  /// wherever vdpbf16ps exists (they read half the bytes), on FMAs where
  /// it is slow (RegisterFile::bf16MatrixVectorDots).
  bool bf16PairProducts() const { return bf16DotProduct && (bf16Tiles || !slowBF16DotProduct); }
};

/// What code generation needs of a CPU with `features` (LLVM's names, as
/// llvm::sys::getHostCPUFeatures gives them), without its caches: l1Bytes and
/// l2Bytes keep their defaults.
CpuTarget cpuTargetFromFeatures(const llvm::StringMap<bool> &features);
/// The features of the x86-64 CPU named `cpu` by LLVM, from LLVM's table,
/// with the features they imply; empty for a name LLVM does not know.
llvm::StringMap<bool> namedCpuFeatures(llvm::StringRef cpu);
/// The CPU named `cpu` by LLVM (from its table of the CPU's features), or
/// the host (CPUID, and sysfs for the caches) when empty; none for a name
/// LLVM does not know.
std::optional<CpuTarget> cpuTarget(llvm::StringRef cpu = "");

/// Makes cpuTarget("") answer for the CPU `spec` names instead of the host,
/// for the rest of the process: `mithril-opt --host-cpu`, with which lit pins
/// the host of the IR tests so that they check the same output on every
/// machine. `spec` is LLVM's name of the CPU, then optionally features it
/// has or lacks besides LLVM's table, comma-separated ("sapphirerapids,
/// -amx-tile": one whose hypervisor hides AMX, as our build machines' VMs
/// do; a feature off takes those that need it along). Code compiled under
/// it is for that CPU, not for this one. False, and nothing pinned, for a
/// name or feature LLVM does not know.
bool pinHostCpu(llvm::StringRef spec);

/// The width in bits of an x86-64 CPU's vector registers, which the CPU
/// schedule sizes its register tiles for: `cpu` by LLVM's name (from its
/// table of the CPU's features), or the host's (CPUID) when empty. 512 with
/// AVX-512, 256 with AVX, 128 otherwise; none for a name LLVM does not know.
std::optional<unsigned> vectorRegisterBits(llvm::StringRef cpu = "");

/// Asks Linux, once per process, for the AMX tile state (XTILEDATA) that
/// code using AMX tiles needs before its first tile instruction; whether
/// this process may use them (false off Linux, or without AMX).
bool hostAllowsAmxTiles();

} // namespace mithril

#endif // MITHRIL_CODEGEN_CPU_CPUTARGET_H
