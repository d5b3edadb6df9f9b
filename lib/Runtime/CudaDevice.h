//===- CudaDevice.h - the CUDA runtime library, loaded on demand ----------===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//
//
// Compiled models for target "cuda" call libmithril_cuda_runtime (the mgpu*
// functions of the lowered host code, over the CUDA driver). It is loaded
// when such a model is compiled, not linked, so that mithril runs on
// machines with no CUDA driver.
//
//===----------------------------------------------------------------------===//

#ifndef MITHRIL_LIB_RUNTIME_CUDADEVICE_H
#define MITHRIL_LIB_RUNTIME_CUDADEVICE_H

#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>

namespace mithril::runtime {

struct CudaRuntime {
  std::string path;
  int32_t (*deviceCount)() = nullptr;
  int32_t (*deviceArch)() = nullptr;
  const char *(*takeError)() = nullptr;
  void *(*alloc)(uint64_t) = nullptr;
  void (*free)(void *) = nullptr;
  void (*copyToDevice)(void *, const void *, uint64_t) = nullptr;
  void (*copyToHost)(void *, const void *, uint64_t) = nullptr;

  /// Fails, with "no CUDA device", where the driver finds no GPU.
  llvm::Error checkDevice() const;
  /// The runtime's first error since the last call, as an llvm::Error.
  llvm::Error takenError(llvm::StringRef what) const;
};

/// Loads the library once per process: $MITHRIL_CUDA_RUNTIME, else the build
/// tree's, else the installed one. Errors begin with "no CUDA device". It
/// loads without a GPU where the driver library is present.
llvm::Expected<const CudaRuntime *> loadCudaRuntime();

} // namespace mithril::runtime

#endif // MITHRIL_LIB_RUNTIME_CUDADEVICE_H
