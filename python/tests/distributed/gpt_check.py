# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""Run under `mpirun -n N`: the GPT example's model (whose attention reads
the batch size from the input's shape) on a device_mesh (argument: N, or DxT
for tensor parallelism, which splits its attention heads and MLP) against
one process, on every rank: loss, gradients and 3 Adam steps, float64.
Exits 1 on a mismatch."""

import os
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
sys.path.insert(0, os.path.join(ROOT, "examples", "gpt"))

import mithril as ml  # noqa: E402
from model import create_gpt, create_gpt_train_model  # noqa: E402

B, T, V = 4, 8, 11
config = dict(bias=True, block_size=T, dims=16, num_heads=2, num_layers=1, vocab_size=V)
ranks = int(os.environ.get("OMPI_COMM_WORLD_SIZE") or os.environ.get("PMI_SIZE") or 1)
shapes = {"input": [B, T], "target": [B * T]}
one = ml.compile(create_gpt_train_model(create_gpt(**config), V),
                 ml.MlirBackend(dtype=ml.float64, num_threads=1), shapes=shapes)
mesh = tuple(int(d) for d in sys.argv[1].split("x")) if len(sys.argv) > 1 else (ranks,)
backend = ml.MlirBackend(dtype=ml.float64, num_threads=1, device_mesh=mesh)
dp = ml.compile(create_gpt_train_model(create_gpt(**config), V), backend, shapes=shapes)

if len(mesh) == 2 and mesh[1] > 1:
    # The attention block's q, k and v projection and the MLP are split.
    split = {t["name"]: t.get("tensor_blocks", 1) for t in dp._inputs if "tensor_split" in t}
    if split.get("transformer.h.0.attn.c_attn.weight") != 3 or \
            "transformer.h.0.mlp.c_fc.weight" not in split:
        failures_early = f"not split as expected: {split}"
        print(failures_early)
        sys.exit(1)

rng = np.random.default_rng(0)
tokens = rng.integers(0, V, (B, T + 1))
data = {"input": tokens[:, :-1], "target": tokens[:, 1:].reshape(-1)}
params = one.randomize_params(seed=1)
failures = []


def check(what, got, want):
    if not np.allclose(got, want, rtol=1e-10, atol=1e-12):
        failures.append(f"{what}: max |difference| {np.max(np.abs(np.asarray(got) - want))}")


want_out, want_grads = one.evaluate(params, data, output_gradients=True)
got_out, got_grads = dp.evaluate(params, data, output_gradients=True)
for k in want_out:
    check(f"output {k}", got_out[k], want_out[k])
for k in want_grads:
    check(f"gradient {k}", got_grads[k], want_grads[k])
p_one = {k: v.copy() for k, v in params.items()}
p_dp = {k: v.copy() for k, v in params.items()}
o_one, o_dp = ml.Adam(lr=1e-2), ml.Adam(lr=1e-2)
for step in range(3):
    check(f"step {step} loss", dp.train_step(p_dp, data, o_dp)["final_cost"],
          one.train_step(p_one, data, o_one)["final_cost"])
for k in p_one:
    check(f"parameter {k} after 3 steps", p_dp[k], p_one[k])
if failures:
    print(f"rank {backend.rank}: FAILED", *failures, sep="\n  ")
    sys.exit(1)
print(f"rank {backend.rank}/{ranks}: GPT on mesh {mesh} equals one process")
