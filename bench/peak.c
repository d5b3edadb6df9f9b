/* Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
 * Exceptions. See LICENSE for license information.
 *
 * The machine's measured FMA peak, for bench.py's "% of peak" column: 12
 * independent vector accumulators (enough to hide the FMA latency on two
 * pipes, and with the two operands within AVX2's 16 registers: 16 spilled
 * there) updated by fused multiply-adds, compiled with -march=native. */
#include <stdint.h>

/* The register width: 64 (AVX-512), or 32 for bench.py --max-isa avx2. */
#ifndef VECTOR_BYTES
#define VECTOR_BYTES 64
#endif

#define STEP(a) a = a * x + y;
#define STEP12                                                                 \
  STEP(a0) STEP(a1) STEP(a2) STEP(a3) STEP(a4) STEP(a5) STEP(a6) STEP(a7)      \
  STEP(a8) STEP(a9) STEP(a10) STEP(a11)

#define PEAK_LOOP(NAME, T)                                                     \
  double NAME(int64_t iterations) {                                            \
    typedef T vec __attribute__((vector_size(VECTOR_BYTES)));                  \
    vec x = (vec){0} + (T)1.0000001, y = (vec){0} + (T)0.9999999;              \
    /* Distinct starting values: equal accumulators would be merged. */       \
    vec a0 = x + 0, a1 = x + 1, a2 = x + 2, a3 = x + 3, a4 = x + 4;            \
    vec a5 = x + 5, a6 = x + 6, a7 = x + 7, a8 = x + 8, a9 = x + 9;            \
    vec a10 = x + 10, a11 = x + 11;                                            \
    for (int64_t n = 0; n < iterations; ++n) {                                 \
      STEP12                                                                   \
      __asm__ volatile("" : "+v"(x));                                          \
    }                                                                          \
    vec sum = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7 + a8 + a9 + a10 + a11;     \
    return (double)sum[0];                                                     \
  }

PEAK_LOOP(peak_f32, float)
PEAK_LOOP(peak_f64, double)
