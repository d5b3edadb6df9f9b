//===- HostServices.cpp - what compiled code calls back into the host for ===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
// The buffer cache behind the compiled code's allocations, recovery from a
// failed allocation, index errors, kernel profiling and the async runtime's
// entry points.
//
//===----------------------------------------------------------------------===//

#include "Driver.h"
#include "TaskPool.h"
#include "mithril/Runtime/Array.h"
#include "mithril/Runtime/Distributed.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ExecutionEngine/Orc/Core.h"
#include "llvm/Support/DynamicLibrary.h"
#include "llvm/Support/MathExtras.h"

#include <atomic>
#include <cstdlib>
#include <map>
#include <mutex>

using namespace mlir;
using namespace mithril;
using namespace mithril::runtime;
using namespace mithril::runtime::detail;
using llvm::Expected;

namespace {
/// The buffers compiled code allocates, kept for the next run instead of
/// being returned to the system: a model allocates the same sizes on every
/// run, and large blocks from malloc come fresh from mmap each time, so the
/// page faults of touching them cost as much as a small convolution. Blocks
/// are 64-byte aligned and cached by size, up to kMaxCachedBytes (256 MiB) in all.
class BufferCache {
public:
  static BufferCache &get() {
    static BufferCache *cache = new BufferCache(); // outlives every model
    return *cache;
  }

  void *allocate(size_t size) {
    size = std::max<size_t>(llvm::alignTo(size, 64), 64);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = free_.find(size);
      if (it != free_.end() && !it->second.empty()) {
        // The last block this thread gave back, else any: a block stays
        // with the thread (and the core) that wrote it last, where a split
        // op's chunks allocating their packed panels at once took each
        // other's, and every run moved them between the cores.
        std::vector<CachedBlock> &blocks = it->second;
        unsigned thread = threadTag();
        auto own = llvm::find_if(llvm::reverse(blocks), [&](const CachedBlock &cached) {
          return cached.thread == thread;
        });
        auto taken = own == blocks.rend() ? std::prev(blocks.end()) : std::prev(own.base());
        void *block = taken->block;
        blocks.erase(taken);
        cachedBytes_ -= size;
        sizes_[block] = size;
        noteLive(size);
        return block;
      }
    }
    void *block = allocateArrayMemory(size);
    if (block) {
      std::lock_guard<std::mutex> lock(mutex_);
      sizes_[block] = size;
      noteLive(size);
    }
    return block;
  }

  /// The bytes compiled code holds now, and the most it held since
  /// resetPeak().
  std::pair<size_t, size_t> liveAndPeak() {
    std::lock_guard<std::mutex> lock(mutex_);
    return {liveBytes_, peakBytes_};
  }
  void resetPeak() {
    std::lock_guard<std::mutex> lock(mutex_);
    peakBytes_ = liveBytes_;
  }

  /// Releases `block` if it is still handed out (a run cut short gives back
  /// what it had, some of which it may have released already).
  void releaseIfLive(void *block) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!sizes_.count(block))
        return;
    }
    release(block);
  }

  void release(void *block) {
    if (!block)
      return;
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = sizes_.find(block);
    if (it == sizes_.end())
      return std::free(block); // not ours (a runtime helper's malloc)
    size_t size = it->second;
    sizes_.erase(it);
    liveBytes_ -= size;
    if (size > kMaxCachedBytes)
      return std::free(block);
    // Full: make room by freeing blocks of other sizes, largest first. The
    // block just released is of a size in use now; the others may be left
    // by models that no longer run (a 2048 x 2048 matmul's, say), and
    // keeping those instead would send every block of the current model
    // back to mmap and its page faults.
    for (auto other = free_.rbegin();
         cachedBytes_ + size > kMaxCachedBytes && other != free_.rend(); ++other) {
      if (other->first == size)
        continue;
      while (!other->second.empty() && cachedBytes_ + size > kMaxCachedBytes) {
        std::free(other->second.back().block);
        other->second.pop_back();
        cachedBytes_ -= other->first;
      }
    }
    if (cachedBytes_ + size > kMaxCachedBytes)
      return std::free(block);
    free_[size].push_back({block, threadTag()});
    cachedBytes_ += size;
  }

private:
  /// A block given back, and the thread that gave it back.
  struct CachedBlock {
    void *block;
    unsigned thread;
  };
  /// This thread's number, in the order threads first use the cache.
  static unsigned threadTag() {
    static std::atomic<unsigned> next{0};
    thread_local unsigned tag = next++;
    return tag;
  }

  void noteLive(size_t size) {
    liveBytes_ += size;
    peakBytes_ = std::max(peakBytes_, liveBytes_);
  }

  static constexpr size_t kMaxCachedBytes = size_t(256) << 20;
  size_t liveBytes_ = 0, peakBytes_ = 0;
  std::mutex mutex_;
  llvm::DenseMap<void *, size_t> sizes_; // open addressing: no node a block
  std::map<size_t, std::vector<CachedBlock>> free_;
  size_t cachedBytes_ = 0;
};

/// Where a run resumes when its compiled code cannot get memory: compiled
/// code has no way to fail, and would write through the null pointer. Set
/// around the call of the compiled function on the calling thread; the
/// blocks the run allocated there are given back when it is cut short.
thread_local AllocationRecovery *recovery = nullptr;

/// A block compiled code asked for could not be had: back to the run's
/// recovery point, or (in a task of the pool, whose frames cannot be left)
/// a one-line message and abort instead of a crash on a null pointer.
[[noreturn]] void allocationFailed(size_t size) {
  if (recovery && !runningPoolTask()) {
    recovery->failedBytes = size;
    std::longjmp(recovery->point, 1);
  }
  std::fprintf(stderr,
               "mithril: out of memory: a temporary buffer of %zu bytes could not be "
               "allocated in a parallel task\n",
               size);
  std::abort();
}

void *trackAllocation(void *block, size_t size) {
  if (!block)
    allocationFailed(size);
  if (recovery && !runningPoolTask())
    recovery->live.push_back(block);
  return block;
}

extern "C" void *mithrilCachedAlloc(size_t size) {
  return trackAllocation(BufferCache::get().allocate(size), size);
}
extern "C" void *mithrilCachedAlignedAlloc(size_t alignment, size_t size) {
  // Blocks are 64-byte aligned; larger alignments are not requested.
  return trackAllocation(alignment <= 64 ? BufferCache::get().allocate(size)
                                         : std::aligned_alloc(alignment, size),
                         size);
}
extern "C" void mithrilCachedFree(void *block) {
  if (recovery) {
    auto &live = recovery->live;
    auto it = llvm::find(live, block);
    if (it != live.end()) {
      *it = live.back();
      live.pop_back();
    }
  }
  BufferCache::get().release(block);
}

} // namespace

void *mithril::runtime::detail::cachedAllocate(size_t size) {
  return BufferCache::get().allocate(size);
}
void mithril::runtime::detail::cachedRelease(void *block) { BufferCache::get().release(block); }

/// Calls the compiled function; false, with `failedBytes` set, when it ran
/// out of memory and was cut short. Nothing with a destructor lives in this
/// frame or the compiled ones a longjmp leaves.
bool mithril::runtime::detail::callRecoverably(void (*function)(void **), void **args,
                                               AllocationRecovery &state) {
  AllocationRecovery *outer = recovery;
  if (setjmp(state.point)) {
    recovery = outer;
    // Sums the run started may still be writing buffers given back below.
    finishStartedSums();
    for (void *block : state.live)
      BufferCache::get().releaseIfLive(block);
    state.live.clear();
    return false;
  }
  recovery = &state;
  function(args);
  recovery = outer;
  return true;
}

/// The first index out of range the running code reported on this thread
/// (the checks run on the calling thread, outside the split loops).
static thread_local std::optional<std::string> pendingIndexError;

/// Called by compiled code (convert-mithril-to-linalg's index-errors) with the
/// offending index, the bound and a message naming the op and the indices.
extern "C" void mithrilIndexError(int64_t value, int64_t bound, int64_t message) {
  if (pendingIndexError)
    return;
  pendingIndexError = std::string(reinterpret_cast<const char *>(message)) + " is " +
                      std::to_string(value) + ", outside [0, " + std::to_string(bound) + ")";
}

std::optional<std::string> mithril::runtime::detail::takeIndexError() {
  std::optional<std::string> taken = std::move(pendingIndexError);
  pendingIndexError.reset();
  return taken;
}

/// The MLIR async runtime's entry points, from the library loaded once for
/// the process. Handing the library to ExecutionEngine (sharedLibPaths) would
/// let the first engine destroyed reset the runtime's global state under the
/// engines still alive.
Expected<const llvm::StringMap<void *> *> mithril::runtime::detail::asyncRuntimeSymbols() {
  static std::once_flag once;
  static llvm::StringMap<void *> symbols;
  static std::string error;
  std::call_once(once, [] {
    std::string message;
    auto library = llvm::sys::DynamicLibrary::getPermanentLibrary(MITHRIL_ASYNC_RUNTIME, &message);
    if (!library.isValid()) {
      error = "running on several threads needs the MLIR async runtime (" + message +
              "); compile with one thread";
      return;
    }
    using InitFn = void (*)(llvm::StringMap<void *> &);
    auto init =
        reinterpret_cast<InitFn>(library.getAddressOfSymbol("__mlir_execution_engine_init"));
    if (!init) {
      error = std::string(MITHRIL_ASYNC_RUNTIME) + " exports no __mlir_execution_engine_init";
      return;
    }
    init(symbols);
    // Tasks start and are awaited through mithril's task pool (TaskPool.cpp).
    installTaskPool(symbols);
  });
  if (!error.empty())
    return makeError(error);
  return &symbols;
}

namespace {
/// The kernels of profiled models, by id: each compile reserves a block of
/// ids, and its code counts into them.
struct ProfiledKernel {
  std::string model, name;
  std::atomic<int64_t> calls{0}, nanos{0};
};
struct ProfileRegistry {
  static constexpr int64_t kBlock = int64_t(1) << 20; // kernels per compile
  std::mutex mutex;
  std::map<int64_t, ProfiledKernel> kernels;
  std::atomic<int64_t> nextBlock{0};
  static ProfileRegistry &get() {
    static ProfileRegistry *registry = new ProfileRegistry(); // outlives every model
    return *registry;
  }
};
thread_local std::vector<Clock::time_point> profileStarts;
} // namespace

int64_t mithril::runtime::detail::reserveProfileIds() {
  return ProfileRegistry::get().nextBlock.fetch_add(1) * ProfileRegistry::kBlock;
}

extern "C" void mithrilProfileEnter(int64_t) { profileStarts.push_back(Clock::now()); }
extern "C" void mithrilProfileExit(int64_t id) {
  auto end = Clock::now();
  if (profileStarts.empty())
    return;
  auto start = profileStarts.back();
  profileStarts.pop_back();
  ProfileRegistry &registry = ProfileRegistry::get();
  ProfiledKernel *kernel;
  {
    std::lock_guard<std::mutex> lock(registry.mutex);
    auto it = registry.kernels.find(id);
    if (it == registry.kernels.end())
      return;
    kernel = &it->second; // map nodes stay put
  }
  kernel->calls.fetch_add(1, std::memory_order_relaxed);
  kernel->nanos.fetch_add(std::chrono::duration_cast<std::chrono::nanoseconds>(end - start).count(),
                          std::memory_order_relaxed);
}

std::pair<size_t, size_t> mithril::runtime::bufferBytes() {
  return BufferCache::get().liveAndPeak();
}
void mithril::runtime::resetPeakBufferBytes() { BufferCache::get().resetPeak(); }

std::vector<ProfileRecord> mithril::runtime::profileRecords() {
  ProfileRegistry &registry = ProfileRegistry::get();
  std::lock_guard<std::mutex> lock(registry.mutex);
  std::vector<ProfileRecord> records;
  for (auto &[id, kernel] : registry.kernels)
    records.push_back(
        {kernel.model, kernel.name, kernel.calls.load(), double(kernel.nanos.load()) * 1e-9});
  return records;
}

/// Registers the kernels mithril-profile-kernels named in `module`.
void mithril::runtime::detail::registerProfiledKernels(ModuleOp module, StringRef model,
                                                       int64_t firstId) {
  auto names = module->getAttrOfType<ArrayAttr>("mithril.profile_kernels");
  if (!names)
    return;
  ProfileRegistry &registry = ProfileRegistry::get();
  std::lock_guard<std::mutex> lock(registry.mutex);
  int64_t id = firstId;
  for (Attribute name : names) {
    ProfiledKernel &kernel = registry.kernels[id++];
    kernel.model = model.str();
    kernel.name = cast<StringAttr>(name).getValue().str();
  }
}

/// The symbols compiled code calls into the host for: the buffer cache, index
/// errors, profiling timers and (with several threads) the async runtime;
/// and the users' C functions.
llvm::orc::SymbolMap
mithril::runtime::detail::hostSymbols(llvm::orc::MangleAndInterner &interner,
                                      const llvm::StringMap<void *> *asyncSymbols,
                                      const llvm::StringMap<void *> &customCalls) {
  llvm::orc::SymbolMap map;
  auto add = [&](StringRef name, void *address) {
    map[interner(name)] = {llvm::orc::ExecutorAddr::fromPtr(address),
                           llvm::JITSymbolFlags::Exported};
  };
  add("_mlir_memref_to_llvm_alloc", reinterpret_cast<void *>(&mithrilCachedAlloc));
  add("_mlir_memref_to_llvm_aligned_alloc", reinterpret_cast<void *>(&mithrilCachedAlignedAlloc));
  add("_mlir_memref_to_llvm_free", reinterpret_cast<void *>(&mithrilCachedFree));
  add("mithrilIndexError", reinterpret_cast<void *>(&mithrilIndexError));
  add("mithrilParallelFor", reinterpret_cast<void *>(&mithrilParallelFor));
  add("mithrilProfileEnter", reinterpret_cast<void *>(&mithrilProfileEnter));
  add("mithrilProfileExit", reinterpret_cast<void *>(&mithrilProfileExit));
  add("mithrilAllReduceF32", reinterpret_cast<void *>(&mithrilAllReduceF32));
  add("mithrilAllReduceF64", reinterpret_cast<void *>(&mithrilAllReduceF64));
  add("mithrilAllReduceStartF32", reinterpret_cast<void *>(&mithrilAllReduceStartF32));
  add("mithrilAllReduceStartF64", reinterpret_cast<void *>(&mithrilAllReduceStartF64));
  add("mithrilAllReduceWait", reinterpret_cast<void *>(&mithrilAllReduceWait));
  add("mithrilAllReduceWaitAll", reinterpret_cast<void *>(&mithrilAllReduceWaitAll));
  add("_mlir_ciface_mithrilCollectiveWindow",
      reinterpret_cast<void *>(&_mlir_ciface_mithrilCollectiveWindow));
  add("_mlir_ciface_mithrilCollectiveWindowSegment",
      reinterpret_cast<void *>(&_mlir_ciface_mithrilCollectiveWindowSegment));
  add("mithrilCollectiveBarrier", reinterpret_cast<void *>(&mithrilCollectiveBarrier));
  if (asyncSymbols)
    for (const auto &symbol : *asyncSymbols)
      add(symbol.getKey(), symbol.getValue());
  for (const auto &symbol : customCalls)
    add(symbol.getKey(), symbol.getValue());
  return map;
}
