//===- TaskPool.cpp - the threads that run split ops ----------------------===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
// Ops split across threads hand their chunks to this pool: compiled with
// mithril-dispatch-chunks, through one call of mithrilParallelFor per op;
// compiled for the MLIR async runtime, through its execute and await entry
// points, which this pool replaces. The async runtime's own pool puts idle
// workers to sleep on a condition variable: every split op then paid a
// wake-up of a worker and, when the worker finished last, of the caller
// (tens of microseconds each on a VM, more than a small layer's whole run).
// This pool keeps its workers spinning for a while after their last task,
// and a waiting caller runs queued tasks itself and spins until its chunks
// are done before it blocks.
//
//===----------------------------------------------------------------------===//

#include "TaskPool.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <thread>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define MITHRIL_SPIN_PAUSE() _mm_pause()
#else
#define MITHRIL_SPIN_PAUSE() std::this_thread::yield()
#endif

using namespace mithril::runtime;
using Clock = std::chrono::steady_clock;

namespace {
/// How long a worker spins for its next task before it sleeps (long enough
/// for the gaps between a model's layers and between back-to-back runs, short
/// enough not to hold a core from other libraries' threads), and how long a
/// waiting caller spins for the pool to finish before it blocks.
constexpr std::chrono::microseconds kWorkerSpin(100), kCallerSpin(2000);

/// Tasks this thread is running (a caller helping while it waits runs them
/// too, nested in its own frames).
thread_local unsigned taskDepth = 0;

class TaskPool {
public:
  using Resume = void (*)(void *);
  using Chunk = void (*)(void *, int64_t);

  static TaskPool &get() {
    static TaskPool *pool = new TaskPool(); // workers live as long as the process
    return *pool;
  }

  void submit(void *handle, Resume resume) {
    enqueue(1, [&](int64_t) {
      Task task;
      task.context = handle;
      task.resume = resume;
      return task;
    });
  }

  /// Runs chunks 0 to count - 1 of `chunk`: the others on the workers, the
  /// first on the calling thread, and returns once all are done.
  void parallelFor(Chunk chunk, void *context, int64_t count) {
    if (count <= 0)
      return;
    std::atomic<int64_t> pending{count - 1};
    if (count > 1)
      enqueue(count - 1, [&](int64_t i) {
        Task task;
        task.context = context;
        task.chunk = chunk;
        task.index = i + 1;
        task.pending = &pending;
        return task;
      });
    chunk(context, 0);
    // Help with queued tasks (this op's or another caller's) until this
    // op's chunks are done, yielding the core now and then.
    while (!helpWhile([&] { return pending.load(std::memory_order_acquire) != 0; }, kCallerSpin))
      std::this_thread::yield();
  }

  /// Runs queued tasks and spins until no task runs or `limit` passes.
  bool helpUntilIdle(std::chrono::microseconds limit) {
    return helpWhile([&] { return running_.load(std::memory_order_acquire) != 0; }, limit);
  }

  void waitIdle() {
    while (!helpUntilIdle(kCallerSpin))
      std::this_thread::yield();
  }

private:
  /// A coroutine of the async runtime to resume, or a chunk of a
  /// parallelFor with the counter of its op's chunks still running.
  struct Task {
    void *context = nullptr;
    Resume resume = nullptr;
    Chunk chunk = nullptr;
    int64_t index = 0;
    std::atomic<int64_t> *pending = nullptr;
  };

  /// Queues `count` tasks, `make(i)` for i in [0, count), and wakes
  /// sleeping workers for them.
  template <typename Make> void enqueue(int64_t count, Make make) {
    running_.fetch_add(count, std::memory_order_relaxed);
    unsigned sleeping;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      for (int64_t i = 0; i < count; ++i)
        queue_.push_back(make(i));
      queued_.store(queue_.size(), std::memory_order_release);
      ++submissions_;
      sleeping = sleeping_;
    }
    if (sleeping > 1 && count > 1)
      wakeup_.notify_all();
    else if (sleeping)
      wakeup_.notify_one();
  }

  /// Runs queued tasks and spins while `busy()`, at most `limit`: false if
  /// still busy then.
  template <typename Busy> bool helpWhile(Busy busy, std::chrono::microseconds limit) {
    auto deadline = Clock::now() + limit;
    while (busy()) {
      Task task;
      if (tryPop(task)) {
        run(task);
        continue;
      }
      if (Clock::now() > deadline)
        return false;
      MITHRIL_SPIN_PAUSE();
    }
    return true;
  }

  TaskPool() {
    // One worker per hardware thread besides the caller's, and at least one.
    unsigned workers = std::max(2u, std::thread::hardware_concurrency()) - 1;
    for (unsigned i = 0; i < workers; ++i)
      std::thread([this] { work(); }).detach();
  }

  bool tryPop(Task &task) {
    if (queued_.load(std::memory_order_acquire) == 0)
      return false;
    std::lock_guard<std::mutex> lock(mutex_);
    if (queue_.empty())
      return false;
    task = queue_.front();
    queue_.pop_front();
    queued_.store(queue_.size(), std::memory_order_release);
    return true;
  }

  void run(const Task &task) {
    ++taskDepth;
    if (task.resume)
      task.resume(task.context);
    else
      task.chunk(task.context, task.index);
    --taskDepth;
    // The caller may return (and its context go) as soon as pending drops.
    if (task.pending)
      task.pending->fetch_sub(1, std::memory_order_release);
    running_.fetch_sub(1, std::memory_order_release);
  }

  [[noreturn]] void work() {
    for (;;) {
      Task task;
      auto until = Clock::now() + kWorkerSpin;
      bool found = false;
      // Spinning yields the core now and then to whatever else is runnable.
      for (unsigned spins = 0; !(found = tryPop(task)) && Clock::now() < until; ++spins) {
        if (spins % 64 == 63)
          std::this_thread::yield();
        else
          MITHRIL_SPIN_PAUSE();
      }
      if (found) {
        run(task);
        continue;
      }
      // Sleep until the next submission. A waiting caller may have run that
      // task itself by the time this thread wakes: it spins again all the
      // same, since more tasks (the next layer's) usually follow.
      std::unique_lock<std::mutex> lock(mutex_);
      uint64_t seen = submissions_;
      ++sleeping_;
      wakeup_.wait(lock, [&] { return submissions_ != seen; });
      --sleeping_;
    }
  }

  std::mutex mutex_;
  std::condition_variable wakeup_;
  std::deque<Task> queue_;
  std::atomic<size_t> queued_{0};
  std::atomic<int64_t> running_{0};
  unsigned sleeping_ = 0;
  uint64_t submissions_ = 0;
};

using AwaitFn = void (*)(void *);
AwaitFn realAwaitAllInGroup = nullptr, realAwaitToken = nullptr;

extern "C" void mithrilPoolExecute(void *handle, TaskPool::Resume resume) {
  TaskPool::get().submit(handle, resume);
}

extern "C" void mithrilPoolAwaitAllInGroup(void *group) {
  // Once the pool is idle every task has completed its token, and the
  // runtime's wait returns without blocking.
  TaskPool::get().helpUntilIdle(kCallerSpin);
  realAwaitAllInGroup(group);
}

extern "C" void mithrilPoolAwaitToken(void *token) {
  TaskPool::get().helpUntilIdle(kCallerSpin);
  realAwaitToken(token);
}
} // namespace

extern "C" void mithrilParallelFor(void (*chunk)(void *, int64_t), void *context, int64_t count) {
  TaskPool::get().parallelFor(chunk, context, count);
}

void mithril::runtime::installTaskPool(llvm::StringMap<void *> &symbols) {
  auto replace = [&](llvm::StringRef name, AwaitFn &real, void *ours) {
    auto it = symbols.find(name);
    if (it == symbols.end() || !it->second)
      return false;
    real = reinterpret_cast<AwaitFn>(it->second);
    it->second = ours;
    return true;
  };
  AwaitFn unused = nullptr;
  // All or nothing: tasks started by the pool must be awaited through it.
  if (!symbols.count("mlirAsyncRuntimeExecute") ||
      !symbols.count("mlirAsyncRuntimeAwaitAllInGroup") ||
      !symbols.count("mlirAsyncRuntimeAwaitToken"))
    return;
  replace("mlirAsyncRuntimeExecute", unused, reinterpret_cast<void *>(&mithrilPoolExecute));
  replace("mlirAsyncRuntimeAwaitAllInGroup", realAwaitAllInGroup,
          reinterpret_cast<void *>(&mithrilPoolAwaitAllInGroup));
  replace("mlirAsyncRuntimeAwaitToken", realAwaitToken,
          reinterpret_cast<void *>(&mithrilPoolAwaitToken));
}

void mithril::runtime::waitForPoolTasks() { TaskPool::get().waitIdle(); }

bool mithril::runtime::runningPoolTask() { return taskDepth != 0; }
