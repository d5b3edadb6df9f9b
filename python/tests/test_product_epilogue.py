# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""A product whose only reader is an element-wise op (a weight gradient and
its SGD update, a Linear layer and its bias and ReLU) is tiled together with
that op, block by block (mithril-cpu-schedule's tileWithEpilogue): the
updated weights and the outputs against torch in float64, for sizes that
split the product (784 = 768 + 16 columns; 520 rows, no multiple of AVX2's
6-row tiles), on one and two threads, with the host's kernels and AVX2's."""

import numpy as np
import pytest
import torch

import mithril as ml
from mithril.models import Linear, Model, Relu, Sum

BATCH, INPUTS, HIDDEN, OUTPUTS = 64, 784, 520, 10


def classifier():
    model = Model()
    model |= Linear(HIDDEN)(input="input")
    model += Relu()
    model += Linear(OUTPUTS)(output="output")
    model |= Sum()(input="output", output="final_cost")
    return model


def torch_step(params, x, lr):
    t = {k: torch.tensor(v.astype(np.float64), requires_grad=True) for k, v in params.items()}
    h = torch.relu(torch.tensor(x, dtype=torch.float64) @ t["linear_0.weight"].T
                   + t["linear_0.bias"])
    out = h @ t["linear_1.weight"].T + t["linear_1.bias"]
    out.sum().backward()
    with torch.no_grad():
        return out.numpy(), {k: (v - lr * v.grad).numpy() for k, v in t.items()}


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("target", ["host", "haswell"])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_sgd_update_with_its_weight_gradient(dtype, target, threads):
    options = {} if target == "host" else {"cpu_options": {"target_cpu": target}}
    backend = ml.MlirBackend(dtype=getattr(ml, dtype), num_threads=threads)
    pm = ml.compile(classifier(), backend, shapes={"input": [BATCH, INPUTS]}, **options)
    params = pm.randomize_params(seed=7)
    x = np.random.default_rng(8).standard_normal((BATCH, INPUTS)).astype(dtype)
    want_out, want = torch_step(params, x, 0.1)
    outputs = pm.train_step(params, {"input": x}, ml.SGD(lr=0.1))
    # float32: the products' sums round once per step, over 64 to 784 terms.
    rtol, atol = (1e-12, 1e-12) if dtype == "float64" else (1e-5, 1e-5)
    np.testing.assert_allclose(outputs["final_cost"], want_out.sum(), rtol=rtol)
    for key in want:
        np.testing.assert_allclose(params[key], want[key], rtol=rtol, atol=atol,
                                   err_msg=f"{key} after the step ({dtype}, {target})")
