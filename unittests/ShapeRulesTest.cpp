//===- ShapeRulesTest.cpp - the shared shape rules ------------------------===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//

#include "mithril/Dialect/Mithril/IR/MithrilOps.h"

#include "mlir/IR/BuiltinTypes.h"
#include "gtest/gtest.h"

using namespace mithril;

namespace {
constexpr int64_t D = mlir::ShapedType::kDynamic;

TEST(BroadcastShapes, NumpyRules) {
  auto r = broadcastShapes({4, 1, 8}, {3, 1});
  ASSERT_TRUE(mlir::succeeded(r));
  EXPECT_EQ(*r, (llvm::SmallVector<int64_t>{4, 3, 8}));
  EXPECT_TRUE(mlir::failed(broadcastShapes({4, 8}, {4, 9})));
  auto scalar = broadcastShapes({}, {2, 3});
  ASSERT_TRUE(mlir::succeeded(scalar));
  EXPECT_EQ(*scalar, (llvm::SmallVector<int64_t>{2, 3}));
}

TEST(BroadcastShapes, DynamicDimensions) {
  // A dynamic dimension against a static one takes the static size; two
  // dynamic dimensions stay dynamic; 1 stretches to a dynamic size.
  auto r = broadcastShapes({D, 8, 1}, {5, D, D});
  ASSERT_TRUE(mlir::succeeded(r));
  EXPECT_EQ(*r, (llvm::SmallVector<int64_t>{5, 8, D}));
}

TEST(NormalizeAxes, NegativeAndInvalid) {
  auto r = normalizeAxes({-1, 0}, 3);
  ASSERT_TRUE(mlir::succeeded(r));
  EXPECT_EQ(*r, (llvm::SmallVector<int64_t>{2, 0}));
  EXPECT_TRUE(mlir::failed(normalizeAxes({3}, 3)));
  EXPECT_TRUE(mlir::failed(normalizeAxes({1, -2}, 3))); // the same axis twice
}

TEST(Terminals, PlainIdentifiers) {
  EXPECT_TRUE(isPlainIdentifier("block1.conv.weight"));
  EXPECT_TRUE(isPlainIdentifier("$input"));
  EXPECT_FALSE(isPlainIdentifier("0"));
  EXPECT_FALSE(isPlainIdentifier("my input"));
  EXPECT_FALSE(isPlainIdentifier(""));
}

TEST(Shapes, Format) {
  EXPECT_EQ(formatShape({4, D, 8}), "4x?x8");
  EXPECT_EQ(formatShape({}), "scalar");
}
} // namespace
