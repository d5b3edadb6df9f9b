# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""Every primitive against torch: outputs in float64 and float32, and
gradients through mithril-autodiff against torch autograd."""

import numpy as np
import pytest
import torch

import mithril as ml
from mithril import models as M
from mithril.framework import TerminalSpec

F = torch.nn.functional

# (model factory, torch function, input shapes, input generators)
pos = lambda rng, s: rng.uniform(0.5, 2.0, s)
anyv = lambda rng, s: rng.standard_normal(s)
prob = lambda rng, s: rng.uniform(0.05, 0.95, s)

UNARY = [
    (M.Relu, torch.relu, anyv),
    (M.Sigmoid, torch.sigmoid, anyv),
    (M.Tanh, torch.tanh, anyv),
    (M.Softplus, F.softplus, anyv),
    (M.Exponential, torch.exp, anyv),
    (M.Log, torch.log, pos),
    (M.Sqrt, torch.sqrt, pos),
    (M.Sine, torch.sin, anyv),
    (M.Cosine, torch.cos, anyv),
    (M.Absolute, torch.abs, anyv),
    (M.Negate, torch.neg, anyv),
    (M.Square, torch.square, anyv),
    (M.Reciprocal, torch.reciprocal, pos),
    (lambda: M.LeakyRelu(slope=0.05), lambda x: F.leaky_relu(x, 0.05), anyv),
    (M.LeakyRelu, lambda x: F.leaky_relu(x, 0.01), anyv),  # Mithril's default slope
    (M.Gelu, F.gelu, anyv),
    (lambda: M.Gelu(approximate=True), lambda x: F.gelu(x, approximate="tanh"), anyv),
    (lambda: M.Softmax(axis=-1), lambda x: torch.softmax(x, -1), anyv),
    (lambda: M.Softmax(axis=0), lambda x: torch.softmax(x, 0), anyv),
    (lambda: M.LogSoftmax(axis=1), lambda x: torch.log_softmax(x, 1), anyv),
]

BINARY = [
    (M.Add, torch.add),
    (M.Subtract, torch.sub),
    (M.Multiply, torch.mul),
    (lambda: _Renamed(M.Divide(), "left", "right"), torch.div),
    (M.Maximum, torch.maximum),
    (M.Minimum, torch.minimum),
]

# Broadcasting corner cases: equal shapes, trailing vector, size-1 axes on
# both sides, and a scalar.
BROADCAST_SHAPES = [((3, 4), (3, 4)), ((3, 4), (4,)), ((3, 1), (1, 4)), ((2, 3, 4), ()),
                    ((4,), (2, 3, 4))]


def _Renamed(model, left, right):
    """Exposes a numerator/denominator model under left/right."""
    wrapper = ml.Model()
    wrapper |= model.connect(numerator=left, denominator=right, output=ml.IOKey("output"))
    return wrapper


def run(model, inputs, backend, seeds=None, trainable=None):
    shapes = {k: list(np.shape(v)) for k, v in inputs.items()}
    pm = ml.compile(model, backend, shapes=shapes, trainable_keys=trainable or list(inputs))
    if seeds is None:
        return pm.evaluate({}, {k: v for k, v in inputs.items()})
    params = {k: inputs[k] for k in pm.trainable_keys}
    data = {k: v for k, v in inputs.items() if k not in params}
    return pm.evaluate(params, data, output_gradients=seeds)


def torch_grads(fn, inputs, seed):
    tensors = {k: torch.tensor(v, requires_grad=True) for k, v in inputs.items()}
    y = fn(*tensors.values())
    y.backward(torch.tensor(seed))
    return y.detach().numpy(), {k: t.grad.numpy() for k, t in tensors.items()}


@pytest.mark.parametrize("factory,fn,gen", UNARY)
def test_unary_f64_with_gradients(factory, fn, gen, backend64, rng):
    x = gen(rng, (3, 5))
    seed = rng.standard_normal((3, 5))
    out, grads = run(factory(), {"input": x}, backend64, {"output": seed})
    ref, ref_grads = torch_grads(fn, {"input": x}, seed)
    np.testing.assert_allclose(out["output"], ref, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(grads["input"], ref_grads["input"], rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("factory,fn,gen", UNARY)
def test_unary_f32(factory, fn, gen, backend32, rng):
    x = gen(rng, (4, 7)).astype(np.float32)
    out = run(factory(), {"input": x}, backend32)
    ref = fn(torch.tensor(x)).numpy()
    np.testing.assert_allclose(out["output"], ref, rtol=2e-5, atol=2e-6)


@pytest.mark.parametrize("factory,fn", BINARY)
@pytest.mark.parametrize("lshape,rshape", BROADCAST_SHAPES)
def test_binary_broadcasting_with_gradients(factory, fn, lshape, rshape, backend64, rng):
    left = rng.uniform(0.5, 2.0, lshape)
    right = rng.uniform(0.5, 2.0, rshape)
    out_shape = np.broadcast_shapes(lshape, rshape)
    seed = rng.standard_normal(out_shape)
    out, grads = run(factory(), {"left": left, "right": right}, backend64, {"output": seed})
    ref, ref_grads = torch_grads(fn, {"left": left, "right": right}, seed)
    np.testing.assert_allclose(out["output"], ref, rtol=1e-12)
    for k in ("left", "right"):
        np.testing.assert_allclose(grads[k], ref_grads[k], rtol=1e-10, atol=1e-12)


def test_power_with_gradients(backend64, rng):
    base, exponent = rng.uniform(0.5, 2.0, (3, 4)), rng.uniform(-1.0, 2.0, (4,))
    seed = rng.standard_normal((3, 4))
    out, grads = run(M.Power(), {"base": base, "exponent": exponent}, backend64, {"output": seed})
    ref, ref_grads = torch_grads(torch.pow, {"base": base, "exponent": exponent}, seed)
    np.testing.assert_allclose(out["output"], ref, rtol=1e-12)
    np.testing.assert_allclose(grads["base"], ref_grads["base"], rtol=1e-10)
    np.testing.assert_allclose(grads["exponent"], ref_grads["exponent"], rtol=1e-10)


@pytest.mark.parametrize("lshape,rshape", [((3, 4), (4, 5)), ((2, 3, 4), (4, 5)),
                                           ((2, 3, 4), (2, 4, 5)), ((4,), (4, 5)),
                                           ((3, 4), (4,)), ((1, 3, 4), (2, 4, 2))])
def test_matmul_with_gradients(lshape, rshape, backend64, rng):
    left, right = rng.standard_normal(lshape), rng.standard_normal(rshape)
    out_shape = np.matmul(left, right).shape
    seed = rng.standard_normal(out_shape)
    out, grads = run(M.MatrixMultiply(), {"left": left, "right": right}, backend64,
                     {"output": seed})
    ref, ref_grads = torch_grads(torch.matmul, {"left": left, "right": right}, seed)
    np.testing.assert_allclose(out["output"], ref, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(grads["left"], ref_grads["left"], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(grads["right"], ref_grads["right"], rtol=1e-10, atol=1e-12)


REDUCTIONS = [
    (M.Sum, lambda x, a, k: x.sum(dim=a, keepdim=k) if a is not None else x.sum()),
    (M.Mean, lambda x, a, k: x.mean(dim=a, keepdim=k) if a is not None else x.mean()),
    (M.Prod, lambda x, a, k: x.prod(dim=a, keepdim=k) if a is not None else x.prod()),
]


@pytest.mark.parametrize("factory,fn", REDUCTIONS)
@pytest.mark.parametrize("axis,keepdim", [(None, False), (1, False), (-1, True), (0, True)])
def test_reductions_with_gradients(factory, fn, axis, keepdim, backend64, rng):
    x = rng.uniform(0.5, 1.5, (3, 4))
    y_shape = fn(torch.tensor(x), axis, keepdim).shape
    seed = rng.standard_normal(tuple(y_shape))
    out, grads = run(factory(axis=axis, keepdim=keepdim), {"input": x}, backend64,
                     {"output": seed})
    ref, ref_grads = torch_grads(lambda t: fn(t, axis, keepdim), {"input": x}, seed)
    np.testing.assert_allclose(out["output"], ref, rtol=1e-12)
    np.testing.assert_allclose(grads["input"], ref_grads["input"], rtol=1e-10)


@pytest.mark.parametrize("axis", [None, 0, (0, 2)])
def test_max_min_and_variance(axis, backend64, rng):
    x = rng.standard_normal((3, 4, 5))
    dims = axis if axis is None or isinstance(axis, tuple) else (axis,)
    ref_max = torch.tensor(x).amax(dim=dims) if dims else torch.tensor(x).max()
    out = run(M.Max(axis=axis), {"input": x}, backend64)
    np.testing.assert_allclose(out["output"], ref_max.numpy())
    out = run(M.Min(axis=axis), {"input": x}, backend64)
    ref_min = torch.tensor(x).amin(dim=dims) if dims else torch.tensor(x).min()
    np.testing.assert_allclose(out["output"], ref_min.numpy())
    seed = rng.standard_normal(ref_max.shape)
    out, grads = run(M.Variance(axis=axis, correction=1.0), {"input": x}, backend64,
                     {"output": seed})
    fn = lambda t: t.var(dim=dims, unbiased=True) if dims else t.var(unbiased=True)
    ref, ref_grads = torch_grads(fn, {"input": x}, seed)
    np.testing.assert_allclose(out["output"], ref, rtol=1e-12)
    np.testing.assert_allclose(grads["input"], ref_grads["input"], rtol=1e-10)


def test_argmax_argmin(backend64, rng):
    x = rng.standard_normal((4, 6))
    assert np.array_equal(run(M.ArgMax(axis=1), {"input": x}, backend64)["output"],
                          np.argmax(x, axis=1))
    assert np.array_equal(run(M.ArgMin(axis=0), {"input": x}, backend64)["output"],
                          np.argmin(x, axis=0))
    assert run(M.ArgMax(), {"input": x}, backend64)["output"] == np.argmax(x)


SHAPE_OPS = [
    (lambda: M.Reshape((6, -1)), lambda t: t.reshape(6, -1)),
    (lambda: M.Transpose((2, 0, 1)), lambda t: t.permute(2, 0, 1)),
    (M.Transpose, lambda t: t.permute(2, 1, 0)),
    (lambda: M.Flatten(start_dim=1), lambda t: t.flatten(1)),
    (M.Flatten, lambda t: t.flatten()),
    (lambda: M.Unsqueeze(axis=1), lambda t: t.unsqueeze(1)),
    (lambda: M.Slice(1, None, 2, axis=2), lambda t: t[:, :, 1::2]),
    (lambda: M.BroadcastTo((5, 2, 3, 4)), lambda t: t.expand(5, 2, 3, 4)),
]


@pytest.mark.parametrize("factory,fn", SHAPE_OPS)
def test_shape_ops_with_gradients(factory, fn, backend64, rng):
    x = rng.standard_normal((2, 3, 4))
    ref = fn(torch.tensor(x))
    seed = rng.standard_normal(tuple(ref.shape))
    out, grads = run(factory(), {"input": x}, backend64, {"output": seed})
    _, ref_grads = torch_grads(fn, {"input": x}, seed)
    np.testing.assert_allclose(out["output"], ref.numpy())
    np.testing.assert_allclose(grads["input"], ref_grads["input"], rtol=1e-12)


@pytest.mark.parametrize("shape", [(16, 10), (10, 12), (12, 7), (9, 9), (16, 5), (3, 16),
                                   (16, 16)])
def test_transposes_of_small_float32_matrices(shape, backend32, rng):
    # Up to 16 x 16 the schedule transposes in registers: 16 x 16 through a
    # network of whole-register shuffles, the smaller ones of more than 64
    # elements padded to 16 x 16 for it (its poison lanes must not show), the
    # others through one shuffle.
    x = rng.standard_normal(shape).astype(np.float32)
    seed = rng.standard_normal(shape[::-1]).astype(np.float32)
    out, grads = run(M.Transpose(), {"input": x}, backend32, {"output": seed})
    np.testing.assert_array_equal(out["output"], x.T)
    np.testing.assert_array_equal(grads["input"], seed.T)


def test_concat_with_gradients(backend64, rng):
    a, b = rng.standard_normal((2, 3)), rng.standard_normal((2, 5))
    seed = rng.standard_normal((2, 8))
    out, grads = run(M.Concat(n=2, axis=1), {"input1": a, "input2": b}, backend64,
                     {"output": seed})
    ref, ref_grads = torch_grads(lambda x, y: torch.cat([x, y], 1),
                                 {"input1": a, "input2": b}, seed)
    np.testing.assert_allclose(out["output"], ref)
    np.testing.assert_allclose(grads["input1"], ref_grads["input1"])
    np.testing.assert_allclose(grads["input2"], ref_grads["input2"])


def test_where_with_gradients(backend64, rng):
    cond = rng.random((3, 4)) > 0.5
    a, b = rng.standard_normal((3, 4)), rng.standard_normal((4,))
    pm = ml.compile(M.Where(), backend64, shapes={"cond": [3, 4], "input1": [3, 4],
                                                   "input2": [4]},
                    trainable_keys=["input1", "input2"])
    seed = rng.standard_normal((3, 4))
    out, grads = pm.evaluate({"input1": a, "input2": b}, {"cond": cond},
                             output_gradients={"output": seed})
    np.testing.assert_allclose(out["output"], np.where(cond, a, b))
    np.testing.assert_allclose(grads["input1"], np.where(cond, seed, 0))
    np.testing.assert_allclose(grads["input2"], np.where(cond, 0, seed).sum(0))


def test_comparisons_and_logic(backend64, rng):
    a, b = rng.integers(0, 3, (3, 4)).astype(float), rng.integers(0, 3, (4,)).astype(float)
    for factory, ref in [(M.Equal, np.equal), (M.NotEqual, np.not_equal), (M.Less, np.less),
                         (M.LessEqual, np.less_equal), (M.Greater, np.greater),
                         (M.GreaterEqual, np.greater_equal)]:
        out = run(factory(), {"left": a, "right": b}, backend64)["output"]
        assert out.dtype == np.bool_
        assert np.array_equal(out, ref(a, b)), factory


LOSSES = [
    (M.SquaredError, lambda p, t: (p - t) ** 2, anyv, anyv),
    (M.AbsoluteError, lambda p, t: (p - t).abs(), anyv, anyv),
    (M.HingeLoss, lambda p, t: torch.clamp(1 - p * t, min=0), anyv,
     lambda rng, s: np.sign(rng.standard_normal(s))),
    (M.QuadHingeLoss, lambda p, t: torch.clamp(1 - p * t, min=0) ** 2, anyv,
     lambda rng, s: np.sign(rng.standard_normal(s))),
    (lambda: M.QuantileLoss(quantile=0.3),
     lambda p, t: torch.maximum(0.3 * (t - p), (0.3 - 1) * (t - p)), anyv, anyv),
    (M.KLDivergence, lambda p, t: t * (t.log() - p.log()), prob, prob),
    (lambda: M.BinaryCrossEntropy(input_type="logits"),
     lambda p, t: F.binary_cross_entropy_with_logits(p, t, reduction="none"), anyv, prob),
    (lambda: M.BinaryCrossEntropy(input_type="probs"),
     lambda p, t: F.binary_cross_entropy(p, t, reduction="none"), prob, prob),
]


@pytest.mark.parametrize("factory,fn,gen_p,gen_t", LOSSES)
def test_losses_with_gradients(factory, fn, gen_p, gen_t, backend64, rng):
    p, t = gen_p(rng, (4, 3)), gen_t(rng, (4, 3))
    seed = rng.standard_normal((4, 3))
    out, grads = run(factory(), {"input": p, "target": t}, backend64, {"output": seed})
    ref, ref_grads = torch_grads(fn, {"input": p, "target": t}, seed)
    np.testing.assert_allclose(out["output"], ref, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(grads["input"], ref_grads["input"], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(grads["target"], ref_grads["target"], rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("input_type", ["logits", "probs", "log_probs"])
def test_cross_entropy_class_indices(input_type, backend64, rng):
    logits = rng.standard_normal((5, 4))
    x = {"logits": logits, "probs": torch.softmax(torch.tensor(logits), 1).numpy(),
         "log_probs": torch.log_softmax(torch.tensor(logits), 1).numpy()}[input_type]
    target = rng.integers(0, 4, 5)
    pm = ml.compile(M.CrossEntropy(input_type=input_type), backend64,
                    shapes={"input": [5, 4], "target": [5]}, trainable_keys=["input"])
    seed = rng.standard_normal(5)
    out, grads = pm.evaluate({"input": x}, {"target": target}, output_gradients={"output": seed})
    tx = torch.tensor(x, requires_grad=True)
    logp = {"logits": torch.log_softmax(tx, 1), "probs": tx.log(), "log_probs": tx}[input_type]
    ref = F.nll_loss(logp, torch.tensor(target), reduction="none")
    ref.backward(torch.tensor(seed))
    np.testing.assert_allclose(out["output"], ref.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(grads["input"], tx.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_cross_entropy_probability_targets(backend64, rng):
    logits, target = rng.standard_normal((3, 4)), rng.dirichlet(np.ones(4), 3)
    pm = ml.compile(M.CrossEntropy(categorical=False), backend64,
                    shapes={"input": [3, 4], "target": [3, 4]}, trainable_keys=["input"])
    seed = rng.standard_normal(3)
    out, grads = pm.evaluate({"input": logits}, {"target": target},
                             output_gradients={"output": seed})
    tx = torch.tensor(logits, requires_grad=True)
    ref = -(torch.tensor(target) * torch.log_softmax(tx, 1)).sum(1)
    ref.backward(torch.tensor(seed))
    np.testing.assert_allclose(out["output"], ref.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(grads["input"], tx.grad.numpy(), rtol=1e-10)


@pytest.mark.parametrize("axis", [-1, -2, 0])
def test_negative_axes(axis, backend64, rng):
    """I64 attributes come back unsigned from ODS getters; negative axes must
    still count from the end (this once indexed out of bounds)."""
    a, b = rng.standard_normal((3, 2)), rng.standard_normal((3, 2))
    out = run(M.Concat(n=2, axis=axis), {"input1": a, "input2": b}, backend64)
    np.testing.assert_allclose(out["output"], np.concatenate([a, b], axis=axis))
    x = rng.standard_normal((2, 3, 4))
    out = run(M.Flatten(start_dim=-2), {"input": x}, backend64)
    np.testing.assert_allclose(out["output"], x.reshape(2, 12))
    out = run(M.ArgMax(axis=-1), {"input": x}, backend64)
    np.testing.assert_array_equal(out["output"], np.argmax(x, axis=-1))
