# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""Products of batches and embedding gradients as the compiler lowers them,
against torch in float64, with their gradients:

- a matrix applied to every matrix of a batch ([B, T, K] @ [K, N], a Linear
  on a sequence) is one [B*T, K] @ [K, N] product, and its gradient by the
  matrix one product of the batch's stacked rows; batches of equal shape
  beyond one batch axis ([B, H, T, D], attention's) one batch_matmul;
  broadcast batches keep the general contraction;
- an embedding table's gradient adds each lookup's row to its table row
  (repeated indices sum)."""

import numpy as np
import pytest
import torch

import mithril as ml
from mithril.models import Embedding, MatrixMultiply, Model

TARGETS = ["host", "haswell"]

# (left, right): a matrix on batches of rank 3 and 4, a right matrix with
# unit batch axes, equal batches of rank 3, 4 and 5, broadcast batches, and
# a vector on either side.
PRODUCTS = [
    ((4, 8, 16), (16, 12)),
    ((2, 3, 5, 16), (16, 7)),
    ((4, 8, 16), (1, 16, 12)),
    ((2, 3, 5, 16), (1, 1, 16, 7)),
    ((3, 5, 16), (3, 16, 7)),
    ((2, 3, 5, 16), (2, 3, 16, 7)),
    ((2, 2, 3, 4, 9), (2, 2, 3, 9, 5)),
    ((2, 1, 5, 16), (2, 3, 16, 7)),
    ((5, 16), (2, 3, 16, 7)),
    ((2, 3, 5, 16), (16,)),
]


def _options(target):
    return None if target == "host" else {"target_cpu": target}


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("left,right", PRODUCTS)
def test_product_and_its_gradients(left, right, target, threads):
    model = Model()
    model |= MatrixMultiply()(left=ml.IOKey("a", differentiable=True),
                              right=ml.IOKey("b", differentiable=True), output=ml.IOKey("y"))
    pm = ml.compile(model, ml.MlirBackend(dtype=ml.float64, num_threads=threads),
                    shapes={"a": list(left), "b": list(right)}, cpu_options=_options(target))
    rng = np.random.default_rng(len(left) * 10 + len(right))
    a, b = rng.standard_normal(left), rng.standard_normal(right)
    ta = torch.tensor(a, requires_grad=True)
    tb = torch.tensor(b, requires_grad=True)
    ty = ta @ tb
    seed = rng.standard_normal(tuple(ty.shape))
    ty.backward(torch.from_numpy(seed))
    out, grads = pm.evaluate({"a": a, "b": b}, {}, output_gradients={"y": seed})
    np.testing.assert_allclose(out["y"], ty.detach().numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(grads["a"], ta.grad.numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(grads["b"], tb.grad.numpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("target", TARGETS)
def test_float32_linear_on_a_sequence(target):
    # The GPT's MLP product in float32: [16, 32, 64] @ [64, 256], against
    # float64 within float32's rounding of a 64-deep sum (the gradient by
    # the weight sums 512 rows).
    model = Model()
    model |= MatrixMultiply()(left=ml.IOKey("a", differentiable=True),
                              right=ml.IOKey("b", differentiable=True), output=ml.IOKey("y"))
    pm = ml.compile(model, ml.MlirBackend(num_threads=2),
                    shapes={"a": [16, 32, 64], "b": [64, 256]}, cpu_options=_options(target))
    rng = np.random.default_rng(7)
    a = rng.standard_normal((16, 32, 64)).astype(np.float32)
    b = rng.standard_normal((64, 256)).astype(np.float32)
    seed = rng.standard_normal((16, 32, 256)).astype(np.float32)
    out, grads = pm.evaluate({"a": a, "b": b}, {}, output_gradients={"y": seed})
    a64, b64, s64 = (x.astype(np.float64) for x in (a, b, seed))
    for got, want in ((out["y"], a64 @ b64), (grads["a"], s64 @ b64.T),
                      (grads["b"], a64.reshape(-1, 64).T @ s64.reshape(-1, 256))):
        np.testing.assert_allclose(got, want, rtol=0, atol=2e-5 * np.abs(want).max())


# Index shapes: one axis, a batch of sequences, one index; tables narrower
# and wider than a vector.
@pytest.mark.parametrize("indices_shape", [(12,), (3, 5), ()])
@pytest.mark.parametrize("rows,width", [(7, 5), (40, 33)])
def test_embedding_gradient_sums_repeated_lookups(indices_shape, rows, width):
    model = Model()
    model |= Embedding(rows, width)(input="i", weight="w", output=ml.IOKey("y"))
    pm = ml.compile(model, ml.MlirBackend(dtype=ml.float64),
                    shapes={"i": list(indices_shape)})
    rng = np.random.default_rng(rows + len(indices_shape))
    # Few distinct rows: most are looked up several times, some never.
    indices = rng.integers(0, min(rows, 4), indices_shape) * 2
    w = rng.standard_normal((rows, width))
    seed = rng.standard_normal(indices_shape + (width,))
    out, grads = pm.evaluate({"w": w}, {"i": indices}, output_gradients={"y": seed})
    tw = torch.tensor(w, requires_grad=True)
    ty = torch.nn.functional.embedding(torch.from_numpy(np.asarray(indices)), tw)
    ty.backward(torch.from_numpy(seed))
    np.testing.assert_allclose(out["y"], ty.detach().numpy(), rtol=0, atol=0)
    np.testing.assert_allclose(grads["w"], tw.grad.numpy(), rtol=1e-13, atol=1e-13)
