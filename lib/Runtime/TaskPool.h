//===- TaskPool.h - the threads that run split ops --------------*- C++ -*-===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//

#ifndef MITHRIL_LIB_RUNTIME_TASKPOOL_H
#define MITHRIL_LIB_RUNTIME_TASKPOOL_H

#include "llvm/ADT/StringMap.h"

namespace mithril::runtime {

/// Replaces the entry points of the MLIR async runtime through which compiled
/// code starts tasks and waits for them (`mlirAsyncRuntimeExecute`,
/// `mlirAsyncRuntimeAwaitAllInGroup`, `mlirAsyncRuntimeAwaitToken`) with the
/// task pool's; tokens, groups and reference counts stay the runtime's.
void installTaskPool(llvm::StringMap<void *> &asyncRuntimeSymbols);

/// Waits until no task of the pool runs: compiled code may be freed then.
void waitForPoolTasks();

/// Is this thread running a task of the pool (split work of compiled code)?
bool runningPoolTask();

} // namespace mithril::runtime

#endif // MITHRIL_LIB_RUNTIME_TASKPOOL_H
