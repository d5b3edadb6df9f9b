/* Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
 * Exceptions. See LICENSE for license information.
 *
 * The round trip of one cache line between two cores, for the benchmarks'
 * quiet-block test at more than one thread. The VMs this project is measured
 * on have periods, seconds to minutes long, in which the host runs the two
 * vCPUs on cores far apart (another die or socket): a round trip takes
 * 460-510 ns instead of 100-115 ns, one thread runs as fast as ever, and
 * every split op pays for its data crossing between the cores (the MLP
 * training step on 2 threads, ours and JAX's alike: 1.7-1.9x slower; one
 * thread: unchanged). A probe of one thread's speed does not see these. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

enum { kRoundTrips = 4000, kBatches = 5 };

struct Link {
  _Alignas(64) atomic_long ping;
  _Alignas(64) atomic_long pong;
  int echo_cpu;
};

static void pin(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

static void *echo(void *arg) {
  struct Link *link = arg;
  pin(link->echo_cpu);
  for (long i = 1; i <= (long)kRoundTrips * kBatches; ++i) {
    while (atomic_load_explicit(&link->ping, memory_order_acquire) != i)
      ;
    atomic_store_explicit(&link->pong, i, memory_order_release);
  }
  return 0;
}

/* Nanoseconds of a round trip between cpu_a (the calling thread, pinned
 * there for the call and then given back its affinity) and cpu_b: the best
 * of a few batches, so that a preempted batch does not count. Negative when
 * a thread cannot be started or pinned. */
double corelink_round_trip_ns(int cpu_a, int cpu_b) {
  static struct Link link;
  cpu_set_t saved;
  if (pthread_getaffinity_np(pthread_self(), sizeof saved, &saved) != 0)
    return -1;
  atomic_store(&link.ping, 0);
  atomic_store(&link.pong, 0);
  link.echo_cpu = cpu_b;
  pthread_t thread;
  if (pthread_create(&thread, 0, echo, &link) != 0)
    return -1;
  pin(cpu_a);
  double best = 1e30;
  long next = 1;
  for (int batch = 0; batch < kBatches; ++batch) {
    double start = now();
    for (int i = 0; i < kRoundTrips; ++i, ++next) {
      atomic_store_explicit(&link.ping, next, memory_order_release);
      while (atomic_load_explicit(&link.pong, memory_order_acquire) != next)
        ;
    }
    double seconds = now() - start;
    if (seconds < best)
      best = seconds;
  }
  pthread_join(thread, 0);
  pthread_setaffinity_np(pthread_self(), sizeof saved, &saved);
  return best / kRoundTrips * 1e9;
}
