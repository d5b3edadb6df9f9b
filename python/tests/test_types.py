# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""Mithril's dtype names (mithril.types, ml.float32 ... ml.bfloat16) and
TBD: every spelling a Mithril user writes reaches the compiler."""

import numpy as np
import pytest

import mithril as ml
from mithril.models import Absolute, Add, ArgMax, Cast, Linear, Model
from mithril.types import Dtype, dtype_name


def test_dtype_enum_is_the_originals():
    assert [d.name for d in Dtype] == ["uint8", "int8", "int16", "int32", "int64", "float16",
                                      "bfloat16", "float32", "float64", "bool"]
    assert str(ml.Dtype.float32) == "7"
    assert ml.float is ml.float32 and ml.double is ml.float64 and ml.int is ml.int32
    assert ml.short is ml.int16 and ml.bfloat16 is Dtype.bfloat16
    assert ml.types.half is Dtype.float16 and ml.types.long is Dtype.int64


@pytest.mark.parametrize("spelling, name", [
    (ml.float32, "float32"), (ml.float64, "float64"), (ml.int64, "int64"), (ml.bool, "bool"),
    (Dtype.int32, "int32"), (np.dtype("float64"), "float64"), ("f32", "float32"),
    (bool, "bool"), (float, "float32"), (ml.bfloat16, "bfloat16"), ("long", "int64"),
])
def test_dtype_names(spelling, name):
    assert dtype_name(spelling) == name


def test_bad_dtypes_are_errors():
    with pytest.raises(ValueError, match="unknown dtype 'float128'"):
        dtype_name("float128")
    with pytest.raises(ValueError, match="complex128 is not one of Mithril's"):
        dtype_name(np.complex128)
    with pytest.raises(ValueError, match="Cast: uint8 is not supported by compiled code yet"):
        Cast(dtype=ml.uint8)
    with pytest.raises(ValueError, match="MlirBackend dtype must be float32, float64, float16 or "):
        ml.MlirBackend(dtype=ml.Dtype.int32)


@pytest.mark.parametrize("dtype, want", [
    (ml.float64, np.array([1.5, -2.0])), (Dtype.int64, np.array([1, -2])),
    ("int32", np.array([1, -2], np.int32)), (ml.bool, np.array([True, True])),
    (ml.float32, np.array([1.5, -2.0], np.float32)), (ml.int16, np.array([1, -2], np.int16)),
    (ml.int8, np.array([1, -2], np.int8)),
])
def test_cast_takes_every_spelling(dtype, want):
    model = Model()
    model |= Cast(dtype=dtype)(input="input", output="output")
    pm = ml.compile(model, ml.MlirBackend(dtype=ml.Dtype.float64), shapes={"input": [2]})
    out = pm.evaluate({}, {"input": np.array([1.5, -2.0])})["output"]
    assert out.dtype == want.dtype
    np.testing.assert_array_equal(out, want)


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.int64, np.bool_])
def test_integer_terminals_abs_and_argmax(dtype):
    """Integer and bool arrays in and out, as numpy computes them: abs (the
    lowest value wraps, as numpy's does) and the first largest element."""
    model = Model()
    model |= Absolute()(input="input", output="abs")
    model |= ArgMax(axis=1)(input="input", output="rows")
    model |= ArgMax()(input="input", output="flat")
    model |= Add()(left="input", right="input", output="twice")
    pm = ml.compile(model, ml.MlirBackend(), shapes={"input": [4, 6]},
                    types={"input": np.dtype(dtype)}, inference=True)
    x = np.random.default_rng(3).integers(-128, 128, (4, 6)).astype(dtype)
    if dtype is not np.bool_:
        x[0, 0] = np.iinfo(dtype).min
        x[1, :] = x[1, 2]  # ties: the first wins
    out = pm.evaluate({}, {"input": x})
    want_abs = x if dtype is np.bool_ else np.abs(x)
    np.testing.assert_array_equal(out["abs"], want_abs)
    assert out["abs"].dtype == want_abs.dtype
    np.testing.assert_array_equal(out["rows"], np.argmax(x, axis=1))
    assert int(out["flat"]) == int(np.argmax(x))
    if dtype is not np.bool_:
        np.testing.assert_array_equal(out["twice"], x + x)


def test_tbd_is_an_unset_value():
    assert repr(ml.TBD) == "TBD"
    model = Model()
    model |= Linear(3)(input=ml.IOKey("input", value=ml.TBD, shape=[2, 4]), output="output")
    pm = ml.compile(model, ml.MlirBackend())
    assert "input" in pm.input_keys


def test_inputs_that_lose_values_in_conversion_are_type_mismatches():
    # The guide's "Type mismatch: expected float32, got ..." troubleshooting:
    # numbers convert as numpy converts them unless something is lost.
    from mithril.models import Embedding, Linear, Model
    model = Model()
    model |= Linear(4)(input="input", output="output")
    pm = ml.compile(model, ml.MlirBackend(), shapes={"input": [2, 3]})
    params = pm.randomize_params()
    assert pm.evaluate(params, {"input": np.ones((2, 3), np.int64)})["output"].dtype == np.float32
    assert pm.evaluate(params, {"input": [[1, 2, 3], [4, 5, 6]]})["output"].shape == (2, 4)
    with pytest.raises(ml.MithrilError, match="Type mismatch: input 'input' expects float32, "
                                             "got complex values"):
        pm.evaluate(params, {"input": np.ones((2, 3), np.complex64)})
    with pytest.raises(ml.MithrilError, match="Type mismatch: input 'input' expects float32"):
        pm.evaluate(params, {"input": np.array([["a"] * 3] * 2)})
    model = Model()
    model |= Embedding(5, 3)(input="input", output="output")
    pm = ml.compile(model, ml.MlirBackend(), shapes={"input": [2]})
    params = pm.randomize_params()
    assert pm.evaluate(params, {"input": np.array([1.0, 2.0])})["output"].shape == (2, 3)
    with pytest.raises(ml.MithrilError, match="expects int64, got float64 values that are not "
                                             "whole numbers"):
        pm.evaluate(params, {"input": np.array([1.5, 2.0])})
