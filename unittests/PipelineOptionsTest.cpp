//===- PipelineOptionsTest.cpp - pipeline options print and parse back ----===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//

#include "mithril/Pipelines/Pipelines.h"

#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

using namespace mithril;

namespace {

// The reproducer of a failed GPU compile prints every option; parsing that
// text must give the same options back.
TEST(PipelineOptions, GpuOptionsPrintAndParseBack) {
  GpuPipelineOptions options;
  options.entry = "Model";
  options.shapes = {"input:4x8", "target:4"};
  options.gradients = true;
  options.wrt = {"weight"};
  options.optimizer = "adam";
  options.chip = "sm_80";
  options.stopAfter = "kernels";
  std::string printed;
  llvm::raw_string_ostream os(printed);
  options.print(os);
  ASSERT_FALSE(printed.empty());
  ASSERT_EQ(printed.front(), '{');
  ASSERT_EQ(printed.back(), '}');
  auto parsed = GpuPipelineOptions::createFromString(printed.substr(1, printed.size() - 2));
  ASSERT_TRUE(parsed) << printed;
  EXPECT_EQ(parsed->entry, "Model");
  EXPECT_EQ(std::vector<std::string>(parsed->shapes.begin(), parsed->shapes.end()),
            (std::vector<std::string>{"input:4x8", "target:4"}));
  EXPECT_TRUE(parsed->gradients);
  EXPECT_EQ(std::vector<std::string>(parsed->wrt.begin(), parsed->wrt.end()),
            std::vector<std::string>{"weight"});
  EXPECT_EQ(parsed->optimizer, "adam");
  EXPECT_EQ(parsed->chip, "sm_80");
  EXPECT_EQ(parsed->stopAfter, "kernels");
}

} // namespace
