//===- Distributed.cpp - MPI, loaded on demand ----------------------------===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//

#include "mithril/Runtime/Distributed.h"

#include "RuntimeLibrary.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/DynamicLibrary.h"
#include "llvm/Support/FileSystem.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <numeric>
#include <optional>
#include <type_traits>
#include <vector>

using namespace mithril::runtime;

namespace {
struct MpiRuntime {
  std::string path;
  int (*init)() = nullptr;
  int (*rank)(int32_t) = nullptr;
  int (*size)(int32_t) = nullptr;
  int (*split)(int32_t, int32_t, int32_t, int32_t *) = nullptr;
  const char *(*libraryVersion)() = nullptr;
  const char *(*takeError)() = nullptr;
  int (*allReduceSum)(int32_t, const void *, void *, int64_t, int32_t) = nullptr;
  int (*allGatherBytes)(int32_t, const void *, int64_t, void *, const int64_t *) = nullptr;
  int (*broadcastBytes)(int32_t, void *, int64_t, int32_t) = nullptr;
  int (*sumWindow)(int32_t, int64_t, void **) = nullptr;
  int (*windowRanks)(int32_t) = nullptr;
  int (*windowSegment)(int32_t, int32_t, int64_t, void **) = nullptr;
  int (*windowBarrier)(int32_t) = nullptr;
  double (*sumSeconds)() = nullptr;
  int64_t (*sumCalls)() = nullptr;
  int (*allReduceStart)(int32_t, const void *, void *, int64_t, int32_t) = nullptr;
  int (*allReduceWait)(int32_t, const void *) = nullptr;
  int (*allReduceWaitAll)(int32_t) = nullptr;
  void (*abort)(int32_t) = nullptr;
  /// The communicators of the mesh's groups (0: MPI_COMM_WORLD).
  int32_t groups[3] = {0, 0, 0};
};
} // namespace

static llvm::Error mpiError(const llvm::Twine &why) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 "data parallelism needs MPI: " + why);
}

static llvm::Expected<MpiRuntime> load() {
  std::string path = findRuntimeLibrary("MITHRIL_MPI_RUNTIME",
                                        {MITHRIL_MPI_RUNTIME_BUILD, MITHRIL_MPI_RUNTIME_INSTALL});
  if (path.empty())
    return mpiError("this installation has no libmithril_mpi_runtime (it is built where an "
                    "MPI library is found: apt-get install libopenmpi-dev openmpi-bin, then "
                    "rebuild); set MITHRIL_MPI_RUNTIME to one");
  std::string error;
  // Global symbols: Open MPI's own plugins resolve against libmpi.
  auto library = llvm::sys::DynamicLibrary::getPermanentLibrary(path.c_str(), &error);
  if (!library.isValid())
    return mpiError("cannot load " + path + ": " + error);
  MpiRuntime runtime;
  runtime.path = path;
  auto bind = [&](auto &function, const char *name) { return bindSymbol(library, function, name); };
  if (!bind(runtime.init, "mithrilMpiInit") || !bind(runtime.rank, "mithrilMpiRank") ||
      !bind(runtime.size, "mithrilMpiSize") || !bind(runtime.split, "mithrilMpiSplit") ||
      !bind(runtime.libraryVersion, "mithrilMpiLibraryVersion") ||
      !bind(runtime.takeError, "mithrilMpiTakeError") ||
      !bind(runtime.allReduceSum, "mithrilMpiAllReduceSum") ||
      !bind(runtime.allGatherBytes, "mithrilMpiAllGatherBytes") ||
      !bind(runtime.broadcastBytes, "mithrilMpiBroadcastBytes") ||
      !bind(runtime.sumWindow, "mithrilMpiSumWindow") ||
      !bind(runtime.windowRanks, "mithrilMpiWindowRanks") ||
      !bind(runtime.windowSegment, "mithrilMpiWindowSegment") ||
      !bind(runtime.windowBarrier, "mithrilMpiWindowBarrier") ||
      !bind(runtime.sumSeconds, "mithrilMpiSumSeconds") ||
      !bind(runtime.sumCalls, "mithrilMpiSumCalls") ||
      !bind(runtime.allReduceStart, "mithrilMpiAllReduceStart") ||
      !bind(runtime.allReduceWait, "mithrilMpiAllReduceWait") ||
      !bind(runtime.allReduceWaitAll, "mithrilMpiAllReduceWaitAll") ||
      !bind(runtime.abort, "mithrilMpiAbort"))
    return mpiError(path + " is not a mithril MPI runtime library of this version");
  if (runtime.init() != 0)
    return mpiError(std::string("MPI did not start: ") + runtime.takeError());
  return runtime;
}

static std::mutex mutex;
static std::optional<MpiRuntime> loaded;

static int32_t communicatorOf(const MpiRuntime *mpi, Group group) {
  return mpi->groups[static_cast<int>(group)];
}

/// The started runtime, or null before initDistributed succeeded.
static const MpiRuntime *started() {
  std::lock_guard<std::mutex> lock(mutex);
  return loaded ? &*loaded : nullptr;
}

llvm::Expected<DistributedInfo> mithril::runtime::initDistributed() {
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (!loaded) {
      auto runtime = load();
      if (!runtime)
        return runtime.takeError();
      loaded = std::move(*runtime);
    }
  }
  const MpiRuntime *mpi = started();
  std::string library = mpi->libraryVersion();
  // The first line: Open MPI's and MPICH's version strings run on.
  library = library.substr(0, library.find('\n'));
  return DistributedInfo{mpi->rank(0), mpi->size(0), library};
}

static llvm::Error collectiveError(const MpiRuntime *mpi, int code) {
  if (code == 0)
    return llvm::Error::success();
  return llvm::createStringError(llvm::inconvertibleErrorCode(), mpi->takeError());
}

static llvm::Expected<const MpiRuntime *> requireStarted() {
  if (const MpiRuntime *mpi = started())
    return mpi;
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 "MPI has not been started (initDistributed)");
}

llvm::Error mithril::runtime::setupMesh(int data, int tensor) {
  auto mpi = requireStarted();
  if (!mpi)
    return mpi.takeError();
  int size = (*mpi)->size(0), rank = (*mpi)->rank(0);
  if (data < 1 || tensor < 1 || data * tensor != size)
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "a mesh of " + std::to_string(data) + " x " + std::to_string(tensor) + " needs " +
            std::to_string(data * tensor) + " ranks, this run has " + std::to_string(size));
  std::lock_guard<std::mutex> lock(mutex);
  MpiRuntime &runtime = *loaded;
  // Rank r is (d, t) = (r / tensor, r % tensor): a data group holds the
  // ranks of one t, a tensor group those of one d.
  // A group of every rank is MPI_COMM_WORLD itself.
  int32_t dataGroup = 0, tensorGroup = 0;
  if (tensor > 1)
    if (int code = runtime.split(0, rank % tensor, rank / tensor, &dataGroup))
      return collectiveError(&runtime, code);
  if (data > 1)
    if (int code = runtime.split(0, rank / tensor, rank % tensor, &tensorGroup))
      return collectiveError(&runtime, code);
  runtime.groups[static_cast<int>(Group::Data)] = dataGroup;
  runtime.groups[static_cast<int>(Group::Tensor)] = tensorGroup;
  return llvm::Error::success();
}

llvm::Expected<std::pair<int, int>> mithril::runtime::groupRankAndSize(Group group) {
  auto mpi = requireStarted();
  if (!mpi)
    return mpi.takeError();
  int32_t comm = communicatorOf(*mpi, group);
  return std::make_pair((*mpi)->rank(comm), (*mpi)->size(comm));
}

llvm::Error mithril::runtime::allReduceSum(void *data, int64_t count, bool isDouble, Group group) {
  auto mpi = requireStarted();
  if (!mpi)
    return mpi.takeError();
  return collectiveError(
      *mpi, (*mpi)->allReduceSum(communicatorOf(*mpi, group), nullptr, data, count, isDouble));
}

llvm::Expected<int> mithril::runtime::sharedWindowRanks(Group group) {
  auto mpi = requireStarted();
  if (!mpi)
    return mpi.takeError();
  return (*mpi)->windowRanks(communicatorOf(*mpi, group));
}

double mithril::runtime::allReduceSeconds() {
  const MpiRuntime *mpi = started();
  return mpi ? mpi->sumSeconds() : 0.0;
}

int64_t mithril::runtime::allReduceCalls() {
  const MpiRuntime *mpi = started();
  return mpi ? mpi->sumCalls() : 0;
}

void mithril::runtime::finishStartedSums() {
  if (const MpiRuntime *mpi = started())
    for (int32_t comm : mpi->groups)
      (void)mpi->allReduceWaitAll(comm);
}

llvm::Error mithril::runtime::allGatherBytes(const void *send, int64_t sendBytes, void *recv,
                                             llvm::ArrayRef<int64_t> counts, Group group) {
  auto mpi = requireStarted();
  if (!mpi)
    return mpi.takeError();
  int32_t comm = communicatorOf(*mpi, group);
  if (static_cast<int>(counts.size()) != (*mpi)->size(comm))
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "allGatherBytes: one count per rank is needed");
  return collectiveError(*mpi, (*mpi)->allGatherBytes(comm, send, sendBytes, recv, counts.data()));
}

/// `count` values of type Narrow at `in`, times `scale` (floats), as the
/// Wide values (8 bytes each) every rank sends to be added up.
template <typename Narrow, typename Wide>
static void widen(const void *in, int64_t count, double scale, char *out) {
  for (int64_t k = 0; k < count; ++k) {
    Wide v = static_cast<Wide>(static_cast<const Narrow *>(in)[k]);
    if constexpr (std::is_floating_point_v<Wide>)
      v *= scale;
    std::memcpy(out + 8 * k, &v, 8);
  }
}

/// Each rank's `count` values of type Wide (at `at(rank)`) added up in rank
/// order, as every rank adds them (the same bits everywhere), stored as
/// Narrow at `out`. Integers wrap, as numpy's do.
template <typename Wide, typename Narrow, typename At>
static void addInRankOrder(At at, size_t ranks, int64_t count, char *out) {
  for (int64_t k = 0; k < count; ++k) {
    Wide sum;
    std::memcpy(&sum, at(0) + 8 * k, 8);
    for (size_t r = 1; r < ranks; ++r) {
      Wide v;
      std::memcpy(&v, at(r) + 8 * k, 8);
      if constexpr (std::is_integral_v<Wide>)
        sum = static_cast<Wide>(static_cast<uint64_t>(sum) + static_cast<uint64_t>(v));
      else
        sum += v;
    }
    Narrow narrow = static_cast<Narrow>(sum);
    std::memcpy(out + sizeof(Narrow) * k, &narrow, sizeof(Narrow));
  }
}

llvm::Expected<std::vector<std::vector<char>>>
mithril::runtime::combineOutputs(llvm::ArrayRef<OutputPart> parts, double weight, Group group) {
  auto rankAndSize = groupRankAndSize(group);
  if (!rankAndSize)
    return rankAndSize.takeError();
  size_t ranks = static_cast<size_t>(rankAndSize->second), n = parts.size();
  using Combine = OutputPart::Combine;
  using Element = OutputPart::Element;
  // Calls `apply` with an element type's value (Narrow) and the type its
  // parts are added up in (Wide).
  auto withTypes = [](Element element, auto apply) {
    switch (element) {
    case Element::F32:
      return apply(float(), double());
    case Element::F64:
      return apply(double(), double());
    case Element::I32:
      return apply(int32_t(), int64_t());
    case Element::I64:
      return apply(int64_t(), int64_t());
    }
  };
  // What this rank sends of each part: its bytes (concatenated parts), or
  // its values as float64 or int64 (sums).
  std::vector<int64_t> sizes(n);
  bool concatenates = false;
  for (size_t i = 0; i < n; ++i) {
    concatenates |= parts[i].combine == Combine::Concatenate;
    sizes[i] = parts[i].combine == Combine::Concatenate ? parts[i].bytes : parts[i].count * 8;
  }
  std::vector<char> send(
      static_cast<size_t>(std::accumulate(sizes.begin(), sizes.end(), int64_t(0))));
  char *out = send.data();
  for (size_t i = 0; i < n; ++i) {
    const OutputPart &part = parts[i];
    if (part.combine == Combine::Concatenate) {
      std::memcpy(out, part.data, static_cast<size_t>(part.bytes));
    } else {
      double scale = part.combine == Combine::WeightedSum ? weight : 1.0;
      withTypes(part.element, [&](auto narrow, auto wide) {
        widen<decltype(narrow), decltype(wide)>(part.data, part.count, scale, out);
      });
    }
    out += sizes[i];
  }
  // Every rank's sizes, where a concatenated part's rows may differ between
  // ranks; then every rank's bytes.
  std::vector<int64_t> header(ranks * n);
  if (concatenates) {
    std::vector<int64_t> counts(ranks, static_cast<int64_t>(n * 8));
    if (llvm::Error err =
            allGatherBytes(sizes.data(), static_cast<int64_t>(n * 8), header.data(), counts, group))
      return std::move(err);
  } else {
    for (size_t r = 0; r < ranks; ++r)
      std::copy(sizes.begin(), sizes.end(), header.begin() + r * n);
  }
  std::vector<int64_t> counts(ranks), offsets(ranks * n);
  int64_t total = 0;
  for (size_t r = 0; r < ranks; ++r) {
    for (size_t i = 0; i < n; ++i) {
      offsets[r * n + i] = total + counts[r];
      counts[r] += header[r * n + i];
    }
    total += counts[r];
  }
  std::vector<char> recv(static_cast<size_t>(total));
  if (llvm::Error err = allGatherBytes(send.data(), static_cast<int64_t>(send.size()), recv.data(),
                                       counts, group))
    return std::move(err);
  std::vector<std::vector<char>> results(n);
  for (size_t i = 0; i < n; ++i) {
    const OutputPart &part = parts[i];
    std::vector<char> &result = results[i];
    if (part.combine == Combine::Concatenate) {
      for (size_t r = 0; r < ranks; ++r) {
        const char *from = recv.data() + offsets[r * n + i];
        result.insert(result.end(), from, from + header[r * n + i]);
      }
      continue;
    }
    for (size_t r = 0; r < ranks; ++r)
      if (header[r * n + i] != sizes[i])
        return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                       "combineOutputs: the ranks' partial values of output " +
                                           std::to_string(i) + " differ in size");
    auto at = [&](size_t r) { return recv.data() + offsets[r * n + i]; };
    withTypes(part.element, [&](auto narrow, auto wide) {
      using Narrow = decltype(narrow);
      result.resize(static_cast<size_t>(part.count) * sizeof(Narrow));
      addInRankOrder<decltype(wide), Narrow>(at, ranks, part.count, result.data());
    });
  }
  return results;
}

llvm::Error mithril::runtime::broadcastBytes(void *data, int64_t bytes, int root, Group group) {
  auto mpi = requireStarted();
  if (!mpi)
    return mpi.takeError();
  return collectiveError(*mpi,
                         (*mpi)->broadcastBytes(communicatorOf(*mpi, group), data, bytes, root));
}

/// An unranked memref's descriptor is {allocated, aligned, offset,
/// sizes[rank], strides[rank]}: its first element is the aligned pointer's
/// `offset`th `T`.
template <typename T> static T *dataOf(void *descriptor) {
  auto *fields = static_cast<int64_t *>(descriptor);
  return reinterpret_cast<T *>(fields[1]) + fields[2];
}

/// An unranked memref's elements.
template <typename T> struct StridedView {
  T *data;
  // Views of the ranks compiled code uses, without a heap allocation (a
  // few a step).
  llvm::SmallVector<int64_t, 6> sizes, strides;

  StridedView(int64_t rank, void *descriptor) : data(dataOf<T>(descriptor)) {
    auto *fields = static_cast<int64_t *>(descriptor);
    sizes.assign(fields + 3, fields + 3 + rank);
    strides.assign(fields + 3 + rank, fields + 3 + 2 * rank);
  }
  int64_t count() const {
    int64_t n = 1;
    for (int64_t s : sizes)
      n *= s;
    return n;
  }
  bool contiguous() const {
    int64_t expected = 1;
    for (size_t i = sizes.size(); i-- > 0;) {
      if (sizes[i] != 1 && strides[i] != expected)
        return false;
      expected *= sizes[i];
    }
    return true;
  }
  /// Copies the elements in row-major order into `out`.
  void pack(T *out) const {
    llvm::SmallVector<int64_t, 6> index(sizes.size(), 0);
    for (int64_t n = 0, total = count(); n < total; ++n) {
      int64_t offset = 0;
      for (size_t d = 0; d < sizes.size(); ++d)
        offset += index[d] * strides[d];
      out[n] = data[offset];
      for (size_t d = sizes.size(); d-- > 0;) {
        if (++index[d] < sizes[d])
          break;
        index[d] = 0;
      }
    }
  }
};

/// The started runtime, for compiled code: a call before MPI started ends
/// the process.
static const MpiRuntime *startedForCompiledCode() {
  const MpiRuntime *mpi = started();
  if (!mpi) {
    std::fprintf(stderr, "mithril: compiled code sums gradients over ranks, but MPI has not "
                         "been started\n");
    std::abort();
  }
  return mpi;
}

/// The communicator of the group compiled code names by number
/// (mithril::collectiveGroupNumber: 0 data, 1 tensor).
static int32_t compiledGroup(const MpiRuntime *mpi, int64_t group) {
  return communicatorOf(mpi, group == 1 ? Group::Tensor : Group::Data);
}

/// Ends the job where a collective of compiled code failed (`code` not 0):
/// the other ranks would wait for this one forever.
static void abortOnFailure(const MpiRuntime *mpi, int code, const char *what) {
  if (code == 0)
    return;
  std::fprintf(stderr, "mithril: %s: %s\n", what, mpi->takeError());
  mpi->abort(code);
}

/// Sums the operand `src` over the ranks into `dst`; with `start`, only
/// starts the sum where MPI can run it while the code goes on
/// (mithrilAllReduceWait then waits for it).
template <typename T>
static void allReduceMemref(int64_t group, int64_t srcRank, void *srcDescriptor, int64_t dstRank,
                            void *dstDescriptor, bool start) {
  StridedView<T> src(srcRank, srcDescriptor), dst(dstRank, dstDescriptor);
  const MpiRuntime *mpi = startedForCompiledCode();
  // The result buffer is contiguous: MPI reads a contiguous operand in
  // place, a strided one is packed into it first (and summed at once).
  const T *send = src.data;
  if (!src.contiguous()) {
    src.pack(dst.data);
    send = nullptr;
  }
  bool isDouble = sizeof(T) == sizeof(double);
  int32_t comm = compiledGroup(mpi, group);
  abortOnFailure(mpi,
                 start && send ? mpi->allReduceStart(comm, send, dst.data, dst.count(), isDouble)
                               : mpi->allReduceSum(comm, send, dst.data, dst.count(), isDouble),
                 "summing gradients over the ranks failed");
}

extern "C" void mithrilAllReduceF32(int64_t group, int64_t srcRank, void *srcDescriptor,
                                    int64_t dstRank, void *dstDescriptor) {
  allReduceMemref<float>(group, srcRank, srcDescriptor, dstRank, dstDescriptor, false);
}

extern "C" void mithrilAllReduceF64(int64_t group, int64_t srcRank, void *srcDescriptor,
                                    int64_t dstRank, void *dstDescriptor) {
  allReduceMemref<double>(group, srcRank, srcDescriptor, dstRank, dstDescriptor, false);
}

extern "C" void mithrilAllReduceStartF32(int64_t group, int64_t srcRank, void *srcDescriptor,
                                         int64_t dstRank, void *dstDescriptor) {
  allReduceMemref<float>(group, srcRank, srcDescriptor, dstRank, dstDescriptor, true);
}

extern "C" void mithrilAllReduceStartF64(int64_t group, int64_t srcRank, void *srcDescriptor,
                                         int64_t dstRank, void *dstDescriptor) {
  allReduceMemref<double>(group, srcRank, srcDescriptor, dstRank, dstDescriptor, true);
}

extern "C" void mithrilAllReduceWait(int64_t group, int64_t /*resultsRank*/,
                                     void *resultsDescriptor, int64_t offset) {
  const MpiRuntime *mpi = startedForCompiledCode();
  abortOnFailure(
      mpi, mpi->allReduceWait(compiledGroup(mpi, group), dataOf<char>(resultsDescriptor) + offset),
      "waiting for a sum of gradients over the ranks failed");
}

extern "C" void mithrilAllReduceWaitAll(int64_t group) {
  const MpiRuntime *mpi = startedForCompiledCode();
  abortOnFailure(mpi, mpi->allReduceWaitAll(compiledGroup(mpi, group)),
                 "waiting for the sums of gradients over the ranks failed");
}

extern "C" void _mlir_ciface_mithrilCollectiveWindow(MithrilByteMemRef *segment, int64_t group,
                                                     int64_t bytes) {
  const MpiRuntime *mpi = startedForCompiledCode();
  void *memory = nullptr;
  abortOnFailure(mpi, mpi->sumWindow(compiledGroup(mpi, group), bytes, &memory),
                 "the window of the sums over the ranks");
  *segment = {static_cast<char *>(memory), static_cast<char *>(memory), 0, bytes, 1};
}

extern "C" void _mlir_ciface_mithrilCollectiveWindowSegment(MithrilByteMemRef *segment,
                                                            int64_t group, int64_t bytes,
                                                            int64_t rank) {
  const MpiRuntime *mpi = startedForCompiledCode();
  void *memory = nullptr;
  abortOnFailure(
      mpi,
      mpi->windowSegment(compiledGroup(mpi, group), static_cast<int32_t>(rank), bytes, &memory),
      "another rank's segment of the window of the sums over the ranks");
  *segment = {static_cast<char *>(memory), static_cast<char *>(memory), 0, bytes, 1};
}

extern "C" void mithrilCollectiveBarrier(int64_t group, int64_t) {
  const MpiRuntime *mpi = startedForCompiledCode();
  abortOnFailure(mpi, mpi->windowBarrier(compiledGroup(mpi, group)),
                 "waiting for the other ranks' operands of a sum");
}
