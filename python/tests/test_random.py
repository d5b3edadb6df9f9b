# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""Randn: standard normal samples drawn inside the compiled model from an
int64 key (mithril.random_normal), the same for the same key on every
backend precision, and a new key for the next draw."""

import math

import numpy as np
import pytest

import mithril as ml
from mithril.errors import MithrilError
from mithril.models import Add, Model, PrimitiveRandInt, PrimitiveRandn, Randn, RandInt


def draw(shape, dtype=ml.float32, key=None):
    """Samples of `key` (the state key from 42 when None), and the next key."""
    model = Model()
    model |= Randn(shape=shape, key=key)(output="output", new_key="new_key")
    pm = ml.compile(model, ml.MlirBackend(dtype=dtype), inference=True)
    if key is None:
        out, state = pm.evaluate({}, {}, state=pm.initial_state_dict)
        return out["output"], state["key"]
    out = pm.evaluate({}, {})
    return out["output"], out["new_key"]


def test_samples_are_standard_normal():
    z, new_key = draw((400, 500))
    assert z.dtype == np.float32 and z.shape == (400, 500)
    assert int(new_key) == 43  # the default key, 42, plus one
    n = z.size
    # Moments within 6 standard errors of N(0, 1)'s.
    assert abs(z.mean()) < 6 / math.sqrt(n)
    assert abs(z.var() - 1) < 6 * math.sqrt(2 / n)
    assert abs((z ** 3).mean()) < 6 * math.sqrt(15 / n)
    # The distribution: the share below each of a few quantiles.
    for q, p in [(-1.959964, 0.025), (-1.0, 0.158655), (0.0, 0.5), (1.0, 0.841345)]:
        assert abs((z < q).mean() - p) < 6 * math.sqrt(p * (1 - p) / n), q
    # Neighbours (in rows and across them) are uncorrelated.
    flat = z.reshape(-1).astype(np.float64)
    assert abs(np.corrcoef(flat[:-1], flat[1:])[0, 1]) < 6 / math.sqrt(n)
    assert abs(np.corrcoef(z[:-1].reshape(-1), z[1:].reshape(-1))[0, 1]) < 6 / math.sqrt(n)


def test_the_key_decides_the_samples():
    a, _ = draw((64, 64), key=7)
    b, _ = draw((64, 64), key=7)
    c, _ = draw((64, 64), key=8)
    np.testing.assert_array_equal(a, b)
    assert abs(np.corrcoef(a.reshape(-1), c.reshape(-1))[0, 1]) < 6 / 64
    # float64 draws the same samples, rounded once to float32 here.
    d, _ = draw((64, 64), dtype=ml.float64, key=7)
    assert d.dtype == np.float64
    np.testing.assert_allclose(a, d, rtol=2e-7, atol=1e-7)


def test_a_connected_key_and_a_shape_read_from_another_terminal():
    model = Model()
    model |= Randn()(shape=ml.IOKey("x").shape, key="seed", output="noise", new_key="next")
    model |= Add()(left="x", right="noise", output="output")
    pm = ml.compile(model, ml.MlirBackend(dtype=ml.float64), shapes={"x": [3, 4]},
                    inference=True)
    assert sorted(pm.input_keys) == ["seed", "x"]
    x = np.ones((3, 4))
    first = pm.evaluate({}, {"x": x, "seed": np.array(5)})
    again = pm.evaluate({}, {"x": x, "seed": np.array(5)})
    second = pm.evaluate({}, {"x": x, "seed": first["next"]})
    np.testing.assert_array_equal(first["output"], again["output"])
    assert int(first["next"]) == 6
    # The noise (read by Add, so internal) is the samples of the key given.
    np.testing.assert_allclose(second["output"] - x, draw((3, 4), ml.float64, key=6)[0],
                               rtol=0, atol=1e-15)
    np.testing.assert_allclose(first["output"] - x, draw((3, 4), ml.float64, key=5)[0],
                               rtol=0, atol=1e-15)


def test_samples_have_no_gradient():
    model = Model()
    model |= Randn(shape=(2, 3))(output="noise")
    model |= Add()(left=ml.IOKey("w", differentiable=True, shape=[2, 3]), right="noise",
                   output="output")
    pm = ml.compile(model, ml.MlirBackend(dtype=ml.float64))
    w = np.zeros((2, 3))
    out, grads = pm.evaluate({"w": w}, {}, output_gradients={"output": np.ones((2, 3))})
    np.testing.assert_array_equal(grads["w"], np.ones((2, 3)))
    np.testing.assert_array_equal(out["output"], draw((2, 3), ml.float64)[0])


def test_bad_arguments_are_errors():
    with pytest.raises(MithrilError, match="Randn: key must be an int"):
        Randn(shape=(2,), key=1.5)
    with pytest.raises(ValueError, match="Randn's dtype must be"):
        Randn(shape=(2,), dtype=ml.int32)
    with pytest.raises(MithrilError, match="RandInt: low must be an int"):
        RandInt(shape=(2,), low=0.5, high=3)
    model = Model()
    model |= RandInt(shape=(2,), low=3, high=3)(output="output")
    with pytest.raises(MithrilError, match="RandInt needs low < high, got low=3, high=3"):
        ml.compile(model, ml.MlirBackend(), inference=True)
    model = Model()
    model |= Randn()(shape=ml.IOKey("x").shape, output="output")
    with pytest.raises(MithrilError, match="must be known at compile time"):
        pm = ml.compile(model, ml.MlirBackend(), shapes={"x": [None, 3]}, inference=True)
        pm.evaluate({}, {"x": np.ones((2, 3), np.float32)})


def test_randint_is_uniform_over_low_to_high():
    model = Model()
    model |= RandInt(shape=(700, 100), low=-3, high=4)(output="output", new_key="new_key")
    pm = ml.compile(model, ml.MlirBackend(), inference=True)
    out, state = pm.evaluate({}, {}, state=pm.initial_state_dict)
    r = out["output"]
    assert r.dtype == np.int32 and r.shape == (700, 100)  # float32 backend: int32
    assert r.min() == -3 and r.max() == 3 and int(state["key"]) == 43
    share = np.bincount(r.reshape(-1) + 3, minlength=7) / r.size
    np.testing.assert_allclose(share, 1 / 7, atol=6 * math.sqrt((1 / 7) * (6 / 7) / r.size))


def test_randint_bounds_and_key_as_inputs_and_the_primitive_names():
    model = Model()
    model |= PrimitiveRandInt(shape=(4, 5), dtype=ml.int64)(low="low", high="high", key="key",
                                                            output="output")
    pm = ml.compile(model, ml.MlirBackend(), inference=True)
    assert sorted(pm.input_keys) == ["high", "key", "low"]
    given = {"low": np.array(10), "high": np.array(12), "key": np.array(1)}
    r = pm.evaluate({}, given)["output"]
    assert r.dtype == np.int64 and set(np.unique(r)) <= {10, 11}
    np.testing.assert_array_equal(r, pm.evaluate({}, given)["output"])
    np.testing.assert_array_equal(draw((3, 2), key=9)[0], draw_primitive((3, 2), key=9))


def draw_primitive(shape, key):
    model = Model()
    model |= PrimitiveRandn(shape=shape, key=key)(output="output")
    return ml.compile(model, ml.MlirBackend(), inference=True).evaluate({}, {})["output"]


def test_the_key_is_a_state_key_the_original_way():
    """Randn without a key: the state key `key` from 42; evaluate(state=)
    draws with it and returns key + 1; without state=, 42 every time. A model
    holding it passes the pair up (bind_state_keys)."""
    inner = Model()
    inner |= Randn(shape=(3,))(output="noise")
    outer = Model()
    outer |= inner(noise="z")
    pm = ml.compile(outer, ml.MlirBackend(dtype=ml.float64), inference=True)
    assert pm.state_keys == ["key"]
    assert int(pm.initial_state_dict["key"]) == 42
    first, state = pm.evaluate({}, {}, state=pm.initial_state_dict)
    second, state2 = pm.evaluate({}, {}, state=state)
    assert int(state["key"]) == 43 and int(state2["key"]) == 44
    assert sorted(first) == ["z"]  # the next key goes in the state, not the outputs
    np.testing.assert_array_equal(first["z"], pm.evaluate({}, {})["z"])
    np.testing.assert_array_equal(second["z"], draw((3,), ml.float64, key=43)[0])
    with pytest.raises(ml.KeyNotFoundError, match="not state keys"):
        pm.evaluate({}, {}, state={"nope": np.array(1)})
