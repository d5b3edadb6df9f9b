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

namespace {
struct Chunks {
  std::atomic<int> runs[16] = {};
  std::atomic<int> nested{0};
};
void countChunk(void *context, int64_t index) {
  std::this_thread::sleep_for(std::chrono::microseconds(100));
  static_cast<Chunks *>(context)->runs[index].fetch_add(1);
}
// A chunk that splits work of its own, as an outlined split op inside
// another one's chunk would.
void nestedChunk(void *context, int64_t index) {
  Chunks inner;
  mithrilParallelFor(&countChunk, &inner, 4);
  for (const auto &runs : inner.runs)
    static_cast<Chunks *>(context)->nested.fetch_add(runs.load());
  static_cast<Chunks *>(context)->runs[index].fetch_add(1);
}
} // namespace

// mithrilParallelFor runs each chunk exactly once and returns only when all
// are done, also when chunks split work of their own.
TEST(TaskPool, ParallelForRunsEveryChunkOnce) {
  for (int64_t count : {0, 1, 2, 3, 16}) {
    Chunks chunks;
    mithrilParallelFor(&countChunk, &chunks, count);
    for (int64_t i = 0; i < 16; ++i)
      EXPECT_EQ(chunks.runs[i].load(), i < count ? 1 : 0) << "chunk " << i << " of " << count;
  }
  Chunks outer;
  mithrilParallelFor(&nestedChunk, &outer, 3);
  for (int64_t i = 0; i < 3; ++i)
    EXPECT_EQ(outer.runs[i].load(), 1);
  EXPECT_EQ(outer.nested.load(), 3 * 4);
  EXPECT_FALSE(runningPoolTask());
}
