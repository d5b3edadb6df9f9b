//===- MpiRuntime.cpp - libmithril_mpi_runtime: MPI behind a C API --------===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
// The collectives of data-parallel runs. Built only where an MPI library is
// found and loaded by the runtime on demand (Distributed.cpp), so that the
// project and its other users never link MPI. Functions return 0 on success
// or an MPI error code, with its text kept for mithrilMpiTakeError.
//
// Sums over ranks that share one machine go through an MPI-3 shared-memory
// window instead of MPI_Allreduce: each rank copies a piece of its buffer into
// its own segment, and after one barrier every rank adds all segments itself,
// in rank order (so every rank gets the same bits). Each piece is copied
// once and read where it lies; Open MPI's sum copies each fragment into its
// shared queues and out again (docs/distributed.md). Compiled code goes
// further: it computes the operands of its sums in a window of their own
// (mithrilMpiSumWindow), so that no operand is copied at all.
//
//===----------------------------------------------------------------------===//

// The C API only (Open MPI and MPICH add C++ bindings otherwise).
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace {
std::string lastError;
/// Seconds spent in sums (mithrilMpiAllReduceSum), the waits for the other
/// ranks included.
double sumSeconds = 0;
/// The communicators collectives name by index: 0 is MPI_COMM_WORLD, the
/// others come from mithrilMpiSplit (a mesh's data and tensor groups).
std::vector<MPI_Comm> communicators;

MPI_Comm communicator(int32_t index) {
  if (index < 0 || static_cast<size_t>(index) >= communicators.size())
    return MPI_COMM_WORLD;
  return communicators[index];
}

/// Where per-communicator state of communicator `index` is kept.
size_t slotOf(int32_t index) { return index < 0 ? 0 : static_cast<size_t>(index); }

/// Sums issued to MPI (MPI_Allreduce or MPI_Iallreduce calls, shared-memory
/// sums), for mithrilMpiSumCalls.
int64_t sumCalls = 0;

int check(int code, const char *what) {
  if (code == MPI_SUCCESS)
    return 0;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  lastError = std::string(what) + ": " + std::string(text, length);
  return code;
}

/// A sum compiled code started (mithrilMpiAllReduceStart) that MPI runs
/// while the code goes on: `recv` holds the result once `request` completed.
struct StartedSum {
  int32_t comm;
  uintptr_t recv;
  int64_t bytes;
  MPI_Request request;
};
std::vector<StartedSum> startedSums;

/// Operands started one after the other that lie side by side (in the
/// window of operands, their results in one buffer at the same offsets),
/// not yet issued: they go to MPI as one sum once they reach bucketBytes().
struct Bucket {
  const char *send = nullptr;
  char *recv = nullptr;
  int64_t bytes = 0;
  bool isDouble = false;
};
/// Per communicator index.
std::vector<Bucket> buckets;

Bucket &bucketOf(int32_t comm) {
  size_t slot = slotOf(comm);
  if (buckets.size() <= slot)
    buckets.resize(slot + 1);
  return buckets[slot];
}

/// MITHRIL_MPI_BUCKET_BYTES: the bytes from which a bucket of operands
/// goes to MPI (default 1 MiB, as the first bucket of PyTorch's DDP; 0 sums
/// each operand on its own).
int64_t bucketBytes() {
  static const int64_t bytes = [] {
    const char *setting = std::getenv("MITHRIL_MPI_BUCKET_BYTES");
    return setting ? std::max<int64_t>(0, std::atoll(setting)) : int64_t(1) << 20;
  }();
  return bytes;
}

/// MITHRIL_MPI_ASYNC_SUM=0: a started sum is summed at once, as
/// mithrilMpiAllReduceSum does (to compare).
bool asyncSums() {
  static const bool async = [] {
    const char *setting = std::getenv("MITHRIL_MPI_ASYNC_SUM");
    return !(setting && std::strcmp(setting, "0") == 0);
  }();
  return async;
}

/// Starts MPI_Iallreduce on `bucket` (MPI counts are ints: large buckets go
/// in pieces) and empties it.
int issueBucket(int32_t comm, Bucket &bucket) {
  MPI_Datatype type = bucket.isDouble ? MPI_DOUBLE : MPI_FLOAT;
  int64_t elementBytes = bucket.isDouble ? sizeof(double) : sizeof(float);
  int64_t count = bucket.bytes / elementBytes;
  for (int64_t done = 0; done < count;) {
    int piece = static_cast<int>(std::min<int64_t>(count - done, INT_MAX / 2));
    StartedSum started{comm, reinterpret_cast<uintptr_t>(bucket.recv + done * elementBytes),
                       piece * elementBytes, MPI_REQUEST_NULL};
    if (int code = check(MPI_Iallreduce(bucket.send + done * elementBytes,
                                        bucket.recv + done * elementBytes, piece, type, MPI_SUM,
                                        communicator(comm), &started.request),
                         "MPI_Iallreduce"))
      return code;
    startedSums.push_back(started);
    ++sumCalls;
    done += piece;
  }
  bucket = Bucket();
  return 0;
}

/// Lets MPI progress the started sums (most MPI libraries move a
/// non-blocking collective on only inside MPI calls).
void progressStartedSums() {
  for (StartedSum &started : startedSums) {
    int done = 0;
    MPI_Test(&started.request, &done, MPI_STATUS_IGNORE);
  }
}

/// Waits for the started sums of `comm` that `wanted` selects, and forgets
/// them.
template <typename Wanted> int waitForStartedSums(int32_t comm, Wanted wanted) {
  int failed = 0;
  auto kept = startedSums.begin();
  for (StartedSum &started : startedSums) {
    if (started.comm == comm && wanted(started)) {
      if (int code = check(MPI_Wait(&started.request, MPI_STATUS_IGNORE), "MPI_Wait"))
        failed = failed ? failed : code;
      continue;
    }
    *kept++ = started;
  }
  startedSums.erase(kept, startedSums.end());
  return failed;
}

/// The bytes of one piece of a shared-memory sum: measured best between 64
/// KiB and 1 MiB (small enough to stay in the cores' caches, large enough
/// that the barrier per piece costs little).
constexpr int64_t kPieceBytes = 256 * 1024;

/// A communicator's shared-memory window: each rank's segment holds two
/// pieces, used in turn, so that one barrier per piece suffices (a rank
/// writes a half again only after the barrier of the piece after, which every
/// rank reaches only once done reading that half).
struct SharedSum {
  MPI_Comm node = MPI_COMM_NULL;
  MPI_Win window = MPI_WIN_NULL;
  std::vector<char *> segments;
  int rank = 0;
  int half = 0;
};

/// Per communicator index: not tried yet (null), not usable (a SharedSum
/// without a window: MPI_Allreduce then), or the window.
std::vector<std::unique_ptr<SharedSum>> sharedSums;

/// A communicator's window of operands (mithrilMpiSumWindow): compiled code
/// computes the operands of its sums in this rank's segment, each at its own
/// offset, and a sum reads every rank's operand where it lies. Where the
/// ranks do not share a machine, private memory (`window` null), summed by
/// MPI_Allreduce.
struct OperandWindow {
  MPI_Win window = MPI_WIN_NULL;
  /// The node communicator of the communicator's SharedSum.
  MPI_Comm node = MPI_COMM_NULL;
  std::vector<char *> segments;
  char *own = nullptr;
  int64_t bytes = 0;
};

/// Per communicator index, made by its first mithrilMpiSumWindow.
std::vector<std::unique_ptr<OperandWindow>> operandWindows;

void releaseOperandWindow(OperandWindow &operands) {
  if (operands.window != MPI_WIN_NULL) {
    MPI_Win_unlock_all(operands.window);
    MPI_Win_free(&operands.window);
  } else {
    std::free(operands.own);
  }
  operands = OperandWindow();
}

void freeSharedSums() {
  for (auto &operands : operandWindows)
    if (operands)
      releaseOperandWindow(*operands);
  operandWindows.clear();
  for (auto &shared : sharedSums) {
    if (!shared || shared->window == MPI_WIN_NULL)
      continue;
    MPI_Win_unlock_all(shared->window);
    MPI_Win_free(&shared->window);
    MPI_Comm_free(&shared->node);
  }
  sharedSums.clear();
}

void finalize() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized)
    return;
  // (Sums a step cut short left started.)
  for (StartedSum &started : startedSums)
    MPI_Wait(&started.request, MPI_STATUS_IGNORE);
  startedSums.clear();
  freeSharedSums();
  MPI_Finalize();
}

/// The shared-memory sum of communicator `index` (communicator()), set up on
/// its first sum
/// (every rank of it makes the same calls in the same order, as collectives
/// require); null where its ranks do not all share one machine, where the
/// window cannot be made, or where MITHRIL_MPI_SHARED_SUM=0.
SharedSum *sharedSum(int32_t index) {
  MPI_Comm comm = communicator(index);
  size_t slot = slotOf(index);
  if (sharedSums.size() <= slot)
    sharedSums.resize(slot + 1);
  if (sharedSums[slot])
    return sharedSums[slot]->window == MPI_WIN_NULL ? nullptr : sharedSums[slot].get();
  auto shared = std::make_unique<SharedSum>();
  SharedSum *result = nullptr;
  const char *setting = std::getenv("MITHRIL_MPI_SHARED_SUM");
  bool wanted = !(setting && std::strcmp(setting, "0") == 0);
  int commSize = 1, commRank = 0, nodeSize = 0;
  MPI_Comm_size(comm, &commSize);
  MPI_Comm_rank(comm, &commRank);
  // The decision is collective: every rank reads the same environment under
  // mpirun, and the node split gives every rank the same answer.
  if (wanted && commSize > 1 &&
      MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, commRank, MPI_INFO_NULL, &shared->node) ==
          MPI_SUCCESS) {
    MPI_Comm_size(shared->node, &nodeSize);
    if (nodeSize != commSize) {
      MPI_Comm_free(&shared->node);
    } else {
      MPI_Comm_rank(shared->node, &shared->rank);
      MPI_Info info;
      MPI_Info_create(&info);
      // Each rank's segment on its own pages (first touched by its owner).
      MPI_Info_set(info, "alloc_shared_noncontig", "true");
      void *base = nullptr;
      int made = MPI_Win_allocate_shared(2 * kPieceBytes, 1, info, shared->node, &base,
                                         &shared->window) == MPI_SUCCESS;
      MPI_Info_free(&info);
      // Every rank must agree to use it.
      int everywhere = 0;
      MPI_Allreduce(&made, &everywhere, 1, MPI_INT, MPI_MIN, shared->node);
      if (everywhere) {
        shared->segments.resize(nodeSize);
        for (int r = 0; r < nodeSize; ++r) {
          MPI_Aint bytes = 0;
          int unit = 0;
          void *segment = nullptr;
          MPI_Win_shared_query(shared->window, r, &bytes, &unit, &segment);
          shared->segments[r] = static_cast<char *>(segment);
        }
        MPI_Win_lock_all(MPI_MODE_NOCHECK, shared->window);
        result = shared.get();
      } else {
        if (made)
          MPI_Win_free(&shared->window);
        shared->window = MPI_WIN_NULL;
        MPI_Comm_free(&shared->node);
      }
    }
  }
  sharedSums[slot] = std::move(shared);
  return result;
}

/// out[i] = the sum over ranks of their segment's values, in rank order.
template <typename T>
void addSegments(const std::vector<char *> &segments, int64_t offset, int64_t count, T *out) {
  auto segment = [&](size_t r) { return reinterpret_cast<const T *>(segments[r] + offset); };
  const T *first = segment(0), *second = segment(1);
  for (int64_t i = 0; i < count; ++i)
    out[i] = first[i] + second[i];
  for (size_t r = 2; r < segments.size(); ++r) {
    const T *next = segment(r);
    for (int64_t i = 0; i < count; ++i)
      out[i] += next[i];
  }
}

/// addSegments on float64 or float32 elements.
void addSegments(const std::vector<char *> &segments, int64_t offset, int64_t count, char *out,
                 bool isDouble) {
  if (isDouble)
    addSegments(segments, offset, count, reinterpret_cast<double *>(out));
  else
    addSegments(segments, offset, count, reinterpret_cast<float *>(out));
}

int sharedAllReduce(SharedSum &shared, const char *in, char *out, int64_t count,
                    size_t elementBytes, bool isDouble) {
  int64_t perPiece = kPieceBytes / static_cast<int64_t>(elementBytes);
  for (int64_t done = 0; done < count; done += perPiece) {
    int64_t piece = std::min(count - done, perPiece);
    const char *from = (in ? in : out) + done * elementBytes;
    int64_t offset = shared.half * kPieceBytes;
    std::memcpy(shared.segments[shared.rank] + offset, from, piece * elementBytes);
    // Stores before the barrier, the others' loads after it.
    MPI_Win_sync(shared.window);
    if (int code = check(MPI_Barrier(shared.node), "MPI_Barrier"))
      return code;
    MPI_Win_sync(shared.window);
    addSegments(shared.segments, offset, piece, out + done * elementBytes, isDouble);
    shared.half ^= 1;
  }
  return 0;
}

/// The operand window of communicator `index` where its ranks share it, or
/// null.
OperandWindow *sharedOperandWindow(int32_t index) {
  size_t slot = slotOf(index);
  if (slot >= operandWindows.size() || !operandWindows[slot] ||
      operandWindows[slot]->window == MPI_WIN_NULL)
    return nullptr;
  return operandWindows[slot].get();
}

/// The operand window of communicator `index` whose shared segment holds
/// `bytes` bytes at `data`, or null.
OperandWindow *sharedWindowHolding(int32_t index, const char *data, int64_t bytes) {
  OperandWindow *operands = sharedOperandWindow(index);
  if (!data || !operands || data < operands->own || data + bytes > operands->own + operands->bytes)
    return nullptr;
  return operands;
}

/// The sum of every rank's operand at `offset` of its segment, in rank
/// order, into `out`: one barrier once every rank has written its operand,
/// one once every rank has read the others' (the next function may write
/// its operands where these lie).
int sumInWindow(OperandWindow &operands, int64_t offset, char *out, int64_t count, bool isDouble) {
  MPI_Win_sync(operands.window);
  if (int code = check(MPI_Barrier(operands.node), "MPI_Barrier"))
    return code;
  MPI_Win_sync(operands.window);
  addSegments(operands.segments, offset, count, out, isDouble);
  return check(MPI_Barrier(operands.node), "MPI_Barrier");
}
} // namespace

extern "C" {

const char *mithrilMpiTakeError() {
  static thread_local std::string taken;
  taken = lastError;
  lastError.clear();
  return taken.c_str();
}

/// Starts MPI once per process (MPI_Init_thread, serialized calls) and
/// finalizes it at exit; a process that started MPI itself is joined.
int mithrilMpiInit() {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (communicators.empty())
    communicators.push_back(MPI_COMM_WORLD);
  if (initialized)
    return 0;
  int provided = 0;
  if (int code = check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided),
                       "MPI_Init_thread"))
    return code;
  // Errors come back as codes instead of aborting the job, so that the
  // caller can name what failed.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  std::atexit(finalize);
  return 0;
}

int mithrilMpiRank(int32_t comm) {
  int rank = 0;
  MPI_Comm_rank(communicator(comm), &rank);
  return rank;
}

int mithrilMpiSize(int32_t comm) {
  int size = 1;
  MPI_Comm_size(communicator(comm), &size);
  return size;
}

/// Splits communicator `parent` by `color` (ranks ordered by `key`), as
/// MPI_Comm_split; `*index` names the new one in the other calls.
int mithrilMpiSplit(int32_t parent, int32_t color, int32_t key, int32_t *index) {
  MPI_Comm split;
  if (int code = check(MPI_Comm_split(communicator(parent), color, key, &split), "MPI_Comm_split"))
    return code;
  MPI_Comm_set_errhandler(split, MPI_ERRORS_RETURN);
  communicators.push_back(split);
  *index = static_cast<int32_t>(communicators.size() - 1);
  return 0;
}

const char *mithrilMpiLibraryVersion() {
  static char version[MPI_MAX_LIBRARY_VERSION_STRING];
  int length = 0;
  MPI_Get_library_version(version, &length);
  return version;
}

static int allReduceSum(int32_t comm, const void *send, void *recv, int64_t count,
                        int32_t isDouble);

/// Sums `count` floats (`isDouble`: doubles) over the ranks into `recv`;
/// `send` null sums `recv` in place. mithrilMpiSumSeconds gives the seconds
/// spent in all of them, waits included.

int mithrilMpiAllReduceSum(int32_t comm, const void *send, void *recv, int64_t count,
                           int32_t isDouble) {
  auto start = std::chrono::steady_clock::now();
  int code = allReduceSum(comm, send, recv, count, isDouble);
  sumSeconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return code;
}

double mithrilMpiSumSeconds() { return sumSeconds; }

int64_t mithrilMpiSumCalls() { return sumCalls; }

/// Starts summing `count` floats (`isDouble`: doubles) at `send` over the
/// ranks into `recv`, which holds the sum once mithrilMpiAllReduceWait
/// returned for it; neither may be touched before. Where the ranks sum
/// through shared memory (they share a machine), the sum is done at once.
/// Operands started one after the other that lie side by side (at the same
/// distance below 64 bytes in `send` and `recv`) go to MPI_Iallreduce
/// together once they reach bucketBytes() or one of them is waited for.
int mithrilMpiAllReduceStart(int32_t comm, const void *send, void *recv, int64_t count,
                             int32_t isDouble) {
  auto start = std::chrono::steady_clock::now();
  int64_t elementBytes = isDouble ? sizeof(double) : sizeof(float);
  const char *in = static_cast<const char *>(send);
  char *out = static_cast<char *>(recv);
  int code = 0;
  if (!in || !asyncSums() || sharedWindowHolding(comm, in, count * elementBytes) ||
      sharedSum(comm)) {
    code = allReduceSum(comm, send, recv, count, isDouble);
  } else {
    progressStartedSums();
    Bucket &bucket = bucketOf(comm);
    auto gap = [](const void *next, const char *end) {
      return static_cast<int64_t>(reinterpret_cast<uintptr_t>(next) -
                                  reinterpret_cast<uintptr_t>(end));
    };
    int64_t sendGap = gap(in, bucket.send + bucket.bytes);
    bool besides = bucket.bytes > 0 && bucket.isDouble == bool(isDouble) && sendGap >= 0 &&
                   sendGap < 64 && sendGap % elementBytes == 0 &&
                   gap(out, bucket.recv + bucket.bytes) == sendGap;
    if (besides) {
      bucket.bytes += sendGap + count * elementBytes;
    } else {
      if (bucket.bytes > 0)
        code = issueBucket(comm, bucket);
      bucket = Bucket{in, out, count * elementBytes, bool(isDouble)};
    }
    if (code == 0 && bucket.bytes >= bucketBytes())
      code = issueBucket(comm, bucket);
  }
  sumSeconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return code;
}

/// Waits for the started sum whose result holds the byte at `recv`.
int mithrilMpiAllReduceWait(int32_t comm, const void *recv) {
  auto start = std::chrono::steady_clock::now();
  auto at = reinterpret_cast<uintptr_t>(recv);
  Bucket &bucket = bucketOf(comm);
  int code = 0;
  if (bucket.bytes > 0 && at >= reinterpret_cast<uintptr_t>(bucket.recv) &&
      at < reinterpret_cast<uintptr_t>(bucket.recv) + bucket.bytes)
    code = issueBucket(comm, bucket);
  if (code == 0)
    code = waitForStartedSums(comm, [&](const StartedSum &started) {
      return at >= started.recv && at < started.recv + started.bytes;
    });
  sumSeconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return code;
}

/// Waits for every sum started on `comm`.
int mithrilMpiAllReduceWaitAll(int32_t comm) {
  Bucket &bucket = bucketOf(comm);
  int code = bucket.bytes > 0 ? issueBucket(comm, bucket) : 0;
  int waited = waitForStartedSums(comm, [](const StartedSum &) { return true; });
  return code ? code : waited;
}

static int allReduceSum(int32_t comm, const void *send, void *recv, int64_t count,
                        int32_t isDouble) {
  MPI_Datatype type = isDouble ? MPI_DOUBLE : MPI_FLOAT;
  size_t elementBytes = isDouble ? sizeof(double) : sizeof(float);
  const char *in = static_cast<const char *>(send);
  char *out = static_cast<char *>(recv);
  if (OperandWindow *operands = sharedWindowHolding(comm, in, count * elementBytes))
    return sumInWindow(*operands, in - operands->own, out, count, isDouble);
  if (SharedSum *shared = sharedSum(comm))
    return sharedAllReduce(*shared, in, out, count, elementBytes, isDouble);
  // MPI counts are ints: large buffers go in pieces.
  for (int64_t done = 0; done < count;) {
    int piece = static_cast<int>(std::min<int64_t>(count - done, INT_MAX / 2));
    const void *from = in ? in + done * elementBytes : MPI_IN_PLACE;
    if (int code = check(MPI_Allreduce(from, out + done * elementBytes, piece, type, MPI_SUM,
                                       communicator(comm)),
                         "MPI_Allreduce"))
      return code;
    done += piece;
  }
  return 0;
}

/// This rank's segment of communicator `comm`'s operand window, of at least
/// `bytes` bytes, in `*segment`. A larger window replaces the one there was
/// (collectively, where the ranks share one: every rank of `comm` must ask
/// for the same sizes in the same order, as they run the same code).
int mithrilMpiSumWindow(int32_t comm, int64_t bytes, void **segment) {
  size_t slot = slotOf(comm);
  if (operandWindows.size() <= slot)
    operandWindows.resize(slot + 1);
  if (!operandWindows[slot])
    operandWindows[slot] = std::make_unique<OperandWindow>();
  OperandWindow &operands = *operandWindows[slot];
  if (bytes > operands.bytes) {
    // Whole pages, each rank's on its own.
    constexpr int64_t kPage = 4096;
    int64_t rounded = (bytes + kPage - 1) / kPage * kPage;
    releaseOperandWindow(operands);
    SharedSum *shared = sharedSum(comm);
    if (shared) {
      MPI_Info info;
      MPI_Info_create(&info);
      MPI_Info_set(info, "alloc_shared_noncontig", "true");
      void *base = nullptr;
      // A page more: Open MPI's segments start past a header, not on a page.
      int code =
          MPI_Win_allocate_shared(rounded + kPage, 1, info, shared->node, &base, &operands.window);
      MPI_Info_free(&info);
      if (int failed = check(code, "MPI_Win_allocate_shared")) {
        operands.window = MPI_WIN_NULL;
        lastError += " (" + std::to_string(rounded) + " bytes a rank)";
        return failed;
      }
      operands.node = shared->node;
      int nodeSize = 0;
      MPI_Comm_size(shared->node, &nodeSize);
      operands.segments.resize(nodeSize);
      for (int r = 0; r < nodeSize; ++r) {
        MPI_Aint size = 0;
        int unit = 0;
        void *memory = nullptr;
        MPI_Win_shared_query(operands.window, r, &size, &unit, &memory);
        // Every process maps the window at its own address but at the same
        // offset in a page: aligned up, each segment starts at the same byte
        // for every rank.
        auto address = reinterpret_cast<uintptr_t>(memory);
        operands.segments[r] =
            reinterpret_cast<char *>((address + kPage - 1) & ~uintptr_t(kPage - 1));
      }
      operands.own = operands.segments[shared->rank];
      MPI_Win_lock_all(MPI_MODE_NOCHECK, operands.window);
    } else {
      operands.own = static_cast<char *>(std::aligned_alloc(kPage, rounded));
      if (!operands.own) {
        lastError = "out of memory for a window of " + std::to_string(rounded) + " bytes";
        return MPI_ERR_NO_MEM;
      }
    }
    operands.bytes = rounded;
  }
  *segment = operands.own;
  return 0;
}

/// The number of ranks of communicator `comm` whose operand windows are one
/// shared-memory window (all of them, where they share a machine), or 0. A
/// collective the first time for a communicator.
int mithrilMpiWindowRanks(int32_t comm) {
  SharedSum *shared = sharedSum(comm);
  return shared ? static_cast<int>(shared->segments.size()) : 0;
}

/// Rank `rank`'s segment of communicator `comm`'s shared operand window, of
/// at least `bytes` bytes, in `*segment`: compiled code reads the ranks'
/// operands there itself (after mithrilMpiSumWindow made the window).
int mithrilMpiWindowSegment(int32_t comm, int32_t rank, int64_t bytes, void **segment) {
  OperandWindow *operands = sharedOperandWindow(comm);
  if (!operands || bytes > operands->bytes || rank < 0 ||
      static_cast<size_t>(rank) >= operands->segments.size()) {
    lastError = "no shared window of " + std::to_string(bytes) + " bytes with a segment of rank " +
                std::to_string(rank) + " (the code was compiled for ranks that share a machine)";
    return MPI_ERR_OTHER;
  }
  *segment = operands->segments[rank];
  return 0;
}

/// Waits for every rank of `comm`'s shared operand window: this rank's
/// stores before it are seen by the others' loads after it. Counted with the
/// sums' time (compiled code adds the operands itself between two of these).
int mithrilMpiWindowBarrier(int32_t comm) {
  auto start = std::chrono::steady_clock::now();
  OperandWindow *operands = sharedOperandWindow(comm);
  if (!operands) {
    lastError = "a barrier of a shared window that was not made";
    return MPI_ERR_OTHER;
  }
  MPI_Win_sync(operands->window);
  int code = check(MPI_Barrier(operands->node), "MPI_Barrier");
  MPI_Win_sync(operands->window);
  sumSeconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return code;
}

/// Every rank's `sendBytes` bytes, in rank order, into `recv`; `counts[r]`
/// is rank r's byte count.
int mithrilMpiAllGatherBytes(int32_t comm, const void *send, int64_t sendBytes, void *recv,
                             const int64_t *counts) {
  int size = mithrilMpiSize(comm);
  std::vector<int> sizes(size), offsets(size);
  int64_t offset = 0;
  for (int r = 0; r < size; ++r) {
    if (counts[r] > INT_MAX || offset > INT_MAX) {
      lastError = "MPI_Allgatherv: more than 2 GiB to gather";
      return MPI_ERR_COUNT;
    }
    sizes[r] = static_cast<int>(counts[r]);
    offsets[r] = static_cast<int>(offset);
    offset += counts[r];
  }
  return check(MPI_Allgatherv(send, static_cast<int>(sendBytes), MPI_BYTE, recv, sizes.data(),
                              offsets.data(), MPI_BYTE, communicator(comm)),
               "MPI_Allgatherv");
}

/// Rank `root`'s `bytes` bytes at `data` on every rank.
int mithrilMpiBroadcastBytes(int32_t comm, void *data, int64_t bytes, int32_t root) {
  char *p = static_cast<char *>(data);
  for (int64_t done = 0; done < bytes;) {
    int piece = static_cast<int>(std::min<int64_t>(bytes - done, INT_MAX / 2));
    if (int code =
            check(MPI_Bcast(p + done, piece, MPI_BYTE, root, communicator(comm)), "MPI_Bcast"))
      return code;
    done += piece;
  }
  return 0;
}

/// Ends every rank of the job (a collective failed on this one: the others
/// would wait for it forever).
void mithrilMpiAbort(int32_t code) { MPI_Abort(MPI_COMM_WORLD, code); }

} // extern "C"
