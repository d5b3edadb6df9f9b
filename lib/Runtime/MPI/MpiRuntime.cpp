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
//===----------------------------------------------------------------------===//

// The C API only (Open MPI and MPICH add C++ bindings otherwise).
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

namespace {
std::string lastError;
/// The communicators collectives name by index: 0 is MPI_COMM_WORLD, the
/// others come from mithrilMpiSplit (a mesh's data and tensor groups).
std::vector<MPI_Comm> communicators;

MPI_Comm communicator(int32_t index) {
  if (index < 0 || static_cast<size_t>(index) >= communicators.size())
    return MPI_COMM_WORLD;
  return communicators[index];
}

int check(int code, const char *what) {
  if (code == MPI_SUCCESS)
    return 0;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  lastError = std::string(what) + ": " + std::string(text, length);
  return code;
}

void finalize() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized)
    MPI_Finalize();
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

/// Sums `count` floats (`isDouble`: doubles) over the ranks into `recv`;
/// `send` null sums `recv` in place.
int mithrilMpiAllReduceSum(int32_t comm, const void *send, void *recv, int64_t count,
                           int32_t isDouble) {
  MPI_Datatype type = isDouble ? MPI_DOUBLE : MPI_FLOAT;
  size_t elementBytes = isDouble ? sizeof(double) : sizeof(float);
  const char *in = static_cast<const char *>(send);
  char *out = static_cast<char *>(recv);
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
