# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""float32 erf as the CPU code computes it (mithril-approximate-math's two
polynomials: x P(x^2) below |x| = 1, Q(|x| - 2.46) up to 3.92, +-1 beyond),
against math.erf: within 2.5 ulp everywhere, odd (erf(-0) is -0), +-1 at
the infinities, NaN for NaN; and the exact GELU built on it, against torch
in float64, on the host's code and AVX2's."""

import math
import shutil
import subprocess

import numpy as np
import pytest
import torch

import mithril as ml
from mithril.models import Gelu, Model


def test_erf_within_two_and_a_half_ulp(tmp_path):
    run = shutil.which("mithril-run")
    if run is None:
        pytest.skip("mithril-run is not on PATH")
    # Dense over [-6, 6] (both polynomials, their boundary at 1, the clamp at
    # 3.92), tiny and subnormal inputs, and the special values.
    specials = [0.0, -0.0, 1e-30, -1e-30, 1e-40, np.inf, -np.inf, np.nan,
                np.nextafter(np.float32(1), np.float32(0)), 1.0, 3.92, 3.93, 100.0]
    x = np.concatenate([np.linspace(-6, 6, 480001), specials]).astype(np.float32)
    n = len(x)
    (tmp_path / "erf.mlir").write_text(
        f"mithril.model @Erf(data %x: tensor<{n}xf32>) -> (y: tensor<{n}xf32>) {{\n"
        f"  %y = erf %x : (tensor<{n}xf32>) -> tensor<{n}xf32>\n"
        f"  output %y : tensor<{n}xf32>\n}}\n")
    np.save(tmp_path / "x.npy", x)
    subprocess.run([run, str(tmp_path / "erf.mlir"), f"--input=x={tmp_path / 'x.npy'}",
                    "-o", str(tmp_path / "out.npz")], check=True, stdout=subprocess.DEVNULL)
    y = np.load(tmp_path / "out.npz")["y"]
    finite = np.isfinite(x)
    exact = np.array([math.erf(float(v)) for v in x[finite]])
    ulp = np.spacing(np.maximum(np.abs(exact), np.finfo(np.float32).tiny).astype(np.float32))
    assert np.max(np.abs(y[finite] - exact) / ulp) <= 2.5
    assert np.all(np.abs(y[finite]) <= 1)
    assert np.signbit(y[x == 0]).tolist() == np.signbit(x[x == 0]).tolist()
    assert y[x == np.inf].tolist() == [1.0] and y[x == -np.inf].tolist() == [-1.0]
    assert np.isnan(y[np.isnan(x)]).all()


@pytest.mark.parametrize("target", ["host", "haswell"])
def test_exact_gelu(target):
    model = Model()
    model |= Gelu()(input="x", output=ml.IOKey("y"))
    pm = ml.compile(model, ml.MlirBackend(num_threads=1), shapes={"x": [64, 1000]},
                    inference=True,
                    cpu_options=None if target == "host" else {"target_cpu": target})
    x = (np.random.default_rng(3).standard_normal((64, 1000)) * 3).astype(np.float32)
    y = pm.evaluate({}, {"x": x})["y"]
    want = torch.nn.functional.gelu(torch.from_numpy(x.astype(np.float64))).numpy()
    # x (1 + erf(x / sqrt 2)) / 2 in float32: below about -5 the sum cancels
    # to 0 (as in torch's float32), an absolute error under 1e-6.
    np.testing.assert_allclose(y, want, rtol=2e-6, atol=1e-6)
