//===- NumpyIO.h - .npy and .npz files --------------------------*- C++ -*-===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//

#ifndef MITHRIL_RUNTIME_NUMPYIO_H
#define MITHRIL_RUNTIME_NUMPYIO_H

#include "mithril/Runtime/Array.h"
#include "llvm/Support/Error.h"

#include <utility>

namespace mithril::runtime {

using NamedArrays = std::vector<std::pair<std::string, Array>>;

/// Parses the bytes of a .npy file; `source` names it in errors.
llvm::Expected<Array> parseNpy(llvm::ArrayRef<uint8_t> bytes, llvm::StringRef source);
/// Serializes an array as a version 1.0 .npy file.
std::vector<uint8_t> serializeNpy(const Array &array);

llvm::Expected<Array> readNpy(llvm::StringRef path);
/// Reads every array of a .npz archive (stored or deflated members).
llvm::Expected<NamedArrays> readNpz(llvm::StringRef path);
/// Parses the bytes of a .npz archive; `source` names it in errors.
llvm::Expected<NamedArrays> parseNpz(llvm::ArrayRef<uint8_t> bytes, llvm::StringRef source);

/// Writes atomically: to a temporary file beside `path`, then renamed, so an
/// interrupted write never leaves a partial file under the final name.
llvm::Error writeNpy(llvm::StringRef path, const Array &array);
/// Writes `bytes` to `path` through a temporary file and a rename, so that a
/// failed write never leaves a partial file behind under the final name.
llvm::Error writeFileAtomically(llvm::StringRef path, llvm::ArrayRef<uint8_t> bytes);
llvm::Error writeNpz(llvm::StringRef path, const NamedArrays &arrays);

} // namespace mithril::runtime

#endif // MITHRIL_RUNTIME_NUMPYIO_H
