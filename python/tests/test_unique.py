# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""Unique (mithril.unique): numpy.unique's sorted distinct values, whose
number depends on the data, returned trimmed by evaluate and mithril-run."""

import shutil
import subprocess

import numpy as np
import pytest

import mithril as ml
from mithril.models import IOKey, Model, Relu, Sum, Unique


def unique_model():
    model = Model()
    model |= Unique()(input="input", output=IOKey("output"))
    return model


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_floats_match_numpy_with_nans_infinities_and_signed_zeros(dtype):
    rng = np.random.default_rng(0)
    x = rng.integers(-4, 5, (6, 7)).astype(dtype) / 2
    x[0, 0] = x[3, 2] = np.nan
    x[1, 1], x[2, 2], x[4, 4] = np.inf, -np.inf, -0.0
    backend = ml.MlirBackend(dtype=ml.float32 if dtype == np.float32 else ml.float64)
    pm = ml.compile(unique_model(), backend, shapes={"input": list(x.shape)})
    out = pm.evaluate({}, {"input": x})["output"]
    assert out.dtype == dtype and out.shape == np.unique(x).shape
    np.testing.assert_array_equal(out, np.unique(x))  # NaNs last, as one value
    assert list(pm.output_keys) == ["output"]


def test_integers_and_every_count():
    backend = ml.MlirBackend(dtype=ml.float64)
    pm = ml.compile(unique_model(), backend, shapes={"input": [12]}, types={"input": ml.int64})
    rng = np.random.default_rng(1)
    for high in (1, 2, 5, 12, 1000):
        x = rng.integers(-high, high + 1, 12)
        np.testing.assert_array_equal(pm.evaluate({}, {"input": x})["output"], np.unique(x))


def test_dynamic_sizes_and_a_submodel():
    # Unique inside a submodel, its output exposed at the top; the input's
    # size left dynamic: one compile serves every length.
    inner = Model()
    inner |= Unique()(input="input", output=IOKey("output"))
    model = Model()
    model |= inner(input="labels", output=IOKey("classes"))
    model |= Relu()(input="features", output=IOKey("relu"))
    pm = ml.compile(model, ml.MlirBackend(dtype=ml.float64),
                    shapes={"labels": [None], "features": [None, 3]})
    for n in (1, 5, 40):
        labels = np.random.default_rng(n).integers(0, 7, n).astype(np.float64)
        features = np.linspace(-1, 1, 3 * n).reshape(n, 3)
        outputs = pm.evaluate({}, {"labels": labels, "features": features})
        np.testing.assert_array_equal(outputs["classes"], np.unique(labels))
        np.testing.assert_array_equal(outputs["relu"], np.maximum(features, 0))
        assert set(outputs) == {"classes", "relu"}


def test_its_output_cannot_feed_another_model():
    model = Model()
    model |= Unique()(input="input", output="distinct")
    model += Sum()(input="distinct", output=IOKey("output"))
    with pytest.raises(ml.MithrilError, match="size that depends on the data.*only be an output "
                                             "of the model, not an operand of 'mithril.sum'"):
        ml.compile(model, ml.MlirBackend(), shapes={"input": [4]})


def test_mithril_run_trims_it(tmp_path):
    run = shutil.which("mithril-run")
    if run is None:
        pytest.skip("mithril-run is not on PATH")
    ml.compile(unique_model(), ml.MlirBackend(dtype=ml.float64), shapes={"input": [8]},
               file_path=str(tmp_path / "unique.mlir"))
    x = np.array([3.0, 1.0, 3.0, np.nan, 2.0, 1.0, np.nan, -1.0])
    np.save(tmp_path / "x.npy", x)
    subprocess.run([run, str(tmp_path / "unique.mlir"), f"--input=input={tmp_path / 'x.npy'}",
                    "-o", str(tmp_path / "out.npz")], check=True)
    saved = np.load(tmp_path / "out.npz")
    assert list(saved.keys()) == ["output"]
    np.testing.assert_array_equal(saved["output"], np.unique(x))
