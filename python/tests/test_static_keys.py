# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""pm.static_keys: the terminals whose values do not come from trainable
parameters (data inputs, constants still read, outputs of constants alone),
before the first call as after it."""

import numpy as np

import mithril as ml
from mithril.deferred import DeferredPhysicalModel
from mithril.models import Add, Linear, Model, Relu


def branches():
    """`fixed` depends on `a` alone, `mixed` on `a` and `b`, `learned` on a
    Linear's parameters and `b`."""
    model = Model()
    model |= Relu()(input="a", output="fixed")
    model |= Add()(left="a", right="b", output="mixed")
    model |= Linear(2)(input="b", output="learned")
    return model


def test_constants_fix_the_outputs_that_read_only_them():
    a = np.arange(6.0).reshape(2, 3) - 2.0
    pm = ml.compile(branches(), ml.MlirBackend(dtype=ml.float64), constant_keys={"a": a},
                    shapes={"b": [2, 3]})
    # `a` is still read by `mixed`; `b` is data; `fixed` is the same at every call.
    assert pm.static_keys == ["a", "b", "fixed"]
    b = np.ones((2, 3))
    out = pm.evaluate(pm.randomize_params(seed=0), {"b": b})
    np.testing.assert_array_equal(out["fixed"], np.maximum(a, 0))
    np.testing.assert_array_equal(out["mixed"], a + b)


def test_a_constant_only_fixed_outputs_read_is_not_held():
    model = Model()
    model |= Relu()(input="a", output="fixed")
    model |= Relu()(input="b", output="free")
    pm = ml.compile(model, ml.MlirBackend(dtype=ml.float64), constant_keys={"a": np.ones(3)},
                    shapes={"b": [3]}, inference=True)
    assert pm.static_keys == ["b", "fixed"]


def test_before_the_first_call_the_graph_answers():
    # No shape for `b`: compiled at the first call, answered from the graph.
    pm = ml.compile(branches(), ml.MlirBackend(dtype=ml.float64),
                    constant_keys={"a": np.ones((2, 3))})
    assert isinstance(pm, DeferredPhysicalModel)
    assert pm.data_keys == ["b"]
    assert pm.static_keys == ["a", "b", "fixed"]
    out = pm(b=np.full((2, 3), 0.5))
    assert sorted(out) == ["fixed", "learned", "mixed"]
    # After the call the compiled model answers, and agrees.
    assert pm.static_keys == ["a", "b", "fixed"]


def test_without_constants_only_data_is_static():
    pm = ml.compile(branches(), ml.MlirBackend(dtype=ml.float64),
                    shapes={"a": [2, 3], "b": [2, 3]})
    assert pm.static_keys == ["a", "b"]
