# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""Run under `mpirun -n N` with MITHRIL_MPI_SHARED_SUM=0 (the ranks' sums go
to MPI, as between machines): a data-parallel SGD training step started
its gradients' sums as the backward pass produced them (MPI_Iallreduce) and
handed side-by-side gradients to MPI in buckets (MITHRIL_MPI_BUCKET_BYTES).
Prints the sums MPI got per step and checks the parameters after 3 steps
against one process and across the ranks; exits 1 on a mismatch."""

import os
import sys

import numpy as np

import mithril as ml
from mithril import _mithril
from mithril.models import CrossEntropy, Linear, Mean, Model, Relu, TrainModel


def train_model():
    # Six parameters of 40 B to 240 KB.
    model = Model()
    model |= Linear(300).connect(input="input")
    model += Relu()
    model += Linear(200)
    model += Relu()
    model += Linear(10).connect(output="logits")
    train = TrainModel(model)
    train.add_loss(CrossEntropy(), reduce_steps=[Mean()], input="logits", target="target")
    return train


ranks = int(os.environ.get("OMPI_COMM_WORLD_SIZE") or os.environ.get("PMI_SIZE") or 1)
batch = 8 * ranks
rng = np.random.default_rng(11)
x = rng.standard_normal((batch, 64)).astype(np.float32)
y = rng.integers(0, 10, batch)
shapes = {"input": [batch, 64], "target": [batch]}
one = ml.compile(train_model(), ml.MlirBackend(num_threads=1), shapes=shapes)
dp_backend = ml.MlirBackend(num_threads=1, device_mesh=(ranks,))
dp = ml.compile(train_model(), dp_backend, shapes=shapes)
params = one.randomize_params(seed=2)
p_one = {k: v.copy() for k, v in params.items()}
p_dp = {k: v.copy() for k, v in params.items()}
calls = []
for step in range(3):
    one.train_step(p_one, {"input": x, "target": y}, ml.SGD(lr=0.1))
    before = _mithril.all_reduce_calls()
    dp.train_step(p_dp, {"input": x, "target": y}, ml.SGD(lr=0.1))
    calls.append(_mithril.all_reduce_calls() - before)
failures = []
for k in p_one:
    if not np.allclose(p_dp[k], p_one[k], rtol=1e-5, atol=1e-6):
        failures.append(f"parameter {k}: max |difference| {np.max(np.abs(p_dp[k] - p_one[k]))}")
    every = _mithril.all_gather_bytes(p_dp[k].tobytes(), [p_dp[k].nbytes] * ranks)
    n = p_dp[k].nbytes
    if len({every[r * n:(r + 1) * n] for r in range(ranks)}) != 1:
        failures.append(f"parameter {k}: the ranks' bits differ")
rank = dp_backend.rank
if failures:
    print(f"rank {rank}/{ranks}: " + "; ".join(failures))
    sys.exit(1)
print(f"rank {rank}/{ranks}: {len(params)} parameters, sums per step {calls}, equals one process")
