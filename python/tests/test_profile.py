# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""ml.profile(): per-kernel calls and time from timers compiled in only while
profiling, with the same numbers."""

import numpy as np

import mithril as ml
from mithril.models import Linear, Model, Relu, Softmax


def model():
    m = Model()
    m |= Linear(32)(input="input")
    m += Relu()
    m += Linear(10)(output="logits")
    m |= Softmax()(input="logits", output="probs")
    return m


def test_profile_counts_kernels_and_keeps_numbers():
    pm = ml.compile(model(), ml.MlirBackend(dtype=ml.float64), shapes={"input": [16, 8]})
    params = pm.randomize_params(seed=0)
    x = np.random.default_rng(0).standard_normal((16, 8))
    want = pm.evaluate(params, {"input": x})
    with ml.profile() as prof:
        for _ in range(4):
            got = pm.evaluate(params, {"input": x})
    for key in want:
        np.testing.assert_array_equal(got[key], want[key])
    assert prof.records and all(calls == 4 for _, _, calls, _ in prof.records)
    assert all(model_name == pm.entry for model_name, *_ in prof.records)
    names = " ".join(kernel for _, kernel, _, _ in prof.records)
    # Kernels are named by the logical ops they compute.
    assert "linear_0.matrixmultiply_0" in names and "softmax_0" in names
    assert prof.total_seconds > 0
    text = prof.summary()
    assert text.splitlines()[0].split() == ["kernel", "model", "calls", "total", "ms", "share"]
    assert text.endswith(f"{len(prof.records)} kernels, {prof.total_seconds * 1e3:.3f} ms in all")
    # Outside a profile block nothing is counted.
    with ml.profile() as quiet:
        pass
    pm.evaluate(params, {"input": x})
    assert quiet.records == []


def test_gradients_and_training_are_profiled():
    m = model()
    m |= ml.models.Sum()(input="probs", output="final_cost")
    pm = ml.compile(m, ml.MlirBackend(dtype=ml.float64), shapes={"input": [16, 8]})
    params = pm.randomize_params(seed=1)
    x = np.ones((16, 8))
    seed = {"final_cost": np.ones(())}
    _, want = pm.evaluate(params, {"input": x}, output_gradients=seed)
    with ml.profile() as prof:
        _, got = pm.evaluate(params, {"input": x}, output_gradients=seed)
        pm.train_step({k: v.copy() for k, v in params.items()}, {"input": x}, ml.SGD(lr=0.1))
    for key in want:
        np.testing.assert_array_equal(got[key], want[key])
    labels = {name for name, *_ in prof.records}
    assert labels == {f"{pm.entry} gradients", f"{pm.entry} train step"}
