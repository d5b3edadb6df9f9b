# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""Names the model gives unbound inputs, and the user's names."""

import numpy as np

import mithril as ml
from mithril.models import Add, Model, Multiply, Relu, Sigmoid


def test_an_unbound_input_can_be_named_while_it_is_an_input():
    # The guide's residual block: Add's `left` is the first layer's input.
    model = Model()
    model |= Relu()(output="r")
    model |= Add()(left="input", right="r", output="output")
    assert model.input_keys == ["input"]


def test_once_joined_to_an_output_the_name_is_a_new_input():
    # The original's "extend from inputs": Add comes first, unconnected; a
    # Multiply then feeds both of its inputs, and "left" names a new input.
    model = Model()
    model |= Add()(output=ml.IOKey("output", expose=True))
    add = model.submodels[0][0]
    model |= Multiply()(left="x", right="y", output=ml.IOKey(connections=[add.left, add.right]))
    model |= Sigmoid()(input="left", output="s")
    assert sorted(model.input_keys) == ["left", "x", "y"]
    pm = ml.compile(model, ml.MlirBackend(dtype=ml.float64),
                    shapes={"x": [2], "y": [2], "left": [2]})
    x, y, left = np.array([1.0, 2.0]), np.array([3.0, -1.0]), np.array([0.5, -0.5])
    out = pm.evaluate({}, {"x": x, "y": y, "left": left})
    np.testing.assert_allclose(out["output"], 2 * x * y)
    np.testing.assert_allclose(out["s"], 1 / (1 + np.exp(-left)))


def test_a_model_feeding_the_input_it_names_gets_a_new_input():
    # Relu's output joins the unbound input of the Sigmoid added first; its
    # own input "input" cannot be that same connection (a cycle): it is new.
    model = Model()
    model |= Sigmoid()(output="output")
    sigmoid = model.submodels[0][0]
    model |= Relu()(input="input", output=ml.IOKey(connections=[sigmoid.input]))
    assert model.input_keys == ["input"]
    pm = ml.compile(model, ml.MlirBackend(dtype=ml.float64), shapes={"input": [3]})
    x = np.array([-1.0, 0.5, 2.0])
    np.testing.assert_allclose(pm.evaluate({}, {"input": x})["output"],
                               1 / (1 + np.exp(-np.maximum(x, 0))))
