# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""discard_keys: a dropped output takes the inputs only it read with it."""

import numpy as np
import pytest

import mithril as ml
from mithril.models import Add, Linear, Model, Relu, Sigmoid, SquaredError, TrainModel


def two_heads():
    """A Linear head and a parameter-free head on one input."""
    model = Model()
    model |= Linear(3)(input="input", output="output")
    model |= Relu()(input="input", output="activation")
    return model


def test_compiled_model_drops_the_inputs_only_a_discarded_output_read():
    pm = ml.compile(two_heads(), ml.MlirBackend(dtype=ml.float64), shapes={"input": [2, 4]},
                    discard_keys=["output"])
    assert pm.input_keys == ["input"]
    assert pm.output_keys == ["activation"]
    assert sorted(pm.discarded_keys) == ["linear_0.bias", "linear_0.weight", "output"]
    x = np.random.default_rng(0).standard_normal((2, 4))
    np.testing.assert_array_equal(pm.evaluate({}, {"input": x})["activation"], np.maximum(x, 0))
    # Parameters drawn for the whole model may still be passed: not read.
    full = ml.compile(two_heads(), ml.MlirBackend(dtype=ml.float64), shapes={"input": [2, 4]})
    params = full.randomize_params(seed=1)
    out = pm.evaluate(params, {"input": x})
    np.testing.assert_array_equal(out["activation"], np.maximum(x, 0))
    # A key that is neither an input nor discarded is still an error.
    with pytest.raises(ml.errors.KeyNotFoundError, match="unknown input"):
        pm.evaluate({"nonsense": x}, {"input": x})


def test_without_discards_nothing_is_dropped():
    pm = ml.compile(two_heads(), ml.MlirBackend(), shapes={"input": [2, 4]})
    assert pm.discarded_keys == []
    assert sorted(pm.input_keys) == ["input", "linear_0.bias", "linear_0.weight"]


def test_shared_input_survives_when_another_output_reads_it():
    model = Model()
    model |= Sigmoid()(input="a", output="left")
    model |= Add()(left="a", right="b", output="right")
    pm = ml.compile(model, ml.MlirBackend(dtype=ml.float64), shapes={"a": [3], "b": [3]},
                    discard_keys=["right"])
    assert pm.input_keys == ["a"]
    assert sorted(pm.discarded_keys) == ["b", "right"]


def test_deferred_model_knows_its_outputs_and_discards_before_the_first_call():
    model = Model()
    model |= Sigmoid()(input="a", output="left")
    model |= Add()(left="a", right="b", output="right")
    pm = ml.compile(model, ml.MlirBackend(dtype=ml.float64), discard_keys=["right"])
    assert pm.output_keys == ["left"]
    assert sorted(pm.discarded_keys) == ["b", "right"]
    a = np.array([0.0, 1.0, -2.0])
    # The first call's arrays give the shapes the model is compiled for,
    # b's too (the graph is typed before the discarded part goes).
    out = pm.evaluate({}, {"a": a, "b": a})
    np.testing.assert_allclose(out["left"], 1 / (1 + np.exp(-a)))
    assert sorted(pm.discarded_keys) == ["b", "right"]  # now the compiled model's


def test_discarding_a_train_models_output_keeps_its_loss():
    train = TrainModel(Linear(1))
    train.add_loss(SquaredError(), input="output", target="target")
    pm = ml.compile(train, ml.MlirBackend(dtype=ml.float64), shapes={"input": [4, 2], "target": [4, 1]},
                    discard_keys=["output"])
    assert pm.output_keys == ["final_cost"]
    assert "output" in pm.discarded_keys and "weight" not in pm.discarded_keys
    rng = np.random.default_rng(2)
    params = pm.randomize_params(seed=0)
    x, t = rng.standard_normal((4, 2)), rng.standard_normal((4, 1))
    out, grads = pm.evaluate(params, {"input": x, "target": t}, output_gradients=True)
    y = x @ params["weight"].T + params["bias"]
    np.testing.assert_allclose(out["final_cost"], np.mean((y - t) ** 2))
    np.testing.assert_allclose(grads["weight"], 2 * ((y - t).T @ x) / 4)
