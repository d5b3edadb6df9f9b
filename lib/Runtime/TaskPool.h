//===- TaskPool.h - the threads that run split ops --------------*- C++ -*-===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//

#ifndef MITHRIL_LIB_RUNTIME_TASKPOOL_H
#define MITHRIL_LIB_RUNTIME_TASKPOOL_H

#include "llvm/ADT/StringMap.h"

#include <cstdint>

namespace mithril::runtime {

/// Replaces the entry points of the MLIR async runtime through which compiled
/// code starts tasks and waits for them (`mlirAsyncRuntimeExecute`,
/// `mlirAsyncRuntimeAwaitAllInGroup`, `mlirAsyncRuntimeAwaitToken`) with the
/// task pool's; tokens, groups and reference counts stay the runtime's.
void installTaskPool(llvm::StringMap<void *> &asyncRuntimeSymbols);

/// Runs `chunk(context, i)` for i in [0, count): the chunks of a split op
/// compiled with mithril-dispatch-chunks, on the pool's workers and the
/// calling thread. Returns once every chunk is done.
extern "C" void mithrilParallelFor(void (*chunk)(void *, int64_t), void *context, int64_t count);

/// Waits until no task of the pool runs: compiled code may be freed then.
void waitForPoolTasks();

/// Is this thread running a task of the pool (split work of compiled code)?
bool runningPoolTask();

} // namespace mithril::runtime

#endif // MITHRIL_LIB_RUNTIME_TASKPOOL_H
