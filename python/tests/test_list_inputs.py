# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""List-valued input terminals: the original's Concat(axis) fed a list of
arrays at run time."""

import numpy as np
import pytest
import torch

import mithril as ml
from mithril.models import Concat, Linear, Model, Relu, Tanh

SHAPES = [[2, 3], [1, 3], [4, 3]]


def arrays(shapes, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s) for s in shapes]


def test_bare_concat_takes_a_list_and_returns_its_gradients_as_a_list():
    pm = ml.compile(Concat(axis=0), ml.MlirBackend(dtype=ml.float64), shapes={"input": SHAPES},
                    trainable_keys=["input"])
    assert pm.input_keys == ["input[0]", "input[1]", "input[2]"]
    xs = arrays(SHAPES)
    seed = np.random.default_rng(1).standard_normal((7, 3))
    out, grads = pm.evaluate({"input": xs}, {}, output_gradients={"output": seed})
    np.testing.assert_array_equal(out["output"], np.concatenate(xs))
    assert isinstance(grads["input"], list) and len(grads["input"]) == 3
    for got, want in zip(grads["input"], np.split(seed, [2, 3])):
        np.testing.assert_array_equal(got, want)


def test_a_composite_list_input_compiled_at_the_first_call():
    model = Model()
    model |= Tanh()(input="x", output="t")
    model |= Concat(axis=1)(input="xs", output="joined")
    model |= Linear(2)(input="joined", output="output")
    pm = ml.compile(model, ml.MlirBackend(dtype=ml.float64))  # shapes at the first call
    xs = arrays([[4, 2], [4, 5]])
    x = np.ones((1, 1))
    out = pm({"xs": xs, "x": x})
    params = pm._call_params
    want = np.concatenate(xs, axis=1) @ params["linear_0.weight"].T + params["linear_0.bias"]
    np.testing.assert_allclose(out["output"], want, rtol=1e-12)
    # Another number of arrays is another compilation.
    xs3 = arrays([[4, 2], [4, 1], [4, 4]])
    out3 = pm.evaluate(params, {"xs": xs3, "x": x})
    want3 = np.concatenate(xs3, axis=1) @ params["linear_0.weight"].T + params["linear_0.bias"]
    np.testing.assert_allclose(out3["output"], want3, rtol=1e-12)


def test_a_list_terminal_of_a_nested_model_against_torch():
    inner = Model()
    inner |= Concat(axis=-1)(input="parts", output="joined")
    inner |= Relu()(input="joined", output="output")
    model = Model()
    model |= inner(parts="pieces", output="relu")
    model |= Tanh()(input="relu", output="output")
    pm = ml.compile(model, ml.MlirBackend(dtype=ml.float64),
                    shapes={"pieces": [[3, 2], [3, 4]]}, trainable_keys=["pieces"])
    xs = arrays([[3, 2], [3, 4]], seed=3)
    seed = np.random.default_rng(4).standard_normal((3, 6))
    out, grads = pm.evaluate({"pieces": xs}, {}, output_gradients={"output": seed})
    t = [torch.tensor(x, requires_grad=True) for x in xs]
    y = torch.tanh(torch.relu(torch.cat(t, dim=-1)))
    y.backward(torch.tensor(seed))
    np.testing.assert_allclose(out["output"], y.detach().numpy(), rtol=1e-12)
    for got, want in zip(grads["pieces"], t):
        np.testing.assert_allclose(got, want.grad.numpy(), rtol=1e-12)


def test_save_and_load_keep_the_list(tmp_path):
    pm = ml.compile(Concat(axis=0), ml.MlirBackend(dtype=ml.float64), shapes={"input": SHAPES})
    pm.save(tmp_path / "concat.mithril")
    again = ml.PhysicalModel.load(tmp_path / "concat.mithril", ml.MlirBackend(dtype=ml.float64))
    xs = arrays(SHAPES)
    np.testing.assert_array_equal(again.evaluate({}, {"input": xs})["output"], np.concatenate(xs))


def test_numbered_inputs_still_work():
    model = Model()
    model |= Concat()(input1="a", input2="b", output="output")
    pm = ml.compile(model, ml.MlirBackend(dtype=ml.float64), shapes={"a": [2], "b": [3]})
    out = pm.evaluate({}, {"a": np.ones(2), "b": np.zeros(3)})
    np.testing.assert_array_equal(out["output"], [1, 1, 0, 0, 0])


def test_list_errors():
    pm = ml.compile(Concat(axis=0), ml.MlirBackend(), shapes={"input": SHAPES})
    with pytest.raises(ml.errors.ShapeError, match="a list of 3 tensors .* got 2"):
        pm.evaluate({}, {"input": arrays(SHAPES[:2])})
    with pytest.raises(ml.errors.ShapeError, match="a list of 3 tensors .* got ndarray"):
        pm.evaluate({}, {"input": np.ones((2, 3))})
    with pytest.raises(ml.errors.ShapeError, match="a non-empty list of shapes"):
        ml.compile(Concat(axis=0), ml.MlirBackend(), shapes={"input": [2, 3]})
    model = Model()
    model |= Concat(axis=0)(input="xs", output="c")
    model |= Relu()(input="xs", output="r")  # a tensor terminal on the list
    with pytest.raises(ml.errors.ShapeError, match="takes a tensor, and 'xs' is a list"):
        ml.compile(model, ml.MlirBackend(), shapes={"xs": SHAPES})
    with pytest.raises(TypeError, match="give input= .* or input1="):
        Concat()(input="a", input1="b")
