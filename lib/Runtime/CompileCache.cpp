//===- CompileCache.cpp - compiled code kept between processes ------------===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//

#include "CompileCache.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/SHA256.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cstdlib>
#include <dlfcn.h>
#include <sys/stat.h>
#include <utime.h>
#include <vector>

using namespace mithril::runtime;
using llvm::StringRef;

namespace {

/// What identifies this build of the compiler: the file holding this code
/// (the Python module, mithril-run, or the shared library) with its size and
/// modification time, so that a rebuilt compiler never takes code compiled
/// by an older one.
const std::string &buildIdentity() {
  static const std::string identity = [] {
    Dl_info info;
    if (!dladdr(reinterpret_cast<void *>(&buildIdentity), &info) || !info.dli_fname)
      return std::string("unknown build");
    struct stat st;
    if (stat(info.dli_fname, &st) != 0)
      return std::string(info.dli_fname);
    return std::string(info.dli_fname) + ":" + std::to_string(st.st_size) + ":" +
           std::to_string(st.st_mtim.tv_sec) + "." + std::to_string(st.st_mtim.tv_nsec);
  }();
  return identity;
}

std::optional<std::string> env(const char *name) {
  const char *value = std::getenv(name);
  if (!value || !*value)
    return std::nullopt;
  return std::string(value);
}

double envNumber(const char *name, double fallback) {
  std::optional<std::string> value = env(name);
  if (!value)
    return fallback;
  char *end = nullptr;
  double parsed = std::strtod(value->c_str(), &end);
  return end && *end == '\0' && parsed >= 0 ? parsed : fallback;
}

} // namespace

std::optional<CompileCache> CompileCache::forOptions(const CompileOptions &options) {
  if (std::optional<std::string> on = env("MITHRIL_CACHE"); on && (*on == "0" || *on == "off"))
    return std::nullopt;
  // Code for a GPU, code that numbers its kernels for this process's
  // profiler, and code that calls MPI are compiled each time.
  if (!options.useCache || options.target != "cpu" || options.profile ||
      options.allReduceGradients || options.tensorParallel > 1)
    return std::nullopt;
  std::string dir;
  if (std::optional<std::string> given = env("MITHRIL_CACHE_DIR")) {
    dir = *given;
  } else {
    llvm::SmallString<256> base;
    if (std::optional<std::string> xdg = env("XDG_CACHE_HOME"))
      base = *xdg;
    else if (std::optional<std::string> home = env("HOME"))
      llvm::sys::path::append(base, *home, ".cache");
    else
      return std::nullopt;
    llvm::sys::path::append(base, "mithril");
    dir = base.str().str();
  }
  if (llvm::sys::fs::create_directories(dir))
    return std::nullopt;
  return CompileCache(dir);
}

std::string CompileCache::key(StringRef source, const CompileOptions &options) const {
  llvm::SHA256 hash;
  auto add = [&](StringRef field) {
    // Length-prefixed: fields cannot run into each other.
    hash.update(std::to_string(field.size()) + ":");
    hash.update(field);
  };
  auto addList = [&](const std::vector<std::string> &list) {
    add(std::to_string(list.size()));
    for (const std::string &item : list)
      add(item);
  };
  add(buildIdentity());
  add(CompiledModel::hostCPU());
  add(source);
  add(options.entry);
  addList(options.shapes);
  addList(options.discard);
  add(std::to_string(options.gradients));
  addList(options.wrt);
  addList(options.seeds);
  add(options.optimizer);
  add(llvm::formatv("{0:e} {1:e}", options.momentum, options.weightDecay).str());
  add(std::to_string(options.checkpointSegments) + (options.lossScaling ? ":scaled" : ""));
  add(options.precision + (options.precisionTerminals ? ":terminals" : ""));
  add(options.quantize + (options.quantizeObserve ? ":observe" : ""));
  std::string scales;
  for (double scale : options.activationScales)
    scales += llvm::formatv("{0:e},", scale).str();
  add(scales);
  std::string ranges;
  for (double bound : options.activationRanges)
    ranges += llvm::formatv("{0:e},", bound).str();
  add(ranges);
  add(options.targetCpu);
  add(std::to_string(options.gpuTilesOnHost) + std::to_string(options.dynamicShapes));
  add(std::to_string(resolvedThreads(options)) + ":" + std::to_string(options.optLevel));
  add(std::to_string(options.fold) + std::to_string(options.cse) + std::to_string(options.dce) +
      std::to_string(options.fusion) + std::to_string(options.schedule) +
      std::to_string(options.memoryPlanning) + std::to_string(options.approximateMath));
  std::array<uint8_t, 32> digest = hash.final();
  return llvm::toHex(digest, /*LowerCase=*/true).substr(0, 40);
}

std::string CompileCache::path(StringRef key, StringRef extension) const {
  llvm::SmallString<256> p(dir_);
  llvm::sys::path::append(p, key + "." + extension);
  return p.str().str();
}

std::optional<CompileCache::Entry> CompileCache::lookup(StringRef key) const {
  auto object = llvm::MemoryBuffer::getFile(path(key, "o"), /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  auto ir = llvm::MemoryBuffer::getFile(path(key, "mlir"));
  if (!object || !ir || (*object)->getBufferSize() == 0)
    return std::nullopt;
  // Used now: the least recently used entries are pruned first.
  ::utime(path(key, "o").c_str(), nullptr);
  return Entry{(*object)->getBuffer().str(), (*ir)->getBuffer().str()};
}

void CompileCache::store(StringRef key, const Entry &entry, double seconds) const {
  if (seconds < envNumber("MITHRIL_CACHE_MIN_SECONDS", 0.1))
    return;
  // Written aside and renamed into place: a reader sees a whole entry or
  // none, whatever other processes do at the same time. The IR goes first,
  // the object code (which lookup checks) last.
  for (auto [extension, text] : {std::pair<StringRef, StringRef>{"mlir", entry.logicalIR},
                                 std::pair<StringRef, StringRef>{"o", entry.object}}) {
    std::string final = path(key, extension);
    llvm::SmallString<256> temporary;
    int fd;
    if (llvm::sys::fs::createUniqueFile(final + ".tmp-%%%%%%", fd, temporary))
      return;
    {
      llvm::raw_fd_ostream os(fd, /*shouldClose=*/true);
      os << text;
      if (os.has_error()) {
        os.clear_error();
        llvm::sys::fs::remove(temporary);
        return;
      }
    }
    if (llvm::sys::fs::rename(temporary, final)) {
      llvm::sys::fs::remove(temporary);
      return;
    }
  }
  prune();
}

void CompileCache::prune() const {
  double limit = envNumber("MITHRIL_CACHE_MAX_MB", 1024.0) * 1024 * 1024;
  struct File {
    std::string key;
    uint64_t bytes;
    llvm::sys::TimePoint<> used;
  };
  std::vector<File> entries;
  uint64_t total = 0;
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(dir_, ec), end; it != end && !ec; it.increment(ec)) {
    StringRef name = llvm::sys::path::filename(it->path());
    if (!name.ends_with(".o"))
      continue;
    llvm::sys::fs::file_status object, ir;
    if (llvm::sys::fs::status(it->path(), object))
      continue;
    std::string key = name.drop_back(2).str();
    uint64_t bytes = object.getSize();
    if (!llvm::sys::fs::status(path(key, "mlir"), ir))
      bytes += ir.getSize();
    entries.push_back({key, bytes, object.getLastModificationTime()});
    total += bytes;
  }
  if (total <= limit)
    return;
  std::sort(entries.begin(), entries.end(),
            [](const File &a, const File &b) { return a.used < b.used; });
  for (const File &file : entries) {
    if (total <= limit)
      break;
    llvm::sys::fs::remove(path(file.key, "o"));
    llvm::sys::fs::remove(path(file.key, "mlir"));
    total -= file.bytes;
  }
}
