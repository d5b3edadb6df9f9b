//===- CpuTargetTest.cpp - what code generation reads of the host CPU -----===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//

#include "mithril/Codegen/CPU/CpuTarget.h"

#include "llvm/TargetParser/X86TargetParser.h"

#include <fstream>
#include <string>

#include <gtest/gtest.h>

using namespace mithril;

namespace {

// The host's L2 comes from sysfs, whose files claim a page of size but hold a
// few bytes: read as a regular file, they never parsed and every host was
// taken for 1 MiB.
TEST(CpuTarget, HostL2IsReadFromSysfs) {
  std::string dir = "/sys/devices/system/cpu/cpu0/cache/index2/";
  std::ifstream level(dir + "level"), size(dir + "size");
  std::string levelText, sizeText;
  if (!(level >> levelText) || levelText != "2" || !(size >> sizeText) || sizeText.empty() ||
      sizeText.back() != 'K')
    GTEST_SKIP() << "no sysfs L2 entry in kilobytes on this host";
  int64_t expected = std::stoll(sizeText.substr(0, sizeText.size() - 1)) * 1024;
  std::optional<CpuTarget> host = cpuTarget();
  ASSERT_TRUE(host.has_value());
  EXPECT_EQ(host->l2Bytes, expected);
}

// A named CPU's features come from LLVM's table: AMX on Sapphire Rapids,
// neither AMX nor AVX-512 on Zen 2; an unknown name is none.
TEST(CpuTarget, NamedCpusFollowLLVMsFeatureTable) {
  std::optional<CpuTarget> spr = cpuTarget("sapphirerapids");
  ASSERT_TRUE(spr.has_value());
  EXPECT_EQ(spr->vectorBits, 512u);
  EXPECT_TRUE(spr->bf16Tiles && spr->int8Tiles && spr->bf16DotProduct && spr->int8DotProduct);
  std::optional<CpuTarget> zen4 = cpuTarget("znver4");
  ASSERT_TRUE(zen4.has_value());
  EXPECT_TRUE(zen4->bf16DotProduct && !zen4->bf16Tiles && !zen4->int8Tiles);
  std::optional<CpuTarget> zen2 = cpuTarget("znver2");
  ASSERT_TRUE(zen2.has_value());
  EXPECT_EQ(zen2->vectorBits, 256u);
  EXPECT_FALSE(zen2->bf16DotProduct || zen2->bf16Tiles);
  // The table lists Alder Lake's avx2 but not the avx it implies.
  std::optional<CpuTarget> alderLake = cpuTarget("alderlake");
  ASSERT_TRUE(alderLake.has_value());
  EXPECT_EQ(alderLake->vectorBits, 256u);
  EXPECT_FALSE(cpuTarget("pentium9").has_value());
}

// Zen 4 runs its 512-bit instructions in two 256-bit halves: its datapaths
// are 256 bits wide, as are an AVX2 CPU's; Zen 5's and Intel's AVX-512
// cores compute whole 512-bit vectors.
TEST(CpuTarget, DatapathWidth) {
  std::optional<CpuTarget> zen4 = cpuTarget("znver4"), zen5 = cpuTarget("znver5"),
                           skx = cpuTarget("skylake-avx512"), zen2 = cpuTarget("znver2");
  ASSERT_TRUE(zen4 && zen5 && skx && zen2);
  EXPECT_EQ(zen4->vectorBits, 512u);
  EXPECT_EQ(zen4->datapathBits, 256u);
  EXPECT_EQ(zen5->datapathBits, 512u);
  EXPECT_EQ(skx->datapathBits, 512u);
  EXPECT_EQ(zen2->datapathBits, 256u);
}

// The 6 x 64 float tiles follow the core, not the tiles: a Sapphire Rapids
// whose hypervisor hides AMX (CPUID without amx_tile, as the Emerald Rapids
// VMs of our build machines show it) keeps them by AVX512-FP16 and loses
// only the AMX kernels; the other AVX-512 cores keep 8 x 32.
TEST(CpuTarget, WideFloatTilesWithoutAmx) {
  llvm::StringMap<bool> features = namedCpuFeatures("sapphirerapids");
  ASSERT_TRUE(features.lookup("amx-tile") && features.lookup("avx512fp16"));
  EXPECT_TRUE(cpuTargetFromFeatures(features).wideFloatTiles);
  llvm::X86::updateImpliedFeatures("amx-tile", /*Enabled=*/false, features);
  features["amx-tile"] = false;
  CpuTarget hidden = cpuTargetFromFeatures(features);
  EXPECT_TRUE(hidden.wideFloatTiles);
  EXPECT_FALSE(hidden.bf16Tiles || hidden.int8Tiles);
  EXPECT_TRUE(hidden.bf16DotProduct && hidden.int8DotProduct);
  EXPECT_EQ(hidden.vectorBits, 512u);
  // Its bf16 products widen to float32 (vdpbf16ps issues once in two
  // cycles there); with the tiles, and on Zen 4 and Cooper Lake, they
  // multiply pairs.
  EXPECT_TRUE(hidden.slowBF16DotProduct);
  EXPECT_FALSE(hidden.bf16PairProducts());
  EXPECT_TRUE(cpuTarget("sapphirerapids")->bf16PairProducts());
  EXPECT_TRUE(cpuTarget("znver4")->bf16PairProducts());
  EXPECT_TRUE(cpuTarget("cooperlake")->bf16PairProducts());
  EXPECT_FALSE(cpuTarget("znver2")->bf16PairProducts());
  EXPECT_TRUE(cpuTarget("emeraldrapids")->wideFloatTiles);
  EXPECT_FALSE(cpuTarget("znver4")->wideFloatTiles);
  EXPECT_FALSE(cpuTarget("znver5")->wideFloatTiles);
  EXPECT_FALSE(cpuTarget("skylake-avx512")->wideFloatTiles);
  EXPECT_FALSE(cpuTarget("icelake-server")->wideFloatTiles);
}

// A named CPU's L2 per core, whatever the host's: code compiled for it gets
// its cache blocks.
TEST(CpuTarget, NamedCpusHaveTheirL2) {
  EXPECT_EQ(cpuTarget("sapphirerapids")->l2Bytes, 2 << 20);
  EXPECT_EQ(cpuTarget("znver2")->l2Bytes, 512 << 10);
  EXPECT_EQ(cpuTarget("znver4")->l2Bytes, 1 << 20);
  EXPECT_EQ(cpuTarget("skylake-avx512")->l2Bytes, 1 << 20);
}

// And its L1 data cache, which bounds a matrix-vector product's parts.
TEST(CpuTarget, NamedCpusHaveTheirL1) {
  EXPECT_EQ(cpuTarget("znver4")->l1Bytes, 32 << 10);
  EXPECT_EQ(cpuTarget("znver5")->l1Bytes, 48 << 10);
  EXPECT_EQ(cpuTarget("skylake-avx512")->l1Bytes, 32 << 10);
  EXPECT_EQ(cpuTarget("sapphirerapids")->l1Bytes, 48 << 10);
}

// The host's L1 data cache from sysfs (index0 is the data cache on x86
// Linux; the instruction cache is skipped by its type).
TEST(CpuTarget, HostL1IsReadFromSysfs) {
  std::string dir = "/sys/devices/system/cpu/cpu0/cache/index0/";
  std::ifstream level(dir + "level"), type(dir + "type"), size(dir + "size");
  std::string levelText, typeText, sizeText;
  if (!(level >> levelText) || levelText != "1" || !(type >> typeText) || typeText != "Data" ||
      !(size >> sizeText) || sizeText.empty() || sizeText.back() != 'K')
    GTEST_SKIP() << "no sysfs L1 data cache entry in kilobytes on this host";
  int64_t expected = std::stoll(sizeText.substr(0, sizeText.size() - 1)) * 1024;
  std::optional<CpuTarget> host = cpuTarget();
  ASSERT_TRUE(host.has_value());
  EXPECT_EQ(host->l1Bytes, expected);
}

} // namespace
