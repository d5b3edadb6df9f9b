//===- RuntimeLibrary.h - optional runtime libraries, found at run time ---===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//

#ifndef MITHRIL_LIB_RUNTIME_RUNTIMELIBRARY_H
#define MITHRIL_LIB_RUNTIME_RUNTIMELIBRARY_H

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/DynamicLibrary.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <cstdlib>
#include <dlfcn.h>
#include <initializer_list>
#include <string>

namespace mithril::runtime {

/// Where an optional runtime library (CUDA, MPI) is: the path in the
/// environment variable `override` if set, else the first of `candidates`
/// (the build tree's, then the installed one) that exists, else a library of
/// the same name next to the code calling this (the Python extension of a
/// `pip install`ed package carries them); empty if none.
inline std::string findRuntimeLibrary(const char *override,
                                      std::initializer_list<const char *> candidates) {
  if (const char *env = std::getenv(override); env && *env)
    return env;
  for (const char *candidate : candidates)
    if (llvm::sys::fs::exists(candidate))
      return candidate;
  Dl_info self;
  if (candidates.size() && dladdr(reinterpret_cast<void *>(&findRuntimeLibrary), &self) &&
      self.dli_fname) {
    llvm::SmallString<256> beside(llvm::sys::path::parent_path(self.dli_fname));
    llvm::sys::path::append(beside, llvm::sys::path::filename(*candidates.begin()));
    if (llvm::sys::fs::exists(beside))
      return std::string(beside);
  }
  return "";
}

/// Points `function` at `library`'s symbol `name`; false if it has none.
template <typename Function>
bool bindSymbol(llvm::sys::DynamicLibrary &library, Function &function, const char *name) {
  function = reinterpret_cast<Function>(library.getAddressOfSymbol(name));
  return function != nullptr;
}

} // namespace mithril::runtime

#endif // MITHRIL_LIB_RUNTIME_RUNTIMELIBRARY_H
