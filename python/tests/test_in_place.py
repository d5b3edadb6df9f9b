# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""In-place activations: `Relu(in_place=True)(input="h", output="h")`."""

import numpy as np
import pytest

import mithril as ml
from mithril.models import Add, Gelu, LeakyRelu, Linear, Model, Relu, Sigmoid, Tanh
from mithril.utils import dict_to_model


def reference(params, x, activation):
    h = activation(x @ params["linear_0.weight"].T + params["linear_0.bias"])
    return h @ params["linear_1.weight"].T + params["linear_1.bias"]


@pytest.mark.parametrize("cls,fn", [
    (Relu, lambda v: np.maximum(v, 0)),
    (Sigmoid, lambda v: 1 / (1 + np.exp(-v))),
    (Tanh, np.tanh),
    (LeakyRelu, lambda v: np.where(v > 0, v, 0.01 * v)),
])
def test_in_place_activation_takes_over_the_name(cls, fn):
    model = Model()
    model |= Linear(6)(input="input", output="hidden")
    model += cls(in_place=True)(input="hidden", output="hidden")
    model += Linear(3)(input="hidden", output="output")
    assert model.input_keys == ["input"] and model.output_keys == ["output"]
    pm = ml.compile(model, ml.MlirBackend(dtype=ml.float64), shapes={"input": [4, 5]})
    params = pm.randomize_params(seed=0)
    x = np.random.default_rng(1).standard_normal((4, 5))
    seed = np.random.default_rng(2).standard_normal((4, 3))
    out, grads = pm.evaluate(params, {"input": x}, output_gradients={"output": seed})
    np.testing.assert_allclose(out["output"], reference(params, x, fn), rtol=1e-12)
    # Gradients as the same model with a fresh name for the activation.
    plain = Model()
    plain |= Linear(6)(input="input", output="hidden")
    plain += cls()(input="hidden", output="act")
    plain += Linear(3)(input="act", output="output")
    other = ml.compile(plain, ml.MlirBackend(dtype=ml.float64), shapes={"input": [4, 5]})
    _, want = other.evaluate(params, {"input": x}, output_gradients={"output": seed})
    for key in want:
        np.testing.assert_allclose(grads[key], want[key], rtol=1e-12)


def test_earlier_consumers_still_read_the_old_value():
    model = Model()
    model |= Linear(4)(input="input", output="hidden")
    model |= Add()(left="hidden", right="hidden", output="doubled")  # before the Relu
    model |= Relu(in_place=True)(input="hidden", output="hidden")
    pm = ml.compile(model, ml.MlirBackend(dtype=ml.float64), shapes={"input": [2, 3]})
    assert sorted(pm.output_keys) == ["doubled", "hidden"]
    params = pm.randomize_params(seed=0)
    x = np.random.default_rng(1).standard_normal((2, 3))
    out = pm.evaluate(params, {"input": x})
    pre = x @ params["linear_0.weight"].T + params["linear_0.bias"]
    np.testing.assert_allclose(out["doubled"], 2 * pre, rtol=1e-12)
    np.testing.assert_allclose(out["hidden"], np.maximum(pre, 0), rtol=1e-12)


def test_in_place_needs_a_computed_value_and_the_flag():
    with pytest.raises(ml.MithrilError, match="not computed in this model"):
        Model().__iadd__(Relu(in_place=True)(input="hidden", output="hidden"))
    model = Model()
    model |= Linear(4)(input="input", output="hidden")
    with pytest.raises(ml.MithrilError, match=r"Relu\(in_place=True\) to make 'hidden'"):
        model |= Relu()(input="hidden", output="hidden")
    with pytest.raises(ml.MithrilError, match="a connection has one producer: use another name$"):
        model |= Add()(left="hidden", right="input", output="hidden")
    # The failed additions left the model as it was.
    assert model.output_keys == ["hidden"] and len(model.submodels) == 1


def test_in_place_from_the_json_form():
    model = dict_to_model({
        "name": "Model",
        "submodels": {"m1": {"name": "Linear", "args": {"dimension": 4}},
                      "m2": {"name": "Gelu", "args": {"in_place": True}}},
        "connections": {"m1": {"input": "input", "output": "hidden"},
                        "m2": {"input": "hidden", "output": "hidden"}}})
    gelu = model.submodels[1][0]
    assert isinstance(gelu, Gelu) and gelu.in_place
    assert model.output_keys == ["hidden"]
