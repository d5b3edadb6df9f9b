# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""evaluate's common call (PhysicalModel._evaluate_fast: a static CPU model
given its inputs as arrays of their compiled types and shapes) gives what
the general path gives, and every other call still goes the general way,
with its errors."""

import numpy as np
import pytest

import mithril as ml
from mithril.errors import KeyNotFoundError, MithrilError
from mithril.models import IOKey, Linear, Model, Relu


def model():
    m = Model()
    m |= Linear(6).connect(input="input")
    m += Relu()
    m += Linear(3).connect(output=IOKey("output"))
    return m


@pytest.fixture(scope="module")
def compiled():
    pm = ml.compile(model(), ml.MlirBackend(), shapes={"input": [4, 5]}, inference=True)
    params = pm.randomize_params(seed=1)
    x = np.random.default_rng(2).standard_normal((4, 5)).astype(np.float32)
    return pm, params, x


def general(pm, params, data):
    plan, pm._fast_plan = pm._fast_plan, False
    try:
        return pm.evaluate(params, data)
    finally:
        pm._fast_plan = plan


def test_the_common_call_is_the_general_one(compiled):
    pm, params, x = compiled
    fast = pm.evaluate(params, {"input": x})
    assert pm._fast_plan  # the common call took the fast path
    slow = general(pm, params, {"input": x})
    assert sorted(fast) == sorted(slow) == ["output"]
    np.testing.assert_array_equal(fast["output"], slow["output"])
    # Every form of the names, and everything in one dict, still works.
    both = pm.evaluate(None, {**params, "input": x})
    np.testing.assert_array_equal(both["output"], slow["output"])
    short = {"weight_0": params["linear_0.weight"], "bias_0": params["linear_0.bias"],
             "weight_1": params["linear_1.weight"], "bias_1": params["linear_1.bias"]}
    np.testing.assert_array_equal(pm.evaluate(short, {"input": x})["output"], slow["output"])
    # Arrays of another type or layout are converted as before.
    converted = pm.evaluate(params, {"input": np.asfortranarray(x.astype(np.float64))})
    np.testing.assert_allclose(converted["output"], slow["output"], rtol=1e-6)
    # Outputs are new arrays on every call.
    again = pm.evaluate(params, {"input": x})
    assert again["output"] is not fast["output"]


def test_the_common_call_is_one_native_step(compiled):
    # _mithril.CommonCall: the lookups, checks, outputs and run in C++; it
    # answers None for any call that is not a common one, and evaluate then
    # takes the Python paths, which give the same numbers.
    from types import MappingProxyType
    pm, params, x = compiled
    expected = general(pm, params, {"input": x})["output"]
    pm.evaluate(params, {"input": x})
    native = pm._fast_plan[4]
    assert native is not None
    direct = native(params, {"input": x})  # a NameDict of parameters as it is
    assert type(direct) is pm._fast_plan[3] and list(direct) == ["output"]
    np.testing.assert_array_equal(direct["output"], expected)
    np.testing.assert_array_equal(native(None, {**params, "input": x})["output"], expected)

    class Subclass(np.ndarray):
        pass

    uncommon = [(params, {"input": x.view(Subclass)}), (params, {"input": x.astype(">f4")}),
                (params, {"input": np.asfortranarray(x)}), (params, {"input": x.astype(np.float64)}),
                (params, {}), (params, {"input": x[:2]}), (MappingProxyType(dict(params)), {"input": x}),
                (params, {"input": x, "linear_0.bias": params["linear_0.bias"]}),
                (params, {"input": x.tolist()})]
    for given, data in uncommon:
        assert native(given, data) is None
    for given, data in uncommon[:4] + uncommon[6:7]:
        np.testing.assert_allclose(pm.evaluate(given, data)["output"], expected, rtol=1e-6)
    with pytest.raises(MithrilError, match="expected shape"):
        pm.evaluate(params, {"input": x[:2]})


def test_bfloat16_bits_take_the_common_call():
    # bfloat16 terminals: their bit patterns (uint16) go straight in, and
    # the outputs come back as the general path returns them; float arrays
    # (and float64 of the same shape) still convert on the general path.
    from mithril.types import from_bfloat16_bits, to_bfloat16_bits
    pm = ml.compile(model(), ml.MlirBackend(dtype=ml.bfloat16), shapes={"input": [4, 5]},
                    inference=True)
    params = {k: to_bfloat16_bits(v) for k, v in pm.randomize_params(seed=1).items()}
    x = np.random.default_rng(2).standard_normal((4, 5)).astype(np.float32)
    fast = pm.evaluate(params, {"input": to_bfloat16_bits(x)})
    assert pm._fast_plan and pm._fast_plan[4] is None  # converted in Python
    slow = general(pm, params, {"input": to_bfloat16_bits(x)})
    assert fast["output"].dtype == slow["output"].dtype == pm.backend.dtype
    np.testing.assert_array_equal(fast["output"], slow["output"])
    floats = {k: from_bfloat16_bits(v).astype(np.float64) for k, v in params.items()}
    converted = pm.evaluate(floats, {"input": x.astype(np.float64)})
    np.testing.assert_array_equal(converted["output"], slow["output"])


def test_uncommon_calls_report_what_is_wrong(compiled):
    pm, params, x = compiled
    with pytest.raises(KeyNotFoundError, match="missing input 'input'"):
        pm.evaluate(params, {})
    with pytest.raises(KeyNotFoundError, match="unknown input"):
        pm.evaluate(params, {"input": x, "other": x})
    with pytest.raises(KeyNotFoundError, match="given both as a parameter and as data"):
        pm.evaluate(params, {"input": x, "linear_0.bias": params["linear_0.bias"]})
    with pytest.raises(MithrilError, match="expected shape"):
        pm.evaluate(params, {"input": x[:2]})
