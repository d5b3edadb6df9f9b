# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""Run under `mpirun -n RANKS`: the runtime's all-reduce (shared-memory sums
between ranks of one machine, MPI_Allreduce otherwise) against the sum in
rank order, for sizes below, at and across its 256 KiB pieces, float32 and
float64; every rank must get the same bits. The shared-memory sum adds in
rank order exactly; MPI_Allreduce (MITHRIL_MPI_SHARED_SUM=0) may add in
another order. Prints one line per rank."""

import os
import sys

import numpy as np

import mithril as ml
from mithril import _mithril

ranks = int(sys.argv[1])
backend = ml.MlirBackend(device_mesh=(ranks,))
rank = backend.rank
exact = os.environ.get("MITHRIL_MPI_SHARED_SUM") != "0"
failures = []
for dtype in (np.float32, np.float64):
    piece = 256 * 1024 // np.dtype(dtype).itemsize
    for count in (1, 7, piece - 1, piece, piece + 1, 3 * piece + 5):
        # Values whose sums round, so that the order of the additions shows.
        every = [np.random.default_rng(100 * r + count).standard_normal(count).astype(dtype)
                 * dtype(10.0) ** (r % 3) for r in range(ranks)]
        expected = every[0].copy()
        for values in every[1:]:
            expected += values
        mine = every[rank].copy()
        _mithril.all_reduce_sum(mine)
        if exact and not np.array_equal(mine, expected) or not np.allclose(
                mine, expected, rtol=0, atol=100 * np.finfo(dtype).eps * np.abs(expected).max()):
            failures.append(f"{np.dtype(dtype).name} x {count}: "
                            f"{int((mine != expected).sum())} elements differ")
        # The same bits on every rank.
        gathered = np.empty((ranks, count), dtype)
        _mithril.all_gather_into(mine, gathered)
        if not all(np.array_equal(gathered[0], g) for g in gathered):
            failures.append(f"{np.dtype(dtype).name} x {count}: ranks disagree")
# The time spent summing is counted (the benchmark's share of a step).
if not _mithril.all_reduce_seconds() > 0:
    failures.append("all_reduce_seconds() counted nothing")
print(f"rank {rank}/{ranks}: " + ("; ".join(failures) if failures else "all-reduce sums agree"),
      flush=True)
