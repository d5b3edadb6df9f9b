# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""connect() with positional arguments, in the original's per-class order
(a primitive's inputs then its outputs; Linear's input, weight, output), as
the original's examples write it."""

import numpy as np
import pytest

import mithril as ml
from mithril.models import Add, Concat, Linear, MLP, Model, Relu, Where


def test_positional_connect_binds_in_the_originals_order():
    model = Model()
    model |= Linear(3).connect("input", output="x")
    model |= Relu().connect("x", "r")
    model |= Add().connect("r", "b", "c")
    model |= Concat(axis=1).connect(["c", "x"], "output")
    pm = ml.compile(model, ml.MlirBackend(dtype=ml.float64), shapes={"input": [2, 4], "b": [2, 3]})
    params = pm.randomize_params(seed=0)
    x, b = np.ones((2, 4)), np.full((2, 3), 2.0)
    lin = x @ params["linear_0.weight"].T + params["linear_0.bias"]
    want = np.concatenate([np.maximum(lin, 0) + b, lin], axis=1)
    np.testing.assert_allclose(pm.evaluate(params, {"input": x, "b": b})["output"], want,
                               rtol=1e-12)


def test_where_takes_cond_then_both_inputs():
    model = Model()
    model |= Where().connect("cond", "a", "b", "output")
    pm = ml.compile(model, ml.MlirBackend(dtype=ml.float64),
                    shapes={"cond": [3], "a": [3], "b": [3]})
    out = pm.evaluate({}, {"cond": np.array([True, False, True]), "a": np.ones(3),
                           "b": np.zeros(3)})["output"]
    np.testing.assert_array_equal(out, [1.0, 0.0, 1.0])


def test_positional_connect_errors():
    with pytest.raises(TypeError, match=r"Linear.connect\(\) takes at most 3 positional"):
        Linear(3).connect("a", "b", "c", "d")
    with pytest.raises(TypeError, match="MLP.connect\\(\\) takes keyword arguments only"):
        MLP(["relu"], [2]).connect("a")
    with pytest.raises(TypeError, match="got multiple values for terminal 'left'"):
        Add().connect("a", left="b")
