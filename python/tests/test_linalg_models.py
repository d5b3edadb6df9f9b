# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
# Mithril's Gaussian-process models (Cholesky, GPRAlpha, GPRVOuter, Eigvalsh,
# TransposedDiagonal, GPRLoss, GaussProcessRegressionCore) over the dialect's
# mithril.cholesky and mithril.triangular_solve: outputs and gradients against
# torch.linalg in float64 and float32, the Cholesky gradient against finite
# differences, and the errors.
import math

import numpy as np
import pytest
import torch

import mithril as ml
from mithril.errors import MithrilError
from mithril.models import (Cholesky, Eigvalsh, GaussProcessRegressionCore, GPRAlpha, GPRLoss,
                            GPRVOuter, TransposedDiagonal)
from torch_oracle import compile_eval, torch_run

DTYPES = {np.float64: (ml.float64, 1e-10), np.float32: (ml.float32, 2e-4)}


def spd(rng, n, dtype=np.float64):
    """A well-conditioned symmetric positive-definite matrix."""
    a = rng.standard_normal((n, n))
    return (a @ a.T / n + np.eye(n)).astype(dtype)


def lower_factor(rng, n, dtype=np.float64):
    """A lower-triangular matrix with a diagonal far from zero, and
    nonzero values above it that a triangular solve must not read."""
    m = rng.standard_normal((n, n)) * 0.3
    m[np.diag_indices(n)] = 1.0 + rng.random(n)
    return m.astype(dtype)


def backend(dtype):
    return ml.MlirBackend(dtype=DTYPES[dtype][0])


def assert_close(got, want, dtype, what):
    tol = DTYPES[dtype][1]
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol, err_msg=what)


def gpr_torch(label, s, k, k_star, mu):
    """The original's GaussProcessRegressionCore in torch."""
    n = label.shape[0]
    k_term = k + s * torch.eye(n, dtype=k.dtype)
    lower = torch.linalg.cholesky(k_term)
    diff = label - mu
    alpha = torch.linalg.solve_triangular(
        lower.T, torch.linalg.solve_triangular(lower, diff, upper=False), upper=True)
    loss = (0.5 * (diff.T @ alpha).squeeze() + torch.log(torch.diagonal(lower)).sum()
            + n * math.log(2 * math.pi) / 2).reshape(1)
    v = torch.linalg.solve_triangular(lower, k, upper=False)
    spread = torch.diagonal((k_star - v.T @ v).T).reshape(-1, 1)
    return {"loss": loss, "prediction": mu + k.T @ alpha,
            "confidence": s + torch.abs(spread)}


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("n", [1, 3, 6])
def test_cholesky_matches_torch(dtype, n, rng):
    a = spd(rng, n, dtype)
    seed = rng.standard_normal((n, n)).astype(dtype)
    out, grads = compile_eval(Cholesky(), backend(dtype), {}, {"input": a}, {"output": seed})
    ref, ref_grads = torch_run(lambda input: {"output": torch.linalg.cholesky(input)}, {},
                               {"input": a}, {"output": seed})
    assert_close(out["output"], ref["output"], dtype, "L")
    assert_close(grads["input"], ref_grads["input"], dtype, "gradient of the input")


def test_cholesky_gradient_matches_finite_differences(rng):
    """<dA, E> for symmetric directions E, against central differences of
    sum(seed * cholesky(A + t E))."""
    n = 5
    a = spd(rng, n)
    seed = rng.standard_normal((n, n))
    _, grads = compile_eval(Cholesky(), backend(np.float64), {}, {"input": a}, {"output": seed})
    h = 1e-6
    for _ in range(4):
        e = rng.standard_normal((n, n))
        e = e + e.T
        plus = np.sum(seed * np.linalg.cholesky(a + h * e))
        minus = np.sum(seed * np.linalg.cholesky(a - h * e))
        np.testing.assert_allclose(np.sum(grads["input"] * e), (plus - minus) / (2 * h),
                                   rtol=1e-6, atol=1e-8)


def test_cholesky_of_an_indefinite_matrix_is_nan():
    """No error and no crash: the pivots from the first non-positive one on
    are NaN (torch raises an error instead)."""
    pm = ml.compile(Cholesky(), ml.MlirBackend(dtype=ml.float64), shapes={"input": [3, 3]})
    out = pm.evaluate({"input": np.array([[1.0, 2.0, 0.0], [2.0, 1.0, 0.0], [0.0, 0.0, 4.0]])})
    lower = out["output"]
    assert lower[0, 0] == 1.0 and lower[1, 0] == 2.0
    assert np.isnan(lower[1, 1]) and np.isnan(lower[2, 2])


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("n,columns", [(1, 1), (4, 1), (5, 3)])
def test_gpr_alpha_matches_torch(dtype, n, columns, rng):
    lower = lower_factor(rng, n, dtype)
    k_term = (np.tril(lower) @ np.tril(lower).T).astype(dtype)
    diff = rng.standard_normal((n, columns)).astype(dtype)
    seed = rng.standard_normal((n, columns)).astype(dtype)
    params = {"label_mu_diff": diff, "L": lower}
    out, grads = compile_eval(GPRAlpha(), backend(dtype), {"K_term": k_term}, params,
                              {"output": seed})

    def alpha(label_mu_diff, L, K_term):
        forward = torch.linalg.solve_triangular(L, label_mu_diff, upper=False)
        return {"output": torch.linalg.solve_triangular(L.T, forward, upper=True)}

    ref, ref_grads = torch_run(alpha, {"K_term": k_term}, params, {"output": seed})
    assert_close(out["output"], ref["output"], dtype, "alpha")
    assert_close(out["output"], np.linalg.solve(k_term.astype(np.float64), diff), dtype,
                 "K_term^-1 label_mu_diff")
    for key in params:
        assert_close(grads[key], ref_grads[key], dtype, f"gradient of {key}")
    assert np.all(np.triu(grads["L"], 1) == 0), "the upper triangle of L is not read"


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("n,m", [(2, 2), (4, 4), (5, 3)])
def test_gpr_v_outer_matches_torch(dtype, n, m, rng):
    lower = lower_factor(rng, n, dtype)
    k = rng.standard_normal((n, m)).astype(dtype)
    seed = rng.standard_normal((m, m)).astype(dtype)
    params = {"K": k, "L": lower}
    k_term = np.eye(n, dtype=dtype)
    out, grads = compile_eval(GPRVOuter(), backend(dtype), {"K_term": k_term}, params,
                              {"output": seed})

    def v_outer(K, L, K_term):
        v = torch.linalg.solve_triangular(L, K, upper=False)
        return {"output": v.T @ v}

    ref, ref_grads = torch_run(v_outer, {"K_term": k_term}, params, {"output": seed})
    assert_close(out["output"], ref["output"], dtype, "v^T v")
    for key in params:
        assert_close(grads[key], ref_grads[key], dtype, f"gradient of {key}")


def test_diagonals_and_gpr_loss(rng):
    n = 4
    k_term = spd(rng, n)
    lower = np.linalg.cholesky(k_term)
    labels, mu = rng.standard_normal((n, 1)), rng.standard_normal((n, 1))
    alpha = np.linalg.solve(k_term, labels - mu)
    b = ml.MlirBackend(dtype=ml.float64)
    shapes = {"input": [n, n]}
    m = rng.standard_normal((n, n))
    out = ml.compile(TransposedDiagonal(), b, shapes=shapes).evaluate({"input": m})
    np.testing.assert_array_equal(out["output"], np.diag(m.T)[:, None])
    out = ml.compile(Eigvalsh(), b, shapes={"K_term": [n, n], "L": [n, n]}).evaluate(
        {"K_term": k_term, "L": lower})
    np.testing.assert_array_equal(out["output"], np.diag(lower)[:, None])
    given = {"labels": labels, "mu": mu, "L": lower, "K_term": k_term, "alpha": alpha}
    want = (0.5 * float((labels - mu).T @ alpha) + np.log(np.diag(lower)).sum()
            + n * math.log(2 * math.pi) / 2)
    for robust in (False, True):
        pm = ml.compile(GPRLoss(robust=robust), b,
                        shapes={k: list(v.shape) for k, v in given.items()})
        out = pm.evaluate(given)
        assert out["output"].shape == (1,)
        np.testing.assert_allclose(out["output"], [want], rtol=1e-12)
        # Half the log determinant of K_term.
        np.testing.assert_allclose(np.log(np.diag(lower)).sum(),
                                   0.5 * np.linalg.slogdet(k_term)[1], rtol=1e-12)


def test_gpr_core_the_directed_case_by_hand():
    """test_GaussProcessRegressionLayer's inputs: K_term = [[2, .5], [.5, 2]],
    alpha = K_term^-1 [0, 1] = [-2, 8] / 15, prediction = mu + k alpha."""
    inputs = {"label": np.array([[1.0], [2.0]]), "s": np.array([1.0]),
              "k": np.array([[1.0, 0.5], [0.5, 1.0]]), "k_star": np.array([[1.0, 0.5], [0.5, 1.0]]),
              "mu": np.array([[1.0], [1.0]])}
    model = GaussProcessRegressionCore()
    assert model.output_keys and set(model.output_keys) == {"loss", "prediction", "confidence"}
    pm = ml.compile(model, ml.MlirBackend(dtype=ml.float64),
                    shapes={k: list(v.shape) for k, v in inputs.items()})
    out = pm.evaluate(inputs)
    np.testing.assert_allclose(out["prediction"], [[17 / 15], [22 / 15]], rtol=1e-14)
    np.testing.assert_allclose(out["confidence"], [[22 / 15], [22 / 15]], rtol=1e-14)
    np.testing.assert_allclose(out["loss"], [2.765421653067172], rtol=1e-14)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("n", [2, 4, 7])
def test_gpr_core_matches_torch(dtype, n, rng):
    points = rng.standard_normal((n, 2))
    distances = ((points[:, None, :] - points[None, :, :]) ** 2).sum(-1)
    k = np.exp(-distances / 2).astype(dtype)
    params = {"label": rng.standard_normal((n, 1)).astype(dtype),
              "s": np.array([0.3 + rng.random()], dtype=dtype), "k": k,
              "k_star": (k + 0.1 * rng.standard_normal((n, n))).astype(dtype),
              "mu": rng.standard_normal((n, 1)).astype(dtype)}
    seeds = {"loss": np.array([1.5], dtype=dtype),
             "prediction": rng.standard_normal((n, 1)).astype(dtype),
             "confidence": rng.standard_normal((n, 1)).astype(dtype)}
    out, grads = compile_eval(GaussProcessRegressionCore(), backend(dtype), {}, params, seeds)
    ref, ref_grads = torch_run(gpr_torch, {}, params, seeds)
    for key in seeds:
        assert_close(out[key], ref[key], dtype, key)
    for key in params:
        assert_close(grads[key], ref_grads[key], dtype, f"gradient of {key}")


def test_gpr_errors():
    b = ml.MlirBackend(dtype=ml.float64)
    with pytest.raises(MithrilError, match=r"cholesky.*square matrix.*3x4"):
        ml.compile(Cholesky(), b, shapes={"input": [3, 4]})
    with pytest.raises(MithrilError, match=r"GPRVOuter needs L to be a square matrix"):
        ml.compile(GPRVOuter(), b, shapes={"K": [3, 3], "K_term": [3, 3], "L": [3, 2]})
    with pytest.raises(MithrilError, match=r"as many rows as the triangular matrix"):
        ml.compile(GPRAlpha(), b, shapes={"label_mu_diff": [4, 1], "L": [3, 3],
                                          "K_term": [3, 3]})
    with pytest.raises(MithrilError, match=r"square matrix"):
        ml.compile(GaussProcessRegressionCore(), b,
                   shapes={"label": [3, 1], "s": [1], "k": [3, 2], "k_star": [3, 3],
                           "mu": [3, 1]})
