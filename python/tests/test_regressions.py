# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""Regression tests for wrong answers and crashes found by trying the package
as a user would (issue 15): each test names what used to go wrong."""

import numpy as np
import pytest

import mithril as ml
from mithril.models import Mean, Model, Sum, Variance


def _single(cls, shape, dtype=ml.float32, **kwargs):
    m = Model()
    m |= cls(**kwargs).connect(input="input", output="output")
    return ml.compile(m, ml.MlirBackend(dtype=dtype), shapes={"input": shape}, inference=True)


@pytest.mark.parametrize("cls,ref", [(Sum, np.sum), (Mean, np.mean), (Variance, np.var)])
def test_float32_reductions_are_accurate(cls, ref):
    # A float32 running sum of 10^6 values near 1000 gave a mean of 1010
    # instead of 1000.5 and a variance of 90 instead of 0.083.
    n = 10**7
    x = (1000 + np.random.default_rng(0).random(n)).astype(np.float32)
    out = float(_single(cls, [n]).evaluate({}, {"input": x})["output"])
    want = ref(x.astype(np.float64))
    assert abs(out - want) <= 1e-5 * abs(want), (out, want)


@pytest.mark.parametrize("shape,axis", [([7, 3000], 1), ([3000, 5], 0), ([4, 5, 2048], (0, 2))])
def test_float32_partial_reductions_are_accurate(shape, axis):
    # Long rows take the lane-split path, short ones the plain one; both
    # accumulate in f64.
    x = (100 + np.random.default_rng(1).standard_normal(shape)).astype(np.float32)
    for cls, ref in ((Sum, np.sum), (Mean, np.mean), (Variance, np.var)):
        out = _single(cls, shape, axis=axis).evaluate({}, {"input": x})["output"]
        want = ref(x.astype(np.float64), axis=axis)
        np.testing.assert_allclose(out, want, rtol=1e-6, atol=1e-6)
