# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""The original's model configuration methods: expose_keys, set_cin,
set_cout, set_shapes, set_differentiability, set_values, rename_key, and
their Connection forms."""

import numpy as np
import pytest

import mithril as ml
from mithril.models import Add, Linear, Model, Relu, Sigmoid


def test_expose_keys_and_rename():
    model = Model()
    model |= Linear(3)(input="input", output="h")
    model |= Relu()(input="h", output="output")
    assert model.output_keys == ["output"]
    model.expose_keys("h")
    assert sorted(model.output_keys) == ["h", "output"]
    model.expose_keys(hidden=model.h)  # a Connection, renamed
    assert sorted(model.output_keys) == ["hidden", "output"]
    model.rename_key("output", "y")
    pm = ml.compile(model, ml.MlirBackend(dtype=ml.float64), shapes={"input": [2, 4]})
    params = pm.randomize_params(seed=0)
    out = pm.evaluate(params, {"input": np.ones((2, 4))})
    np.testing.assert_array_equal(out["y"], np.maximum(out["hidden"], 0))


def test_set_shapes_and_differentiability_and_values():
    model = Model()
    model |= Add()(left="a", right="b", output="c")
    model |= Sigmoid()(input="c", output="output")
    model.set_shapes(a=[2, None], b=["N", 3])
    model.set_differentiability(a=True)
    model.set_values({"b": [[1.0, 2.0, 3.0]]})
    pm = ml.compile(model, ml.MlirBackend(dtype=ml.float64), shapes={"a": [2, 3]})
    assert pm.trainable_keys == ["a"] and pm.input_keys == ["a"]
    a = np.zeros((2, 3))
    out, grads = pm.evaluate({"a": a}, {}, output_gradients={"output": np.ones((2, 3))})
    s = 1 / (1 + np.exp(-np.array([1.0, 2.0, 3.0])))
    np.testing.assert_allclose(out["output"], np.broadcast_to(s, (2, 3)), rtol=1e-12)
    np.testing.assert_allclose(grads["a"], np.broadcast_to(s * (1 - s), (2, 3)), rtol=1e-12)


def test_connection_methods_and_canonical_terminals():
    model = Model()
    lin = Linear(2)
    model |= lin(input="input")
    model |= Relu()(input=lin.output, output="output")
    lin.input.set_shapes([5, 3])
    model.set_cout(lin.output)
    assert model.canonical_output == model._net_of_connection(lin.output).name
    model.set_cin("input")
    pm = ml.compile(model, ml.MlirBackend())
    assert pm.get_shapes()["input"] == [5, 3]


def test_configuration_errors():
    model = Model()
    model |= Relu()(input="x", output="y")
    with pytest.raises(ml.KeyNotFoundError, match="has no connection 'z'"):
        model.expose_keys("z")
    with pytest.raises(ValueError, match="'y' is not an input"):
        model.set_values(y=1.0)
    with pytest.raises(TypeError, match="must be True or False"):
        model.set_differentiability(x=1)
    with pytest.raises(ml.MithrilError, match="not an unvalued input"):
        model.set_cin("y")
