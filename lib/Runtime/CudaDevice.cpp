//===- CudaDevice.cpp - the CUDA runtime library, loaded on demand --------===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//

#include "CudaDevice.h"

#include "RuntimeLibrary.h"

#include "llvm/Support/DynamicLibrary.h"
#include "llvm/Support/FileSystem.h"

#include <cstdlib>
#include <mutex>
#include <optional>

using namespace mithril::runtime;

static llvm::Error noDevice(const llvm::Twine &why) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), "no CUDA device: " + why);
}

llvm::Error CudaRuntime::takenError(llvm::StringRef what) const {
  std::string error = takeError();
  if (error.empty())
    return llvm::Error::success();
  return llvm::createStringError(llvm::inconvertibleErrorCode(), what + ": " + error);
}

static llvm::Expected<CudaRuntime> load() {
  std::string path = findRuntimeLibrary("MITHRIL_CUDA_RUNTIME",
                                        {MITHRIL_CUDA_RUNTIME_BUILD, MITHRIL_CUDA_RUNTIME_INSTALL});
  if (path.empty())
    return noDevice("this installation has no libmithril_cuda_runtime (it is built where a "
                    "CUDA toolkit is found); set MITHRIL_CUDA_RUNTIME to one");

  std::string error;
  auto library = llvm::sys::DynamicLibrary::getPermanentLibrary(path.c_str(), &error);
  if (!library.isValid())
    return noDevice("cannot load " + path + ": " + error);
  CudaRuntime runtime;
  runtime.path = path;
  auto bind = [&](auto &function, const char *name) { return bindSymbol(library, function, name); };
  if (!bind(runtime.deviceCount, "mithrilCudaDeviceCount") ||
      !bind(runtime.deviceArch, "mithrilCudaDeviceArch") ||
      !bind(runtime.takeError, "mithrilCudaTakeError") ||
      !bind(runtime.alloc, "mithrilCudaAlloc") || !bind(runtime.free, "mithrilCudaFree") ||
      !bind(runtime.copyToDevice, "mithrilCudaCopyToDevice") ||
      !bind(runtime.copyToHost, "mithrilCudaCopyToHost"))
    return noDevice(path + " is not a mithril CUDA runtime library of this version");
  return runtime;
}

llvm::Expected<const CudaRuntime *> mithril::runtime::loadCudaRuntime() {
  static std::mutex mutex;
  static std::optional<CudaRuntime> loaded;
  std::lock_guard<std::mutex> lock(mutex);
  if (!loaded) {
    auto runtime = load();
    if (!runtime)
      return runtime.takeError();
    loaded = std::move(*runtime);
  }
  return &*loaded;
}

llvm::Error CudaRuntime::checkDevice() const {
  if (deviceCount() <= 0)
    return noDevice("the CUDA driver finds no GPU (" + path + " loaded)");
  return llvm::Error::success();
}
