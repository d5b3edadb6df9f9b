//===- ArrayMemoryTest.cpp - memory for array data ------------------------===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//

#include "../lib/Runtime/Driver.h"
#include "mithril/Runtime/Array.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

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
  if (std::ifstream("/sys/kernel/mm/transparent_hugepage/enabled").good()) {
    EXPECT_NE(vmFlagsAt(array->data()).find("hg"), std::string::npos);
  }
}

// The buffer cache gives a thread back the block it released last, not the
// one another thread released after it: a split op's chunks allocate their
// packed panels at once, and a block that went to the other thread each
// run moved between the cores (the MLP at batch 256 on two threads of a
// Zen 5 with the cores apart: 0.68-0.71 ms from launch to launch, then 0.67).
TEST(BufferCache, AThreadGetsBackItsOwnBlock) {
  // A size no other test uses, so that the cache holds none of it.
  constexpr size_t kSize = 3 * 4096 + 192;
  void *first = nullptr, *second = nullptr;
  std::thread a([&] { first = detail::cachedAllocate(kSize); });
  a.join();
  std::thread b([&] { second = detail::cachedAllocate(kSize); });
  b.join();
  ASSERT_NE(first, nullptr);
  ASSERT_NE(second, nullptr);
  void *again = nullptr, *otherAgain = nullptr;
  // Released by the caller first, then by another thread: a stack of
  // blocks would hand the caller the other thread's.
  detail::cachedRelease(first);
  std::thread c([&] { detail::cachedRelease(second); });
  c.join();
  again = detail::cachedAllocate(kSize);
  EXPECT_EQ(again, first);
  // Another thread with no block of its own takes any.
  std::thread d([&] { otherAgain = detail::cachedAllocate(kSize); });
  d.join();
  EXPECT_EQ(otherAgain, second);
  detail::cachedRelease(again);
  detail::cachedRelease(otherAgain);
}

} // namespace
