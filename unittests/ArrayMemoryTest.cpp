//===- ArrayMemoryTest.cpp - memory for array data ------------------------===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//

#include "mithril/Runtime/Array.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

using namespace mithril::runtime;

namespace {

/// The VmFlags of the mapping of this process that holds `address`, from
/// /proc/self/smaps; empty when there is none.
std::string vmFlagsAt(const void *address) {
  std::ifstream smaps("/proc/self/smaps");
  auto at = reinterpret_cast<uintptr_t>(address);
  bool inside = false;
  for (std::string line; std::getline(smaps, line);) {
    uintptr_t start, end;
    char dash;
    std::istringstream header(line);
    // A mapping's header: "start-end perms offset dev inode path".
    if (line.find(':') > line.find(' ') && header >> std::hex >> start >> dash >> end &&
        dash == '-') {
      inside = start <= at && at < end;
      continue;
    }
    if (inside && line.rfind("VmFlags:", 0) == 0)
      return line.substr(8);
  }
  return "";
}

TEST(ArrayMemory, SmallBlocksAre64ByteAligned) {
  void *block = allocateArrayMemory(1000);
  ASSERT_NE(block, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(block) % 64, 0u);
  std::free(block);
}

TEST(ArrayMemory, LargeBlocksAskForHugePages) {
  size_t bytes = kHugePageBytes * 2 + 100;
  void *block = allocateArrayMemory(bytes);
  ASSERT_NE(block, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(block) % (2 << 20), 0u);
  static_cast<char *>(block)[bytes - 1] = 1; // writable to its end
  if (std::ifstream("/sys/kernel/mm/transparent_hugepage/enabled").good()) {
    std::string flags = vmFlagsAt(block);
    ASSERT_FALSE(flags.empty()) << "no mapping holds the block in /proc/self/smaps";
    EXPECT_NE((" " + flags + " ").find(" hg "), std::string::npos)
        << "VmFlags without hg (MADV_HUGEPAGE):" << flags;
  }
  std::free(block);
}

TEST(ArrayMemory, ArraysOfLargeShapesAskForHugePages) {
  auto array = Array::allocate(DType::F64, {1024, 1024});
  ASSERT_TRUE(static_cast<bool>(array)) << llvm::toString(array.takeError());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(array->data()) % (2 << 20), 0u);
  if (std::ifstream("/sys/kernel/mm/transparent_hugepage/enabled").good())
    EXPECT_NE(vmFlagsAt(array->data()).find("hg"), std::string::npos);
}

} // namespace
