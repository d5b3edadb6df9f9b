//===- NumpyIOTest.cpp - .npy/.npz reading and writing --------------------===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//

#include "mithril/Runtime/NumpyIO.h"

#include "llvm/Support/FileSystem.h"
#include "gtest/gtest.h"

using namespace mithril::runtime;

namespace {
Array iota(DType dtype, llvm::ArrayRef<int64_t> shape) {
  Array a(dtype, shape);
  for (int64_t i = 0; i < a.size(); ++i) {
    if (dtype == DType::F32)
      a.as<float>()[i] = i * 0.5f;
    else if (dtype == DType::F64)
      a.as<double>()[i] = i * 0.25;
    else
      a.setFromDouble(i, static_cast<double>(i - 3)); // integers, negative too
  }
  return a;
}

TEST(NumpyIO, RoundTripsNpy) {
  for (DType dtype : {DType::F32, DType::F64, DType::I64, DType::I32, DType::I16, DType::I8}) {
    Array a = iota(dtype, {2, 3, 4});
    std::vector<uint8_t> bytes = serializeNpy(a);
    auto back = parseNpy(bytes, "mem");
    ASSERT_TRUE(bool(back)) << llvm::toString(back.takeError());
    EXPECT_EQ(back->dtype(), dtype);
    EXPECT_EQ(back->shape(), a.shape());
    for (int64_t i = 0; i < a.size(); ++i)
      EXPECT_EQ(back->getAsDouble(i), a.getAsDouble(i));
  }
}

TEST(NumpyIO, ScalarsAndEmptyArrays) {
  std::vector<llvm::SmallVector<int64_t>> shapes = {{}, {0, 3}};
  for (const auto &shape : shapes) {
    Array a = iota(DType::F64, shape);
    auto back = parseNpy(serializeNpy(a), "mem");
    ASSERT_TRUE(bool(back)) << llvm::toString(back.takeError());
    EXPECT_EQ(back->shape(), llvm::ArrayRef<int64_t>(shape));
  }
}

TEST(NumpyIO, RejectsTruncatedAndCorruptData) {
  std::vector<uint8_t> bytes = serializeNpy(iota(DType::F32, {4, 4}));
  std::vector<uint8_t> cut(bytes.begin(), bytes.end() - 5);
  auto r = parseNpy(cut, "x.npy");
  ASSERT_FALSE(bool(r));
  EXPECT_NE(llvm::toString(r.takeError()).find("x.npy: truncated data"), std::string::npos);

  std::vector<uint8_t> garbage = {'n', 'o', 't', ' ', 'n', 'p', 'y', '!', 0, 0, 0};
  auto g = parseNpy(garbage, "g.npy");
  ASSERT_FALSE(bool(g));
  EXPECT_NE(llvm::toString(g.takeError()).find("bad magic"), std::string::npos);

  // A header that claims more bytes than the file has.
  std::vector<uint8_t> header(bytes.begin(), bytes.begin() + 10);
  header[8] = 0xff;
  header[9] = 0xff;
  EXPECT_FALSE(bool(parseNpy(header, "h.npy")));
  llvm::consumeError(parseNpy(header, "h.npy").takeError());
}

TEST(NumpyIO, RoundTripsNpzAtomically) {
  llvm::SmallString<128> dir;
  ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("mithril-npz", dir));
  std::string path = (dir + "/out.npz").str();
  NamedArrays arrays;
  arrays.emplace_back("layer1.weight", iota(DType::F32, {3, 2}));
  arrays.emplace_back("output", iota(DType::F64, {5}));
  ASSERT_FALSE(bool(writeNpz(path, arrays)));
  auto back = readNpz(path);
  ASSERT_TRUE(bool(back)) << llvm::toString(back.takeError());
  ASSERT_EQ(back->size(), 2u);
  EXPECT_EQ((*back)[0].first, "layer1.weight");
  EXPECT_EQ((*back)[1].second.shape(), llvm::ArrayRef<int64_t>({5}));
  EXPECT_EQ((*back)[1].second.getAsDouble(4), 1.0);
  // Only the final file is left behind.
  std::error_code ec;
  int files = 0;
  for (llvm::sys::fs::directory_iterator it(dir, ec), end; it != end && !ec; it.increment(ec))
    ++files;
  EXPECT_EQ(files, 1);
  llvm::sys::fs::remove_directories(dir);
}
} // namespace
