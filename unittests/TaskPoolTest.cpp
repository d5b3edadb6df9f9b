//===- TaskPoolTest.cpp - the task pool behind split ops ------------------===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//

#include "../lib/Runtime/TaskPool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

using namespace mithril::runtime;

namespace {
std::atomic<int> tasksRun{0}, realAwaits{0};

void countTask(void *) {
  // Long enough that the worker and the waiting caller both take some.
  std::this_thread::sleep_for(std::chrono::microseconds(200));
  tasksRun.fetch_add(1);
}
std::atomic<int> expectedTasks{0};
// The runtime's await blocks until the group's tasks have completed their
// tokens; this one waits for the count.
void realAwait(void *) {
  realAwaits.fetch_add(1);
  while (tasksRun.load() < expectedTasks.load())
    std::this_thread::yield();
}
void unused(void *, void (*)(void *)) { ADD_FAILURE() << "the runtime's execute was called"; }

using ExecuteFn = void (*)(void *, void (*)(void *));
using AwaitFn = void (*)(void *);
} // namespace

// The pool takes over starting and awaiting tasks: every task submitted runs
// (on the pool's workers, or on the waiting caller, which runs queued ones
// itself), the runtime's own await is still called, for its tokens and
// groups, and waitForPoolTasks returns only once no task runs.
TEST(TaskPool, RunsEveryTaskBeforeTheAwaitReturns) {
  llvm::StringMap<void *> symbols;
  symbols["mlirAsyncRuntimeExecute"] = reinterpret_cast<void *>(&unused);
  symbols["mlirAsyncRuntimeAwaitAllInGroup"] = reinterpret_cast<void *>(&realAwait);
  symbols["mlirAsyncRuntimeAwaitToken"] = reinterpret_cast<void *>(&realAwait);
  installTaskPool(symbols);
  auto execute = reinterpret_cast<ExecuteFn>(symbols["mlirAsyncRuntimeExecute"]);
  auto awaitAll = reinterpret_cast<AwaitFn>(symbols["mlirAsyncRuntimeAwaitAllInGroup"]);
  ASSERT_NE(reinterpret_cast<void *>(execute), reinterpret_cast<void *>(&unused));

  for (int round = 0; round < 3; ++round) {
    tasksRun = 0;
    realAwaits = 0;
    expectedTasks = 16;
    for (int i = 0; i < 16; ++i)
      execute(nullptr, &countTask);
    awaitAll(nullptr);
    EXPECT_EQ(tasksRun.load(), 16);
    EXPECT_EQ(realAwaits.load(), 1);
  }
  tasksRun = 0;
  expectedTasks = 0;
  for (int i = 0; i < 8; ++i)
    execute(nullptr, &countTask);
  waitForPoolTasks();
  EXPECT_EQ(tasksRun.load(), 8);
}

// Without every entry point it needs the pool installs nothing: tasks it
// started could otherwise be awaited through the runtime alone.
TEST(TaskPool, LeavesAnIncompleteRuntimeAlone) {
  llvm::StringMap<void *> symbols;
  symbols["mlirAsyncRuntimeExecute"] = reinterpret_cast<void *>(&unused);
  installTaskPool(symbols);
  EXPECT_EQ(symbols["mlirAsyncRuntimeExecute"], reinterpret_cast<void *>(&unused));
}
