# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""Run under `mpirun -n RANKS`: a data-parallel run's outputs combined by the
native gather_outputs (DataParallelPlan.combine) against the numpy combine,
bit for bit: rows split unevenly between the ranks, sums and weighted means
of float32, float64, int32 and int64 values whose sums round (or wrap), a 0-d loss, an
output split along axis 1 and a float16 mean (both the numpy path), and the
same bits on every rank. Prints one line per rank."""

import sys

import numpy as np

import mithril as ml
from mithril import _mithril
from mithril.distributed import DataParallelPlan

ranks = int(sys.argv[1])
backend = ml.MlirBackend(device_mesh=(ranks,))
rank = backend.rank
rng = np.random.default_rng(7 + rank)
# Rank r holds r + 2 rows of the split outputs; its weight in a mean is its
# share of the rows.
rows = rank + 2
weight = rows / sum(r + 2 for r in range(ranks))
outputs = {
    "logits": (rng.standard_normal((rows, 5)) * 10.0 ** rank).astype(np.float32),
    "ids": rng.integers(-9, 9, (rows, 2, 3)).astype(np.int64),
    "final_cost": np.array(rng.standard_normal() * 10.0 ** rank, np.float32),
    "mean64": rng.standard_normal((3, 4)) * 10.0 ** rank,
    "count32": rng.integers(-1000, 1000, (7,)).astype(np.int32),
    "sum64": rng.integers(-2 ** 40, 2 ** 40, (2, 2)).astype(np.int64),
    "wrap64": np.full(3, 2 ** 62 + rank, np.int64),  # wraps past 2**63, as numpy's sum
    "kept": np.arange(4.0),
}
kinds = [("logits", "sharded", 0), ("ids", "sharded", 0), ("final_cost", "partial_mean", -1),
         ("mean64", "partial_mean", -1), ("count32", "partial_sum", -1),
         ("sum64", "partial_sum", -1), ("wrap64", "partial_sum", -1),
         ("kept", "replicated", -1)]
plan = DataParallelPlan(backend._ranks, ["input"], kinds)
failures = []


def compare(label, native, numpy_):
    for name in numpy_:
        a, b = native[name], numpy_[name]
        if a.dtype != b.dtype or a.shape != b.shape or not np.array_equal(a, b):
            failures.append(f"{label} {name}: {a.dtype}{list(a.shape)} != "
                            f"{b.dtype}{list(b.shape)}")
        gathered = np.empty((ranks,) + a.shape, a.dtype)
        _mithril.all_gather_into(np.ascontiguousarray(a), gathered)
        if not all(np.array_equal(gathered[0], g) for g in gathered):
            failures.append(f"{label} {name}: ranks disagree")


native = plan.combine(outputs, weight)
compare("native", native, plan._combine_numpy(outputs, weight))
if native["logits"].shape != (sum(r + 2 for r in range(ranks)), 5):
    failures.append(f"logits gathered as {native['logits'].shape}")
if native["kept"] is not outputs["kept"]:
    failures.append("a replicated output was not passed through")

# Split along axis 1 and a float16 mean: the numpy combine, on every rank alike.
plan.outputs["logits"] = ("sharded", 1)
wide = dict(outputs, logits=np.ascontiguousarray(outputs["logits"].T))
compare("axis 1", plan.combine(wide, weight), plan._combine_numpy(wide, weight))
plan.outputs["logits"] = ("sharded", 0)
plan.outputs["final_cost"] = ("partial_mean", -1)
half = dict(outputs, final_cost=outputs["final_cost"].astype(np.float16))
compare("float16", plan.combine(half, weight), plan._combine_numpy(half, weight))

# Errors, the same on every rank: no collective is entered.
for parts, partial, expected in [([np.zeros(3, np.complex64)], ["sum"], TypeError),
                                 ([np.zeros(3)], ["max"], ValueError),
                                 ([np.zeros((4, 4))[:, ::2]], [""], TypeError)]:
    try:
        _mithril.gather_outputs(parts, partial, 1.0)
        failures.append(f"gather_outputs({partial}) raised nothing")
    except expected:
        pass
print(f"rank {rank}/{ranks}: " + ("; ".join(failures) if failures else "combined outputs agree"),
      flush=True)
