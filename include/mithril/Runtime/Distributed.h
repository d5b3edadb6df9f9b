//===- Distributed.h - data-parallel runs over MPI ---------------*- C++ -*-===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//
//
// The ranks of a data-parallel run and their collectives. MPI comes from
// libmithril_mpi_runtime, built where an MPI library is found and loaded on
// first use (MITHRIL_MPI_RUNTIME names another copy), so that nothing else
// links MPI. Compiled code sums gradients through mithrilAllReduceF32/F64,
// their operands computed in mithrilCollectiveWindow's memory;
// the Python package gathers outputs and sums losses through these
// functions.
//
//===----------------------------------------------------------------------===//

#ifndef MITHRIL_RUNTIME_DISTRIBUTED_H
#define MITHRIL_RUNTIME_DISTRIBUTED_H

#include "mithril/Dialect/Mithril/IR/BatchSharding.h"
#include "mithril/Runtime/CompiledModel.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>

namespace mithril::runtime {

struct DistributedInfo {
  int rank = 0;
  int size = 1;
  /// The MPI library's own description of itself.
  std::string library;
};

/// Starts MPI (once per process) and gives this process's rank and the
/// number of ranks. Fails, naming what is missing, where this build has no
/// MPI runtime or MPI does not start.
llvm::Expected<DistributedInfo> initDistributed();

/// The ranks a collective runs over: all of them, or, on a data x tensor
/// mesh, the ranks that hold the same part of the parameters (a data group:
/// each has its share of the batch) or the same share of the batch (a tensor
/// group: each has its part of the parameters). Without a mesh, Data is World.
enum class Group { World = 0, Data = 1, Tensor = 2 };

/// Arranges the ranks as a `data` x `tensor` mesh (rank r is (r / tensor,
/// r % tensor)) and makes its groups. Every rank must call it.
llvm::Error setupMesh(int data, int tensor);

/// This rank's index in `group`, and the group's size.
llvm::Expected<std::pair<int, int>> groupRankAndSize(Group group);

/// Sums `count` float32 (`isDouble`: float64) values over `group`, in place.
llvm::Error allReduceSum(void *data, int64_t count, bool isDouble, Group group = Group::World);

/// The number of ranks of `group` that share one machine's window of
/// all-reduce operands (all of them, or 0 where they do not share a machine
/// or MITHRIL_MPI_SHARED_SUM=0): code compiled with that many `window-ranks`
/// reads their operands there itself. Every rank of the group must call it.
llvm::Expected<int> sharedWindowRanks(Group group);

/// The seconds this process has spent in sums over ranks (compiled code's
/// and allReduceSum's), the waits for the other ranks included; 0 before
/// MPI started.
double allReduceSeconds();

/// The sums this process has handed to MPI (each bucket of operands counts
/// once, each piece of a shared-memory sum too); 0 before MPI started.
int64_t allReduceCalls();

/// Waits for every sum compiled code started and did not wait for (a step
/// cut short), so that MPI writes no buffer given back.
void finishStartedSums();

/// Gathers each rank's `sendBytes` bytes in rank order into `recv`;
/// `counts[r]` is the byte count of rank r of `group`.
llvm::Error allGatherBytes(const void *send, int64_t sendBytes, void *recv,
                           llvm::ArrayRef<int64_t> counts, Group group = Group::World);

/// This rank's part of one output of a data-parallel step, and how the
/// ranks' parts combine.
struct OutputPart {
  enum class Combine {
    /// In rank order along axis 0: `data` holds `bytes` bytes of rows.
    Concatenate,
    /// Added up in rank order, float32 and float64 in float64, int32 and
    /// int64 in int64: `data` holds `count` elements of `element`.
    Sum,
    /// As Sum, each rank's floats times its weight first (a partial mean's
    /// share of the batch).
    WeightedSum
  };
  enum class Element { F32, F64, I32, I64 };
  Combine combine;
  Element element = Element::F32;
  const void *data;
  int64_t bytes = 0; // Concatenate
  int64_t count = 0; // Sum, WeightedSum
};

/// Every rank's parts combined (a training step's split logits and partial
/// loss), in one collective or two (the sizes first where a part is
/// concatenated): the combined bytes of each part, each in its part's
/// element type. Every rank gets the same bits.
llvm::Expected<std::vector<std::vector<char>>>
combineOutputs(llvm::ArrayRef<OutputPart> parts, double weight, Group group = Group::Data);

/// Rank `root`'s `bytes` bytes at `data`, on every rank of `group`.
llvm::Error broadcastBytes(void *data, int64_t bytes, int root, Group group = Group::World);

struct OutputDistribution {
  std::string name;
  BatchSharding sharding;
};

struct DataParallelPlan {
  /// The data inputs split along axis 0.
  std::vector<std::string> batchedInputs;
  std::vector<OutputDistribution> outputs;
};

/// How each output of the model `options` describes is spread over the ranks
/// when the data inputs `batchedInputs` are split along axis 0
/// (mithril-batch-sharding on the flattened model, with those axes dynamic:
/// give them as `?` in options.shapes). With no `batchedInputs`, every data
/// input whose axis 0 stays dynamic is split. An op that cannot run on batch
/// shards is an error naming it, and the mithril-opt command that shows it.
///
/// Models whose graph reads the batch size (a reshape to `input.shape[0]`)
/// cannot leave it dynamic: for them, `source` has one static batch size and
/// `doubledSource` (with `doubledShapes`) twice it; the sizes that differ
/// between the two are the batch's.
llvm::Expected<DataParallelPlan>
analyzeDataParallel(llvm::StringRef source, const CompileOptions &options,
                    llvm::ArrayRef<std::string> batchedInputs, llvm::StringRef doubledSource = "",
                    llvm::ArrayRef<std::string> doubledShapes = {});

} // namespace mithril::runtime

/// Called by compiled code (mithril.all_reduce): sums the memref at
/// (srcRank, srcDescriptor) over the ranks of `group` (0: the data group, 1:
/// the tensor group) into the one at (dstRank, dstDescriptor), as unranked
/// memrefs pass. A failed collective ends the job (MPI_Abort): the other
/// ranks would wait for this one forever.
extern "C" void mithrilAllReduceF32(int64_t group, int64_t srcRank, void *srcDescriptor,
                                    int64_t dstRank, void *dstDescriptor);
extern "C" void mithrilAllReduceF64(int64_t group, int64_t srcRank, void *srcDescriptor,
                                    int64_t dstRank, void *dstDescriptor);

/// The same, started: MPI may still be summing when it returns (operands
/// of ranks on several machines, MPI_Iallreduce; where the ranks share a
/// machine the sum is done at once). Operands started one after the other
/// that lie side by side in the window of operands go to MPI together, in
/// buckets of MITHRIL_MPI_BUCKET_BYTES (default 1 MiB). Neither memref may be
/// touched before mithrilAllReduceWait for the result.
extern "C" void mithrilAllReduceStartF32(int64_t group, int64_t srcRank, void *srcDescriptor,
                                         int64_t dstRank, void *dstDescriptor);
extern "C" void mithrilAllReduceStartF64(int64_t group, int64_t srcRank, void *srcDescriptor,
                                         int64_t dstRank, void *dstDescriptor);
/// Waits for the started sum whose result lies at byte `offset` of the
/// buffer of results (a memref<*xi8>, which the call keeps in use until the
/// sum is done).
extern "C" void mithrilAllReduceWait(int64_t group, int64_t resultsRank, void *resultsDescriptor,
                                     int64_t offset);
/// Waits for every sum started over `group` (before compiled code returns).
extern "C" void mithrilAllReduceWaitAll(int64_t group);

/// A memref<?xi8> as compiled code passes it.
struct MithrilByteMemRef {
  char *allocated;
  char *aligned;
  int64_t offset;
  int64_t size;
  int64_t stride;
};

/// Called by compiled code (mithril.collective_window, through its C
/// interface): this rank's segment of the window where the function computes
/// the operands of its sums over `group`, of `bytes` bytes. Summed by
/// mithrilAllReduceF32/F64 where they lie: each rank adds every rank's
/// operand from its segment (an MPI-3 shared-memory window) where the ranks
/// share a machine, MPI_Allreduce elsewhere.
extern "C" void _mlir_ciface_mithrilCollectiveWindow(MithrilByteMemRef *segment, int64_t group,
                                                     int64_t bytes);

/// Called by code compiled with `window-ranks` (mithril.collective_window
/// with a rank): rank `rank`'s segment of that window, which the group's ranks
/// share.
extern "C" void _mlir_ciface_mithrilCollectiveWindowSegment(MithrilByteMemRef *segment,
                                                            int64_t group, int64_t bytes,
                                                            int64_t rank);

/// Called by code compiled with `window-ranks`: waits for every rank of
/// `group`, after it wrote an operand into its segment (at `address`, which
/// only ties the call to that write) or before it returns (0). Each rank then
/// adds the operands where they lie.
extern "C" void mithrilCollectiveBarrier(int64_t group, int64_t address);

#endif // MITHRIL_RUNTIME_DISTRIBUTED_H
