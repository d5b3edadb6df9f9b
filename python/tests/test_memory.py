# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""Memory controls (docs/compilation.md, "Memory"): memory planning frees
each temporary at its last use, gradient checkpointing recomputes forward
values instead of keeping them. Both lower the peak of the temporaries that
ml.max_memory_allocated() reports, and neither changes a number."""

import numpy as np
import pytest
import torch

import mithril as ml
from mithril.models import LayerNorm, Linear, Model, Relu, Sigmoid, Softmax, Tanh

DEPTH, WIDTH, BATCH = 6, 64, 32


def deep_mlp(depth=DEPTH, width=WIDTH):
    model = Model()
    model |= Linear(width)(input="input")
    for i in range(depth - 1):
        model += (Tanh() if i % 2 else Relu())()
        model += Linear(width)()
    model += Sigmoid()(output="output")
    return model


def torch_mlp(params, x, depth=DEPTH):
    h = torch.tensor(x)
    t = {k: torch.tensor(v, requires_grad=True) for k, v in params.items()}
    for i in range(depth):
        h = h @ t[f"linear_{i}.weight"].T + t[f"linear_{i}.bias"]
        if i < depth - 1:
            h = torch.tanh(h) if i % 2 else torch.relu(h)
    out = torch.sigmoid(h)
    out.sum().backward()
    return out.detach().numpy(), {k: v.grad.numpy() for k, v in t.items()}


def run(pm, params, x, dtype):
    """Outputs and gradients of a call, and the peak bytes of its temporaries."""
    pm.evaluate(params, {"input": x}, output_gradients={"output": np.ones((BATCH, WIDTH), dtype)})
    ml.reset_peak_memory_stats()
    out, grads = pm.evaluate(params, {"input": x},
                             output_gradients={"output": np.ones((BATCH, WIDTH), dtype)})
    return out["output"], grads, ml.max_memory_allocated()


_compiled = {}


def compiled(controls):
    """The deep MLP compiled with `controls`, once per module."""
    key = repr(sorted(controls.items()))
    if key not in _compiled:
        _compiled[key] = ml.compile(deep_mlp(), ml.MlirBackend(dtype=ml.float64),
                                    shapes={"input": [BATCH, WIDTH]}, **controls)
    return _compiled[key]


@pytest.fixture(scope="module")
def setup():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((BATCH, WIDTH))
    pm = ml.compile(deep_mlp(), ml.MlirBackend(dtype=ml.float64), shapes={"input": [BATCH, WIDTH]})
    params = {k: v * 0.5 for k, v in pm.randomize_params(seed=1).items()}
    return x, params


@pytest.mark.parametrize("controls", [
    {"memory_planning": False},
    {},
    {"memory_planning": "greedy"},
    {"gradient_checkpointing": True},
    {"gradient_checkpointing": True, "checkpoint_segments": 2},
    {"gradient_checkpointing": True, "checkpoint_segments": 100},  # one op per run
    {"memory_optimization": True},
    {"optimizations": {"memory_planning": False}, "gradient_checkpointing": True},
])
def test_same_numbers_as_torch(setup, controls):
    x, params = setup
    out, grads, _ = run(compiled(controls), params, x, np.float64)
    want_out, want_grads = torch_mlp(params, x)
    np.testing.assert_allclose(out, want_out, rtol=1e-12, atol=1e-14)
    assert sorted(grads) == sorted(want_grads)
    for key in want_grads:
        np.testing.assert_allclose(grads[key], want_grads[key], rtol=1e-10, atol=1e-13,
                                   err_msg=key)


def test_each_control_lowers_the_peak(setup):
    x, params = setup
    peaks = {}
    for name, controls in {"kept": {"memory_planning": False}, "planned": {},
                           "checkpointed": {"gradient_checkpointing": True},
                           "optimized": {"memory_optimization": True}}.items():
        peaks[name] = run(compiled(controls), params, x, np.float64)[2]
    activation = BATCH * WIDTH * 8
    # Without planning every temporary lives to the end of the call; with it
    # only what the backward pass needs; with checkpointing only the values
    # at the runs' boundaries and one run's.
    assert peaks["planned"] < peaks["kept"], peaks
    assert peaks["checkpointed"] < peaks["planned"] - 2 * activation, peaks
    assert peaks["optimized"] == peaks["checkpointed"], peaks
    assert ml.memory_allocated() == 0  # nothing held between calls


def test_checkpointed_gradients_of_layer_norm_and_softmax():
    """Ops whose gradients need their forward values (layer norm, tanh,
    softmax) spread over three runs: the same gradients as without
    checkpointing, which the other tests check against torch."""
    model = Model()
    model |= Linear(16)(input="input")
    model += LayerNorm()
    model += Tanh()
    model += Linear(16)
    model += Relu()
    model += Linear(3)
    model += Softmax()(output="output")
    rng = np.random.default_rng(3)
    x = rng.standard_normal((8, 5))
    seed = rng.standard_normal((8, 3))
    results = []
    for controls in ({}, {"gradient_checkpointing": True, "checkpoint_segments": 3}):
        pm = ml.compile(model, ml.MlirBackend(dtype=ml.float64), shapes={"input": [8, 5]},
                        **controls)
        results.append(pm.evaluate(pm.randomize_params(seed=4), {"input": x},
                                   output_gradients={"output": seed}))
    (want_out, want), (out, grads) = results
    # Equal up to rounding: the segments are compiled apart, so ops fused
    # across a segment's boundary without checkpointing are not fused with
    # it, and where the code contracts or orders the sums differently the
    # float64 output differs in its last bit (AVX2 code on a Zen 3: 4 of 24
    # elements, 1.1e-16).
    np.testing.assert_allclose(out["output"], want_out["output"], rtol=1e-14, atol=1e-15)
    assert sorted(grads) == sorted(want)
    for key in want:
        np.testing.assert_allclose(grads[key], want[key], rtol=1e-12, atol=1e-14, err_msg=key)


def test_logical_model_compile_with_memory_optimization(setup):
    x, params = setup
    pm = deep_mlp().compile(ml.MlirBackend(dtype=ml.float64), memory_optimization=True,
                            shapes={"input": [BATCH, WIDTH]})
    out, grads, _ = run(pm, params, x, np.float64)
    want_out, want_grads = torch_mlp(params, x)
    np.testing.assert_allclose(out, want_out, rtol=1e-12)
    np.testing.assert_allclose(grads["linear_0.weight"], want_grads["linear_0.weight"],
                               rtol=1e-10, atol=1e-13)


@pytest.mark.parametrize("controls, error, message", [
    ({"checkpoint_segments": 4}, ValueError, "needs gradient_checkpointing=True"),
    ({"gradient_checkpointing": True, "checkpoint_segments": 0}, ValueError,
     "checkpoint_segments must be a positive int"),
    ({"gradient_checkpointing": "yes"}, TypeError, "gradient_checkpointing must be True or False"),
    ({"memory_planning": "linear-scan"}, ValueError, "unknown memory_planning 'linear-scan'"),
    ({"memory_optimization": 1}, TypeError, "memory_optimization must be True or False"),
])
def test_bad_controls_are_errors(controls, error, message):
    with pytest.raises(error, match=message):
        ml.compile(deep_mlp(2, 4), ml.MlirBackend(), shapes={"input": [2, 4]}, **controls)


def test_trainer_keeps_the_memory_controls():
    x = np.random.default_rng(0).standard_normal((16, 4)).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.int64)
    model = Model()
    model |= Linear(8)(input="input")
    model += Relu()
    model += Linear(2)
    finals = []
    for controls in ({}, {"gradient_checkpointing": True, "checkpoint_segments": 2}):
        pm = ml.compile(model, ml.MlirBackend(dtype=ml.float64), shapes={"input": [16, 4]},
                        **controls)
        trainer = ml.Trainer(model=pm, optimizer=ml.Adam(learning_rate=0.01),
                             loss=ml.CrossEntropyLoss(), params=pm.randomize_params(seed=2))
        assert trainer.physical.compile_args.get("checkpoint_segments") == \
            controls.get("checkpoint_segments")
        trainer.train([(x.astype(np.float64), y)], epochs=3)
        finals.append(trainer.params)
    for key in finals[0]:
        np.testing.assert_allclose(finals[1][key], finals[0][key], rtol=1e-12, atol=1e-14)
