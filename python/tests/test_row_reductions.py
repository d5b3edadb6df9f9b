# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""Row reductions as the CPU schedule computes them, against torch in float64,
on one and two threads, with the host's kernels and AVX2's:

- a row reduction (a softmax's maximum and sum, a layer norm's moments, an
  int8 weight's row scales) is fused into the row blocks of the op that reads
  it broadcast along the rows (Scheduler::fuseRowReductions), together with
  the element-wise ops between them; blocks of up to 8 rows, fewer where rows
  are long or 8 does not divide them;
- rows that are not whole vectors (1000 float32) are split into their whole
  vectors and a rest of one partial vector (splitColumnRemainders);
- a reduction loop carries its tile's lanes across the row and reduces them
  once after it (carryLanePartials), float32 sums in float64 lanes."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import mithril as ml
from mithril.models import (Divide, LayerNorm, Linear, LogSoftmax, Max, Model, Softmax,
                            Subtract, Sum)

# (rows, width): whole vectors and rests, rows 8 divides and not, long rows
# (blocks of fewer rows), a single row, rows narrower than a vector, and
# tensors that fit half the L1 (not blocked).
SHAPES = [(256, 1000), (64, 4096), (13, 1001), (520, 17), (1, 8192), (250, 784), (24, 17),
          (40, 10)]
TARGETS = ["host", "haswell"]


def _compile(block, shape, threads, target, **kwargs):
    model = Model()
    model |= block.connect(input="x", output=ml.IOKey("y"))
    return ml.compile(model, ml.MlirBackend(num_threads=threads), shapes={"x": list(shape)},
                      cpu_options=None if target == "host" else {"target_cpu": target}, **kwargs)


def _input(shape, seed=0):
    # Rows of different scales and offsets: the maximum and the mean matter.
    rng = np.random.default_rng(seed + shape[0] * 7 + shape[1])
    x = rng.standard_normal(shape) * rng.uniform(0.5, 4, (shape[0], 1))
    return (x + rng.uniform(-3, 3, (shape[0], 1))).astype(np.float32)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("shape", SHAPES)
def test_softmax_and_log_softmax(shape, target, threads):
    x = _input(shape)
    reference = torch.from_numpy(x.astype(np.float64))
    for block, torch_fn in ((Softmax(), torch.softmax), (LogSoftmax(), torch.log_softmax)):
        pm = _compile(block, shape, threads, target, inference=True)
        y = pm.evaluate({}, {"x": x})["y"]
        np.testing.assert_allclose(y, torch_fn(reference, -1).numpy(), rtol=2e-6, atol=1e-7)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("shape", SHAPES)
def test_layer_norm_and_its_gradients(shape, target, threads):
    x = _input(shape, seed=1)
    rng = np.random.default_rng(shape[1])
    w = rng.standard_normal(shape[1]).astype(np.float32)
    b = rng.standard_normal(shape[1]).astype(np.float32)
    seed = rng.standard_normal(shape).astype(np.float32)
    pm = _compile(LayerNorm(), shape, threads, target)
    names = {key.rsplit(".", 1)[-1]: key for key in pm.randomize_params()}
    out, grads = pm.evaluate({names["weight"]: w, names["bias"]: b}, {"x": x},
                             output_gradients={"y": seed})
    grads = {key.rsplit(".", 1)[-1]: value for key, value in grads.items()}
    tx = torch.tensor(x.astype(np.float64), requires_grad=True)
    tw = torch.tensor(w.astype(np.float64), requires_grad=True)
    tb = torch.tensor(b.astype(np.float64), requires_grad=True)
    y = F.layer_norm(tx, (shape[1],), tw, tb, 1e-5)
    y.backward(torch.from_numpy(seed.astype(np.float64)))
    scale = np.abs(y.detach().numpy()).max()
    np.testing.assert_allclose(out["y"], y.detach().numpy(), rtol=0, atol=2e-6 * scale)
    for name, tensor in (("weight", tw), ("bias", tb)):
        want = tensor.grad.numpy()
        np.testing.assert_allclose(grads[name], want, rtol=0,
                                   atol=2e-6 * np.sqrt(shape[0]) * np.abs(want).max())


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("shape", SHAPES)
def test_row_sums_and_maxima_read_back_along_the_rows(shape, target, threads):
    # x - max(x) and p / sum(p): each reduction fused into its reader's rows,
    # the maximum also an output (yielded by the row loop). Every other row
    # is all negative: the maxima's lanes start below any value.
    x = _input(shape, seed=2)
    x[::2] = -np.abs(x[::2]) - 1
    p = np.abs(x) + 0.5
    model = Model()
    model |= Max(axis=-1, keepdim=True).connect(input="x", output=ml.IOKey("m"))
    model |= Sum(axis=-1, keepdim=True).connect(input="p", output="s")
    model |= Subtract().connect(left="x", right="m", output=ml.IOKey("shifted"))
    model |= Divide().connect(numerator="p", denominator="s", output=ml.IOKey("shares"))
    pm = ml.compile(model, ml.MlirBackend(num_threads=threads),
                    shapes={"x": list(shape), "p": list(shape)}, inference=True,
                    cpu_options=None if target == "host" else {"target_cpu": target})
    out = pm.evaluate({}, {"x": x, "p": p})
    m = x.max(axis=-1, keepdims=True)
    np.testing.assert_array_equal(out["m"], m)
    np.testing.assert_array_equal(out["shifted"], x - m)
    np.testing.assert_allclose(out["shares"],
                               p / p.astype(np.float64).sum(axis=-1, keepdims=True), rtol=1e-6)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("batch", [1, 16])
def test_int8_linear_with_weights_given_at_each_call(batch, target, threads):
    # The weight's row scales (max |w| along each output's row) and levels,
    # computed at each call, one row block at a time.
    rng = np.random.default_rng(batch)
    x = rng.standard_normal((batch, 1000)).astype(np.float32)
    w = (rng.standard_normal((500, 1000)) * rng.uniform(0.1, 2, (500, 1))).astype(np.float32)
    b = rng.standard_normal(500).astype(np.float32)
    model = Model()
    model |= Linear(500).connect(input="x", output=ml.IOKey("y"))
    quantized = ml.compile(model, ml.MlirBackend(num_threads=threads, quantize="int8"),
                           shapes={"x": [batch, 1000]}, inference=True,
                           cpu_options=None if target == "host" else {"target_cpu": target})
    names = {key.rsplit(".", 1)[-1]: key for key in quantized.randomize_params()}
    y = quantized.evaluate({names["weight"]: w, names["bias"]: b}, {"x": x})["y"]
    reference = x.astype(np.float64) @ w.T.astype(np.float64) + b
    # Per-row int8 weights and per-tensor uint8 activations: about 1% of the
    # products' scale.
    error = np.abs(y - reference).max() / np.abs(reference).max()
    assert error < 2e-2, error


@pytest.mark.parametrize("threads", [1, 2])
def test_operator_fusion_off_gives_the_same_rows(threads):
    # optimizations={"fusion": False} also keeps each row reduction a pass of
    # its own: the same softmax and layer norm, to rounding.
    shape = (256, 1000)
    x = _input(shape, seed=3)
    for block in (Softmax, LayerNorm):
        outputs = []
        for fusion in (True, False):
            model = Model()
            model |= block().connect(input="x", output=ml.IOKey("y"))
            pm = ml.compile(model, ml.MlirBackend(num_threads=threads), shapes={"x": list(shape)},
                            inference=True, optimizations={"fusion": fusion})
            params = {key: np.ones(value.shape, np.float32)
                      for key, value in pm.randomize_params().items()}
            outputs.append(pm.evaluate(params, {"x": x})["y"])
        np.testing.assert_allclose(outputs[0], outputs[1], rtol=1e-5, atol=1e-6)
