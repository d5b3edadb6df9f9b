# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""Run under `mpirun -n N`: a parallel run (device_mesh=(N,), or (D, T) with
D*T = N) against the same model in one process (no mesh), on every rank.
Checks outputs, seeded gradients and 5 SGD-with-momentum / Adam training
steps; exits 1 on a mismatch, printing it.
Usage: dp_check.py float64|float32 [batch] [mesh: N or DxT].
DP_CHECK_COMPILE: JSON of ml.compile keywords for every model (optimizations
off, a target CPU), the same for the parallel run and the reference."""

import json
import os
import sys

import numpy as np

import mithril as ml
from mithril import _mithril
from mithril.models import CrossEntropy, Linear, Mean, Model, Relu, Sigmoid, Tanh, TrainModel

dtype_name = sys.argv[1] if len(sys.argv) > 1 else "float64"
batch = int(sys.argv[2]) if len(sys.argv) > 2 else 12
mesh_arg = sys.argv[3] if len(sys.argv) > 3 else None
dtype = {"float64": ml.float64, "float32": ml.float32}[dtype_name]
rtol = 1e-10 if dtype_name == "float64" else 1e-5
atol = 1e-12 if dtype_name == "float64" else 1e-6


def mlp():
    # With tensor parallelism, two Linear pairs: the second's input carries
    # gradients, which its replicate sums over the tensor group.
    model = Model()
    model |= Linear(16).connect(input="input")
    model += Relu()
    model += Linear(8)
    model += Sigmoid()
    model += Linear(12)
    model += Tanh()
    model += Linear(5).connect(output="logits")
    return model


def train_model():
    train = TrainModel(mlp())
    train.add_loss(CrossEntropy(), reduce_steps=[Mean()], input="logits", target="target")
    return train


rng = np.random.default_rng(7)
x = rng.standard_normal((batch, 6)).astype(dtype)
y = rng.integers(0, 5, batch)
failures = []


def check(what, got, want):
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape or not np.allclose(got, want, rtol=rtol, atol=atol):
        err = np.max(np.abs(got - want)) if got.shape == want.shape else "shape"
        failures.append(f"{what}: max |difference| {err} (shapes {got.shape} {want.shape})")


one = ml.MlirBackend(dtype=dtype, num_threads=1)
ranks = int(os.environ.get("OMPI_COMM_WORLD_SIZE") or os.environ.get("PMI_SIZE") or 1)
mesh = tuple(int(d) for d in mesh_arg.split("x")) if mesh_arg else (ranks,)
dp_backend = ml.MlirBackend(dtype=dtype, num_threads=1, device_mesh=mesh)
assert dp_backend.world_size == ranks

compile_kw = json.loads(os.environ.get("DP_CHECK_COMPILE") or "{}")
shapes = {"input": [batch, 6], "target": [batch]}
ref = ml.compile(train_model(), one, shapes=shapes, **compile_kw)
dp = ml.compile(train_model(), dp_backend, shapes=shapes, **compile_kw)
params = ref.randomize_params(seed=3)
data = {"input": x, "target": y}

# Outputs, and gradients seeded at the loss (unit) and at the logits.
want = ref.evaluate(params, data)
got = dp.evaluate(params, data)
for k in want:
    check(f"output {k}", got[k], want[k])
want_out, want_grads = ref.evaluate(params, data, output_gradients=True)
got_out, got_grads = dp.evaluate(params, data, output_gradients=True)
for k in want_grads:
    check(f"gradient {k} (output_gradients=True)", got_grads[k], want_grads[k])
seed = rng.standard_normal((batch, 5)).astype(dtype)
_, want_grads = ref.evaluate(params, data, output_gradients={"logits": seed, "final_cost": 0.5})
_, got_grads = dp.evaluate(params, data, output_gradients={"logits": seed, "final_cost": 0.5})
for k in want_grads:
    check(f"gradient {k} (seeded logits and loss)", got_grads[k], want_grads[k])

# Training: the parameters stay equal to one process's, on every rank.
for make in (lambda: ml.SGD(lr=0.1, momentum=0.9), lambda: ml.Adam(lr=0.01)):
    p_ref = {k: v.copy() for k, v in params.items()}
    p_dp = {k: v.copy() for k, v in params.items()}
    o_ref, o_dp = make(), make()
    for step in range(5):
        i = rng.permutation(batch)
        step_data = {"input": x[i], "target": y[i]}
        l_ref = ref.train_step(p_ref, step_data, o_ref)["final_cost"]
        l_dp = dp.train_step(p_dp, step_data, o_dp)["final_cost"]
        check(f"{type(o_ref).__name__} step {step} loss", l_dp, l_ref)
    for k in p_ref:
        check(f"{type(o_ref).__name__} parameter {k} after 5 steps", p_dp[k], p_ref[k])
        # Every rank holds the same bits (each adds the ranks' gradients in
        # rank order), not merely values close to one process's.
        every = _mithril.all_gather_bytes(p_dp[k].tobytes(), [p_dp[k].nbytes] * ranks)
        if len(set(every[r * p_dp[k].nbytes:(r + 1) * p_dp[k].nbytes]
                   for r in range(ranks))) != 1:
            failures.append(f"{type(o_ref).__name__} parameter {k}: the ranks' bits differ")

# Inference models split their batch too.
infer_ref = ml.compile(mlp(), one, shapes={"input": [batch, 6]}, inference=True, **compile_kw)
infer_dp = ml.compile(mlp(), dp_backend, shapes={"input": [batch, 6]}, inference=True,
                      **compile_kw)
p = infer_ref.randomize_params(seed=5)
check("inference logits", infer_dp.evaluate(p, {"input": x})["logits"],
      infer_ref.evaluate(p, {"input": x})["logits"])

# A batch other than the one compiled in is a clear error on every rank.
try:
    dp.evaluate(params, {"input": x[:batch - 2], "target": y[:batch - 2]})
    failures.append("a batch of another size was accepted")
except ml.ShapeError as e:
    if f"compiled for a batch of {batch}" not in str(e):
        failures.append(f"unclear batch error: {e}")

# ml.Trainer: the same history and parameters as in one process.
loader = [(x[i:i + 4], y[i:i + 4]) for i in range(0, batch - 3, 4)]
histories, trained = [], []
for backend in (one, dp_backend):
    trainer = ml.Trainer(mlp(), optimizer=ml.Adam(lr=0.01), loss=ml.CrossEntropyLoss(),
                         backend=backend, params=params, input_key="input", progress=False)
    histories.append(trainer.train(loader, epochs=2))
    trained.append(trainer.params)
for e, (h_ref, h_dp) in enumerate(zip(*histories)):
    check(f"Trainer epoch {e} loss", h_dp["loss"], h_ref["loss"])
for k in trained[0]:
    check(f"Trainer parameter {k}", trained[1][k], trained[0][k])

# Each rank passing its own rows (local_shards=True): its rows of the
# logits, the global loss and gradients.
local_backend = ml.MlirBackend(dtype=dtype, num_threads=1, device_mesh=mesh, local_shards=True)
local_pm = ml.compile(train_model(), local_backend, shapes=shapes, **compile_kw)
data_rank, data_size = local_backend._ranks.rank, local_backend._ranks.size
rows = np.array_split(np.arange(batch), data_size)[data_rank]
mine = {"input": x[rows], "target": y[rows]}
want_out, want_grads = ref.evaluate(params, data, output_gradients=True)
got_out, got_grads = local_pm.evaluate(params, mine, output_gradients=True)
check("local_shards logits", got_out["logits"], want_out["logits"][rows])
check("local_shards loss", got_out["final_cost"], want_out["final_cost"])
for k in want_grads:
    check(f"local_shards gradient {k}", got_grads[k], want_grads[k])

# save writes one file, from rank 0, that one process loads and runs.
import tempfile  # noqa: E402
path = os.path.join(tempfile.gettempdir(), f"dp_check_{os.getppid()}.mithril")
infer_dp.save(path, p)
_mithril.all_reduce_sum(np.zeros(1), "world")  # every rank waits for rank 0's file
loaded = ml.PhysicalModel.load(path, one)
check("saved and loaded logits", loaded(x), infer_ref.evaluate(p, {"input": x})["logits"])
_mithril.all_reduce_sum(np.zeros(1), "world")
if dp_backend.rank == 0:
    os.remove(path)

rank = dp_backend.rank
if failures:
    print(f"rank {rank}/{ranks}: FAILED", *failures, sep="\n  ")
    sys.exit(1)
print(f"rank {rank}/{ranks}: mesh {mesh} {dtype_name} batch {batch} equals one process")
