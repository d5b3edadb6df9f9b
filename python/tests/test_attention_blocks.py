# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""Scaled dot-product attention as the CPU schedule computes it, against
torch in float64, on one and two threads, with the host's kernels and
AVX2's: the product of the softmax with V is tiled over blocks of rows of
each head, and the softmax's chain and the product of Q and K^T that it
reads are fused into each block (Scheduler::fuseAttentionBlocks), so that a
block's scores never leave the L1 cache (heads of [batch, heads, rows,
size] attention, or the batch of [batch, rows, size]). Rows that 8 does not divide take
blocks of a divisor; heads of a few rows, head sizes that are not whole
vectors, and a causal mask; gradients, where the softmax is read again by the
backward pass, keep the unfused form."""

import numpy as np
import pytest
import torch

import mithril as ml
from mithril.models import Model, ScaledDotProduct

TARGETS = ["host", "haswell"]
# [batch, heads, rows, head size], and [batch, rows, size] (one head, no
# reshapes between the products and the softmax)
SHAPES = [(2, 4, 128, 32), (1, 2, 100, 16), (2, 3, 17, 8), (1, 2, 64, 13), (1, 1, 520, 64),
          (4, 64, 32), (3, 100, 24)]


def _compile(shape, causal, threads, target, dtype=ml.float32, **kwargs):
    model = Model()
    model |= ScaledDotProduct(is_causal=causal)(query="q", key="k", value="v",
                                                output=ml.IOKey("y"))
    return ml.compile(model, ml.MlirBackend(dtype=dtype, num_threads=threads),
                      shapes={name: list(shape) for name in "qkv"},
                      cpu_options=None if target == "host" else {"target_cpu": target}, **kwargs)


def _attention(q, k, v, causal):
    # (torch 1.13, Debian's, has no F.scaled_dot_product_attention.)
    scores = q @ k.transpose(-2, -1) / np.sqrt(q.shape[-1])
    if causal:
        rows = q.shape[-2]
        scores = scores.masked_fill(torch.ones(rows, rows).triu(1).bool(), float("-inf"))
    return torch.softmax(scores, -1) @ v


def _check(pm, data, causal, rtol, atol):
    y = pm.evaluate({}, data)["y"]
    q, k, v = (torch.from_numpy(data[name].astype(np.float64)) for name in "qkv")
    np.testing.assert_allclose(y, _attention(q, k, v, causal).numpy(), rtol=rtol, atol=atol)


def _inputs(shape, seed=0):
    rng = np.random.default_rng(seed + sum(shape))
    # Scores of a few units: the softmax's maximum and sum both matter.
    return {name: (rng.standard_normal(shape) * 1.5).astype(np.float32) for name in "qkv"}


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("shape", SHAPES)
def test_attention_matches_torch(shape, causal, target, threads):
    _check(_compile(shape, causal, threads, target, inference=True), _inputs(shape), causal,
           rtol=2e-5, atol=2e-6)


@pytest.mark.parametrize("threads", [1, 2])
def test_float64_attention(threads):
    shape = (2, 2, 48, 16)
    data = {k: v.astype(np.float64) for k, v in _inputs(shape, seed=3).items()}
    _check(_compile(shape, True, threads, "host", dtype=ml.float64, inference=True), data, True,
           rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize("threads", [1, 2])
def test_attention_gradients(threads):
    shape = (2, 2, 64, 16)
    data = {k: v.astype(np.float64) for k, v in _inputs(shape, seed=5).items()}
    model = Model()
    model |= ScaledDotProduct(is_causal=True)(
        query=ml.IOKey("q", differentiable=True), key=ml.IOKey("k", differentiable=True),
        value=ml.IOKey("v", differentiable=True), output=ml.IOKey("y"))
    pm = ml.compile(model, ml.MlirBackend(dtype=ml.float64, num_threads=threads),
                    shapes={name: list(shape) for name in "qkv"})
    tq, tk, tv = (torch.tensor(data[name], requires_grad=True) for name in "qkv")
    ty = _attention(tq, tk, tv, True)
    seed = np.random.default_rng(7).standard_normal(shape)
    ty.backward(torch.from_numpy(seed))
    out, grads = pm.evaluate(data, {}, output_gradients={"y": seed})
    np.testing.assert_allclose(out["y"], ty.detach().numpy(), rtol=1e-11, atol=1e-12)
    for name, tensor in zip("qkv", (tq, tk, tv)):
        np.testing.assert_allclose(grads[name], tensor.grad.numpy(), rtol=1e-10, atol=1e-12,
                                   err_msg=name)


# Masks compiled in (an attn_mask in constant_keys) that hide the columns
# after some in each row: the rows split into parts with only the columns
# a row of each part sees (maskedRowParts). Rows that see no column keep
# torch's NaN; masks that hide nothing at the end of a row split nothing.
def _mask(kind, rows):
    i, j = np.meshgrid(np.arange(rows), np.arange(rows), indexing="ij")
    visible = {
        "window": (j <= i) & (j > i - 24),  # sliding window of 24
        "prefix": (j <= i) | (j < 40),  # prefix LM: 40 columns for all
        "padding": j < rows - rows // 3,  # the last third of the keys
        "anticausal": j >= i,  # the last columns always seen
        "random": np.random.default_rng(rows).random((rows, rows)) < 0.3,
        "blocks": (j // 32) <= (i // 32),  # causal by blocks of 32
        "masked-row": j <= i,
    }[kind]
    if kind == "random":
        visible[:, 0] = True
    if kind == "masked-row":
        visible[7] = False
    return np.where(visible, 0.0, -np.inf).astype(np.float32)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("kind", ["window", "prefix", "padding", "anticausal", "random", "blocks",
                                  "masked-row"])
@pytest.mark.parametrize("shape", [(2, 2, 128, 32), (2, 96, 16)])
def test_compiled_in_masks_match_torch(shape, kind, target, threads):
    rows = shape[-2]
    mask = _mask(kind, rows)
    model = Model()
    model |= ScaledDotProduct(is_causal=False, use_attn_mask=True)(
        query="q", key="k", value="v", attn_mask="attn_mask", output=ml.IOKey("y"))
    pm = ml.compile(model, ml.MlirBackend(num_threads=threads),
                    shapes={name: list(shape) for name in "qkv"}, constant_keys={"attn_mask": mask},
                    cpu_options=None if target == "host" else {"target_cpu": target}, inference=True)
    data = _inputs(shape, seed=11)
    y = pm.evaluate({}, data)["y"]
    q, k, v = (torch.from_numpy(data[name].astype(np.float64)) for name in "qkv")
    scores = q @ k.transpose(-2, -1) / np.sqrt(shape[-1]) + torch.from_numpy(mask.astype(np.float64))
    want = (torch.softmax(scores, -1) @ v).numpy()
    if kind == "masked-row":
        assert np.isnan(y[..., 7, :]).all()
    np.testing.assert_allclose(y, want, rtol=2e-5, atol=2e-6)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("mask_shape", [(1, 1, 128, 128), (2, 1, 128, 128), (2, 4, 128, 128)])
def test_broadcast_and_per_batch_masks(mask_shape, threads):
    # A causal mask broadcast over the batch and heads (read with zeros for
    # its unit dimensions, which the heads' merge once crashed on), or one
    # of each entry: the parts take the columns some entry's row sees (the
    # second batch entry also hides its last 28 keys, all but the first).
    shape = (2, 4, 128, 32)
    causal = np.where(np.triu(np.ones((128, 128), bool), 1), -np.inf, 0.0)
    mask = np.broadcast_to(causal, mask_shape).astype(np.float32)
    if mask_shape[0] == 2:
        mask[1, ..., 100:] = -np.inf
        mask[1, ..., :, 0] = 0.0
    model = Model()
    model |= ScaledDotProduct(is_causal=False, use_attn_mask=True)(
        query="q", key="k", value="v", attn_mask="attn_mask", output=ml.IOKey("y"))
    pm = ml.compile(model, ml.MlirBackend(num_threads=threads),
                    shapes={name: list(shape) for name in "qkv"}, constant_keys={"attn_mask": mask},
                    inference=True)
    data = _inputs(shape, seed=13)
    y = pm.evaluate({}, data)["y"]
    q, k, v = (torch.from_numpy(data[name].astype(np.float64)) for name in "qkv")
    scores = q @ k.transpose(-2, -1) / np.sqrt(shape[-1]) + torch.from_numpy(mask.astype(np.float64))
    np.testing.assert_allclose(y, (torch.softmax(scores, -1) @ v).numpy(), rtol=2e-5, atol=2e-6)
