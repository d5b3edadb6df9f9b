# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""The robust functions, polynomial features, shifts, PermuteTensor and the
kernel / distance-embedding models, against numpy references, torch autograd
and central finite differences."""

import itertools

import numpy as np
import pytest
import torch

import mithril as ml
from mithril import models as M

F64 = ml.MlirBackend(dtype=ml.float64)
TINY = np.finfo(np.float64).tiny


def run(model, inputs, seeds=None, trainable=None, constants=None):
    shapes = {k: list(np.shape(v)) for k, v in inputs.items()}
    pm = ml.compile(model, F64, shapes=shapes, constant_keys=constants or {},
                    trainable_keys=list(trainable if trainable is not None else inputs))
    if seeds is None:
        return pm.evaluate(inputs, {}), {}
    return pm.evaluate(inputs, {}, output_gradients=seeds)


def central_differences(model, inputs, key, seed, out="output", eps=1e-6):
    shapes = {k: list(np.shape(v)) for k, v in inputs.items()}
    pm = ml.compile(model, F64, shapes=shapes, trainable_keys=list(inputs))
    value = inputs[key]
    numeric = np.zeros_like(value)
    for idx in np.ndindex(value.shape):
        plus, minus = value.copy(), value.copy()
        plus[idx] += eps
        minus[idx] -= eps
        f = [np.sum(pm.evaluate({**inputs, key: v}, {})[out] * seed) for v in (plus, minus)]
        numeric[idx] = (f[0] - f[1]) / (2 * eps)
    return numeric


# Robust functions -----------------------------------------------------------

def robust_sqrt_ref(x, t=TINY):
    a = np.abs(x)
    return np.where(a < t, a / np.sqrt(t), np.sqrt(np.where(a < t, 1.0, a)))


def robust_log_ref(x, t=TINY):
    a = np.abs(x)
    with np.errstate(over="ignore"):
        return np.where(a < t, np.log(t) + a / t - 1.0, np.log(np.where(a < t, 1.0, a)))


def stable_reciprocal_ref(x, t=1.4916681462400413e-153):
    small = np.abs(x) < t
    s = np.sign(x) + (1 - np.sign(np.abs(x)))
    return np.where(small, 2 * s / t - x / t**2, 1.0 / np.where(small, 1.0, x))


@pytest.mark.parametrize("model,ref", [
    (lambda: M.Sqrt(robust=True), robust_sqrt_ref),
    (lambda: M.Sqrt(robust=True, threshold=0.5), lambda x: robust_sqrt_ref(x, 0.5)),
    (lambda: M.Log(robust=True), robust_log_ref),
    (lambda: M.Log(robust=True, threshold=0.25), lambda x: robust_log_ref(x, 0.25)),
    (lambda: M.StableReciprocal(), stable_reciprocal_ref),
    (lambda: M.StableReciprocal(threshold=0.1), lambda x: stable_reciprocal_ref(x, 0.1)),
])
def test_robust_unary_values_and_gradients(model, ref):
    x = np.array([[0.0, -4.0, 1e-310, 0.3], [-0.05, 2.5, 0.7, -0.2]])
    seed = np.arange(1.0, 9.0).reshape(2, 4)
    out, grads = run(model(), {"input": x}, {"output": seed})
    np.testing.assert_allclose(out["output"], ref(x), rtol=1e-14)
    assert np.all(np.isfinite(grads["input"]))
    # Away from 0 and the threshold the gradient is the function's own.
    smooth = np.array([[-4.0, 2.5, 0.7, 1.5]])
    numeric = central_differences(model(), {"input": smooth}, "input", np.ones((1, 4)))
    _, g = run(model(), {"input": smooth}, {"output": np.ones((1, 4))})
    np.testing.assert_allclose(g["input"], numeric, rtol=1e-6)


def test_robust_power_matches_mithrils_definition_and_is_finite_at_zero():
    base = np.array([[0.0, 0.0, 2.0, -3.0, 1e-311, 0.5]])
    exponent = np.array([[0.5, 2.0, 1.5, 2.0, 0.0107, -1.0]])
    t = TINY
    a = np.abs(base)
    with np.errstate(divide="ignore"):
        cond = (exponent < 1 - np.log(t) / np.log(a)) & (a < t)
    want = np.where(cond, a / t, a ** np.where(cond, 1.0, exponent))
    out, grads = run(M.Power(robust=True), {"base": base, "exponent": exponent},
                     {"output": np.ones_like(base)})
    np.testing.assert_allclose(out["output"], want, rtol=1e-13)
    assert np.all(np.isfinite(grads["base"])) and np.all(np.isfinite(grads["exponent"]))
    # Where the plain power applies, the gradients are torch's of |b| ** e.
    b = torch.tensor(base[:, 2:4], requires_grad=True)
    e = torch.tensor(exponent[:, 2:4], requires_grad=True)
    (b.abs() ** e).sum().backward()
    np.testing.assert_allclose(grads["base"][:, 2:4], b.grad.numpy(), rtol=1e-13)
    np.testing.assert_allclose(grads["exponent"][:, 2:4], e.grad.numpy(), rtol=1e-13)


def test_robust_threshold_must_be_positive():
    with pytest.raises(ml.MithrilError, match="threshold must be a positive"):
        run(M.Sqrt(robust=True, threshold=-1.0), {"input": np.ones((2,))})
    with pytest.raises(ml.MithrilError, match="robust=True"):
        M.Log(threshold=1e-3)


def test_robust_cross_entropy_on_probabilities_is_finite():
    p = np.array([[0.0, 1.0], [0.1, 0.9]])
    target = np.array([0, 0])
    model = M.CrossEntropy(input_type="probs", robust=True)
    out, grads = run(model, {"input": p}, {"output": np.ones(2)}, trainable=["input"],
                     constants={"target": target})
    np.testing.assert_allclose(out["output"], [-robust_log_ref(0.0), -np.log(0.1)], rtol=1e-14)
    assert np.all(np.isfinite(grads["input"]))


# Polynomial features, shifts, PermuteTensor -------------------------------

def polynomial_features_ref(x, degree):
    data = np.hstack([np.ones((x.shape[0], 1)), x])
    combos = list(itertools.combinations_with_replacement(range(x.shape[1] + 1), degree))[1:]
    return np.stack([np.prod(data[:, list(c)], axis=1) for c in combos], axis=1)


@pytest.mark.parametrize("features,degree", [(1, 3), (2, 2), (3, 3), (4, 1)])
def test_polynomial_features(features, degree):
    rng = np.random.default_rng(features * 10 + degree)
    x = rng.uniform(-2, 2, (5, features))
    seed = rng.standard_normal(polynomial_features_ref(x, degree).shape)
    out, grads = run(M.PolynomialFeatures(degree), {"input": x}, {"output": seed})
    np.testing.assert_allclose(out["output"], polynomial_features_ref(x, degree), rtol=1e-13)
    numeric = central_differences(M.PolynomialFeatures(degree), {"input": x}, "input", seed)
    np.testing.assert_allclose(grads["input"], numeric, rtol=1e-6, atol=1e-8)


def test_polynomial_features_rejects_bad_degree_and_rank():
    with pytest.raises(ml.MithrilError, match="degree"):
        M.PolynomialFeatures(0)
    with pytest.raises(ml.MithrilError, match="samples, features"):
        run(M.PolynomialFeatures(2), {"input": np.ones((2, 3, 4))})


def test_polynomial_regression_matches_numpy():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((6, 2))
    model = M.PolynomialRegression(degree=3, dimension=2)
    pm = ml.compile(model, F64, shapes={"input": [6, 2]})
    params = pm.randomize_params(seed=4)
    out = pm.evaluate(params, {"input": x})["output"]
    want = polynomial_features_ref(x, 3) @ params["weight"].T + params["bias"]
    np.testing.assert_allclose(out, want, rtol=1e-13)


@pytest.mark.parametrize("model,ref", [(M.ShiftLeft, np.left_shift),
                                       (M.ShiftRight, np.right_shift)])
def test_shifts(model, ref):
    x = np.array([[1, -8, 3, 1024]], dtype=np.int64)
    s = np.array([[0, 2, 3, 1]], dtype=np.int64)
    pm = ml.compile(model(), F64, shapes={"input": [1, 4], "shift": [1, 4]})
    np.testing.assert_array_equal(pm.evaluate({}, {"input": x, "shift": s})["output"], ref(x, s))


def test_permute_tensor_gathers_rows_and_scatters_gradients():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((4, 2, 3))
    indices = np.array([3, 0, 0, 2])
    seed = rng.standard_normal((4, 2, 3))
    out, grads = run(M.PermuteTensor(), {"input": x}, {"output": seed}, trainable=["input"],
                     constants={"indices": indices})
    np.testing.assert_allclose(out["output"], x[indices])
    want = np.zeros_like(x)
    np.add.at(want, indices, seed)
    np.testing.assert_allclose(grads["input"], want)


# Kernels and distance embeddings ------------------------------------------

def test_rbf_kernel_against_torch():
    rng = np.random.default_rng(3)
    inputs = {"input1": rng.standard_normal((3, 2)), "input2": rng.standard_normal((4, 2)),
              "l_scale": np.array([1.3]), "sigma": np.array([0.8])}
    seed = rng.standard_normal((3, 4))
    out, grads = run(M.RBFKernel(), inputs, {"output": seed})
    t = {k: torch.tensor(v, requires_grad=True) for k, v in inputs.items()}
    d2 = ((t["input1"][:, None, :] - t["input2"][None, :, :]) ** 2).sum(2)
    k = t["l_scale"] ** 2 * torch.exp(-0.5 * d2 / t["sigma"] ** 2)
    (k * torch.tensor(seed)).sum().backward()
    np.testing.assert_allclose(out["output"], k.detach().numpy(), rtol=1e-13)
    for key in inputs:
        np.testing.assert_allclose(grads[key], t[key].grad.numpy(), rtol=1e-12, atol=1e-14)


def test_kernelized_svm_outputs_its_kernel():
    rng = np.random.default_rng(4)
    x1, x2 = rng.standard_normal((3, 2)), rng.standard_normal((5, 2))
    model = M.KernelizedSVM(kernel=M.PolynomialKernel(robust=False))
    pm = ml.compile(model, F64, shapes={"input1": [3, 2], "input2": [5, 2], "poly_coef": [],
                                        "degree": [], "weight": [1, 5], "bias": [1]},
                    trainable_keys=["weight", "bias"])
    params = pm.randomize_params(seed=1)
    data = {"input1": x1, "input2": x2, "poly_coef": np.array(1.5), "degree": np.array(2.0)}
    out = pm.evaluate(params, data)
    kernel = (x1 @ x2.T + 1.5) ** 2
    np.testing.assert_allclose(out["kernel"], kernel, rtol=1e-13)
    np.testing.assert_allclose(out["output"], kernel @ params["weight"].T + params["bias"],
                               rtol=1e-13)


def mds_stress_ref(d, p, n=2.0):
    pred = np.abs(p) ** (1 / n)
    return (np.sum(np.abs(d - pred) ** n) / np.sum(np.abs(d) ** n)) ** (1 / n)


def test_mds_core_stress_and_gradient():
    rng = np.random.default_rng(6)
    pts = rng.standard_normal((4, 2))
    d = np.sqrt(((pts[:, None] - pts[None]) ** 2).sum(-1))
    p = (d + 0.1 * np.abs(rng.standard_normal((4, 4)))) ** 2
    inputs = {"distances": d, "pred_distances": p}
    out, grads = run(M.MDSCore(), inputs, {"output": np.array(1.0)}, trainable=["pred_distances"],
                     constants={"norm": np.array(2.0)})
    np.testing.assert_allclose(out["output"], mds_stress_ref(d, p), rtol=1e-12)
    tp = torch.tensor(p, requires_grad=True)
    stress = (((torch.tensor(d) - tp.abs() ** 0.5).abs() ** 2).sum()
              / (torch.tensor(d) ** 2).sum()) ** 0.5
    stress.backward()
    off = ~np.eye(4, dtype=bool)  # the diagonal sits at the robust kink
    np.testing.assert_allclose(grads["pred_distances"][off], tp.grad.numpy()[off], rtol=1e-9)


def test_tsne_core_cost_against_torch():
    rng = np.random.default_rng(7)
    pred = np.abs(rng.standard_normal((5, 5)))
    pred = pred + pred.T
    np.fill_diagonal(pred, 0.0)
    p = np.abs(rng.standard_normal((5, 5)))
    p = p + p.T
    np.fill_diagonal(p, 0.0)
    p /= p.sum()
    out, grads = run(M.TSNECore(), {"pred_distances": pred}, {"output": np.array(1.0)},
                     trainable=["pred_distances"],
                     constants={"distances": pred, "p_joint": p})
    tp = torch.tensor(pred, requires_grad=True)
    q = (1.0 / (1.0 + tp)) * (1 - torch.eye(5, dtype=torch.float64))
    q = q / q.sum()
    mask = torch.tensor(p > 0)
    pt = torch.tensor(p)
    cost = torch.where(mask, pt * (torch.log(torch.where(mask, pt, 1.0))
                                   - torch.log(torch.where(mask, q, 1.0))), 0.0).sum()
    cost.backward()
    np.testing.assert_allclose(out["output"], cost.item(), rtol=1e-12)
    np.testing.assert_allclose(grads["pred_distances"], tp.grad.numpy(), rtol=1e-10, atol=1e-15)


def test_mds_learns_coordinates_from_points():
    points = np.array([[0.0, 0.0], [3.0, 0.0], [0.0, 4.0]])
    model = M.MDS(prediction_dim=2, input_type="points")
    pm = ml.compile(model, F64, shapes={"input": [3, 2], "coords": [3, 2], "norm": []},
                    constant_keys={"input": points, "norm": np.array(2.0)},
                    trainable_keys=["coords"])
    coords = points + 0.3 * np.random.default_rng(8).standard_normal((3, 2))
    first = None
    for _ in range(300):
        out, grads = pm.evaluate({"coords": coords}, {},
                                 output_gradients={"output": np.array(1.0)})
        first = out["output"] if first is None else first
        np.testing.assert_array_equal(out["predicted_coords"], coords)
        coords = coords - 0.1 * grads["coords"]
    assert out["output"] < 0.1 * first
