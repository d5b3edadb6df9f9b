//===- npy_fuzzer.cpp - libFuzzer target for the .npy/.npz readers --------===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
// Any bytes must give an array or an error, never a crash, a hang or an
// out-of-bounds read. Whatever parses must serialize and parse back equal.
//
//===----------------------------------------------------------------------===//

#include "mithril/Runtime/NumpyIO.h"

#include <cstring>

using namespace mithril::runtime;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::ArrayRef<uint8_t> bytes(data, size);
  if (auto array = parseNpy(bytes, "fuzz.npy")) {
    std::vector<uint8_t> again = serializeNpy(*array);
    auto back = parseNpy(again, "again.npy");
    if (!back || back->byteSize() != array->byteSize() ||
        std::memcmp(back->data(), array->data(), array->byteSize()) != 0)
      __builtin_trap();
  } else {
    llvm::consumeError(array.takeError());
  }
  if (auto arrays = parseNpz(bytes, "fuzz.npz"); !arrays)
    llvm::consumeError(arrays.takeError());
  return 0;
}
