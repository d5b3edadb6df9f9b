//===- CompileCache.h - compiled code kept between processes ----*- C++ -*-===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//
//
// A persistent compile cache, as JAX and torch keep one: the object code and
// the logical IR of each compile that took long enough, in files named by a
// hash of the source, the compile options, the host CPU and features, and the
// build of this library. A later process compiling the same model on the same
// host loads the object code instead (CompiledModel::load).
//
// MITHRIL_CACHE_DIR sets the directory (default: $XDG_CACHE_HOME/mithril, else
// ~/.cache/mithril); MITHRIL_CACHE=0 turns the cache off;
// MITHRIL_CACHE_MIN_SECONDS (default 0.1) is the shortest compile kept;
// MITHRIL_CACHE_MAX_MB (default 1024) bounds the directory, the least
// recently used entries going first.
//
//===----------------------------------------------------------------------===//

#ifndef MITHRIL_LIB_RUNTIME_COMPILECACHE_H
#define MITHRIL_LIB_RUNTIME_COMPILECACHE_H

#include "mithril/Runtime/CompiledModel.h"

#include "llvm/ADT/StringRef.h"

#include <optional>
#include <string>

namespace mithril::runtime {

class CompileCache {
public:
  /// The cache the environment asks for, or nullopt when it is off or
  /// `options` are ones it does not keep (GPU targets, profiling, MPI).
  static std::optional<CompileCache> forOptions(const CompileOptions &options);

  /// The entry of `source` compiled with the options.
  std::string key(llvm::StringRef source, const CompileOptions &options) const;

  struct Entry {
    std::string object, logicalIR;
  };
  /// The entry under `key`, if kept (and marks it used).
  std::optional<Entry> lookup(llvm::StringRef key) const;

  /// Keeps an entry that took `seconds` to compile; failures to write are
  /// ignored (the cache only saves time).
  void store(llvm::StringRef key, const Entry &entry, double seconds) const;

private:
  explicit CompileCache(std::string dir) : dir_(std::move(dir)) {}
  std::string path(llvm::StringRef key, llvm::StringRef extension) const;
  void prune() const;

  std::string dir_;
};

} // namespace mithril::runtime

#endif // MITHRIL_LIB_RUNTIME_COMPILECACHE_H
