# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""The digits MLP trained on a device_mesh: the same script in one process or
under MPI, only the backend line knows.

    python3 examples/data_parallel.py                 # one process
    mpirun -n 2 python3 examples/data_parallel.py     # 2-way data parallelism
    mpirun -n 2 python3 examples/data_parallel.py 1x2 # tensor parallelism

(As root, add --allow-run-as-root to mpirun.) Every rank reads the same
batches; each computes on its share and the compiled steps sum the
gradients, so the printed losses are the one-process ones. Rank 0 prints."""

import os
import sys

import numpy as np
from sklearn.datasets import load_digits

import mithril as ml
from mithril.models import CrossEntropy, Linear, Mean, Model, Relu, TrainModel

ranks = int(os.environ.get("OMPI_COMM_WORLD_SIZE") or os.environ.get("PMI_SIZE") or 1)
mesh = tuple(int(d) for d in sys.argv[1].split("x")) if len(sys.argv) > 1 else (ranks,)
backend = ml.MlirBackend(dtype=ml.float32, num_threads=1, device_mesh=mesh)

digits = load_digits()
x = (digits.data / 16.0).astype(np.float32)
y = digits.target.astype(np.int64)


def mlp():
    model = Model()
    model |= Linear(128).connect(input="input")
    model += Relu()
    model += Linear(64)
    model += Relu()
    model += Linear(10).connect(output="logits")
    return model


batch = 64
train = TrainModel(mlp())
train.add_loss(CrossEntropy(), reduce_steps=[Mean()], input="logits", target="target")
pm = ml.compile(train, backend, shapes={"input": [batch, 64], "target": [batch]})
params = pm.randomize_params(seed=0)
optimizer = ml.Adam(lr=2e-3)
rng = np.random.default_rng(1)
for epoch in range(1, 6):
    order = rng.permutation(len(x))
    losses = []
    for i in range(0, len(order) - batch + 1, batch):
        idx = order[i:i + batch]
        out = pm.train_step(params, {"input": x[idx], "target": y[idx]}, optimizer)
        losses.append(float(out["final_cost"]))
    accuracy = float((out["logits"].argmax(1) == y[idx]).mean())
    if backend.rank == 0:
        print(f"mesh {mesh}: epoch {epoch} loss {np.mean(losses):.4f} "
              f"(last batch accuracy {accuracy:.0%})")
