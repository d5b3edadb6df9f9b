# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""float32 3x3 convolutions with 8 or more input channels and 64 or more
output channels, which lower by Winograd's F(2x2, 3x3)
(lib/Conversion/MithrilToLinalg/Winograd.cpp), and those with 8 or more
followed by a 2x2 max pooling, which pool each output block in the transform,
against torch in float64. Each test checks that its convolution took the path
it tests (the profile's kernel names)."""

import numpy as np
import pytest
import torch

import mithril as ml
from mithril import models as M

F = torch.nn.functional


def reference(x, w, b, padding, groups=1):
    return F.conv2d(torch.tensor(x, dtype=torch.float64), torch.tensor(w, dtype=torch.float64),
                    torch.tensor(b, dtype=torch.float64), padding=padding, groups=groups)


def assert_close(actual, expected):
    # f32 inputs, f32 sums of up to C x 9 products: the transforms add a few
    # roundings, well inside this bound (observed ~4e-7 of values ~2).
    scale = max(1.0, float(np.abs(expected).max()))
    np.testing.assert_allclose(actual, expected, rtol=2e-5, atol=2e-5 * scale)


def winograd_kernels(pm, *args, **kwargs):
    """The names of the Winograd stages one call of `pm.evaluate` runs, and its
    result."""
    with ml.profile() as p:
        result = pm.evaluate(*args, **kwargs)
    return {kernel for _, kernel, _, _ in p.records if "winograd" in kernel}, result


def random_inputs(rng, n, c, f, h, w, groups=1):
    x = rng.standard_normal((n, c, h, w)).astype(np.float32)
    wt = (rng.standard_normal((f, c // groups, 3, 3)) / np.sqrt(9 * c)).astype(np.float32)
    b = rng.standard_normal(f).astype(np.float32)
    return x, wt, b


@pytest.mark.parametrize("n,c,f,h,w,padding", [
    (2, 8, 64, 14, 14, 1),   # even output, whole register tiles of tiles
    (16, 8, 64, 14, 14, 1),  # 784 tiles: 768 on two-vector tiles, the last 16 apart
    (1, 32, 64, 14, 14, 1),  # 49 tiles: padded to a whole number of lanes
    (3, 16, 64, 9, 11, 1),   # odd output: the last block row and column cut
    (2, 12, 72, 7, 6, 0),    # no padding
    (2, 8, 64, 5, 4, 2),     # padding wider than the kernel's reach
    (1, 9, 64, 2, 2, 1),     # one tile
    (1, 8, 64, 56, 56, 1),   # parity rows of 29: strided reads of more than 16
    (1, 8, 64, 37, 40, 1),   # parity rows of 21 and 20, odd output rows
])
def test_forward_matches_torch(n, c, f, h, w, padding, rng):
    x, wt, b = random_inputs(rng, n, c, f, h, w)
    conv = M.Convolution2D(kernel_size=3, out_channels=f, padding=padding)
    pm = ml.compile(conv, ml.MlirBackend(), shapes={"input": [n, c, h, w]}, inference=True)
    stages, out = winograd_kernels(pm, {"weight": wt, "bias": b}, {"input": x})
    assert any("winograd products" in stage for stage in stages)
    out = out["output"]
    assert out.dtype == np.float32
    assert_close(out, reference(x, wt, b, padding).numpy())


@pytest.mark.parametrize("c,f,winograd", [(64, 32, False), (8, 16, False), (32, 64, True)])
def test_unpooled_output_channels_decide(c, f, winograd, rng):
    # Without a pooling, fewer than 64 output channels do not pay for the
    # transforms (64 -> 32 channels ran 20% slower by Winograd than on flat
    # rows): such a convolution is computed on flat rows, and matches torch.
    x, wt, b = random_inputs(rng, 2, c, f, 10, 10)
    conv = M.Convolution2D(kernel_size=3, out_channels=f, padding=1)
    pm = ml.compile(conv, ml.MlirBackend(), shapes={"input": [2, c, 10, 10]}, inference=True)
    stages, out = winograd_kernels(pm, {"weight": wt, "bias": b}, {"input": x})
    assert bool(stages) == winograd
    assert_close(out["output"], reference(x, wt, b, 1).numpy())


def test_asymmetric_padding_and_groups(rng):
    # Two groups of 8 input and 64 output channels each go through the
    # Winograd lowering one by one.
    x, wt, b = random_inputs(rng, 2, 16, 128, 10, 9, groups=2)
    conv = M.Convolution2D(kernel_size=3, out_channels=128, padding=((1, 0), (2, 1)), groups=2)
    pm = ml.compile(conv, ml.MlirBackend(), shapes={"input": list(x.shape)}, inference=True)
    stages, out = winograd_kernels(pm, {"weight": wt, "bias": b}, {"input": x})
    assert stages
    out = out["output"]
    xp = np.pad(x, ((0, 0), (0, 0), (1, 0), (2, 1)))
    assert_close(out, reference(xp, wt, b, 0, groups=2).numpy())


@pytest.mark.parametrize("relu", [True, False])
@pytest.mark.parametrize("n,c,f,h,w", [
    (2, 8, 16, 14, 14), (1, 32, 64, 8, 8), (3, 12, 24, 6, 10),
    (16, 32, 64, 14, 14),  # the bench CNN's: 784 tiles in whole register tiles
    (1, 8, 20, 26, 26),    # 169 tiles and 20 channels: rows and columns split off
])
def test_pooled_blocks_match_torch(relu, n, c, f, h, w, rng):
    x, wt, b = random_inputs(rng, n, c, f, h, w)
    model = M.Model()
    model |= M.Convolution2D(kernel_size=3, out_channels=f, padding=1).connect(input="input")
    if relu:
        model += M.Relu()
    model += M.MaxPool2D(kernel_size=2).connect(output="out")
    pm = ml.compile(model, ml.MlirBackend(), shapes={"input": [n, c, h, w]}, inference=True)
    params = {k: (wt if k.endswith("weight") else b) for k in pm.randomize_params()}
    out = pm.evaluate(params, {"input": x})["out"]
    y = reference(x, wt, b, 1)
    expected = F.max_pool2d(torch.relu(y) if relu else y, 2).numpy()
    assert out.shape == expected.shape
    assert_close(out, expected)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("n,h", [(16, 14), (4, 16)])
def test_pooled_blocks_in_chunks_of_tiles(threads, n, h, rng):
    # The products and the pooled output transform in blocks of tiles, one
    # loop of them per thread's chunk (784 tiles: 2 x 7 blocks of 56 rows on
    # two threads, 14 on one; 256 tiles: blocks of 64), against torch.
    x, wt, b = random_inputs(rng, n, 32, 64, h, h)
    model = M.Model()
    model |= M.Convolution2D(kernel_size=3, out_channels=64, padding=1).connect(input="input")
    model += M.Relu()
    model += M.MaxPool2D(kernel_size=2).connect(output="out")
    pm = ml.compile(model, ml.MlirBackend(num_threads=threads), shapes={"input": [n, 32, h, h]},
                    inference=True)
    params = {k: (wt if k.endswith("weight") else b) for k in pm.randomize_params()}
    out = pm.evaluate(params, {"input": x})["out"]
    expected = F.max_pool2d(torch.relu(reference(x, wt, b, 1)), 2).numpy()
    assert_close(out, expected)


def test_pooling_of_an_odd_output_and_a_shared_relu(rng):
    # An odd output (7 x 7) pools its last row and column away; a ReLU whose
    # result is also an output is not folded into the pooling. Both still
    # match torch.
    x, wt, b = random_inputs(rng, 2, 8, 64, 7, 7)
    model = M.Model()
    model |= M.Convolution2D(kernel_size=3, out_channels=64, padding=1).connect(input="input")
    model += M.Relu().connect(output="activation")
    model += M.MaxPool2D(kernel_size=2).connect(output="out")
    model.expose_keys("activation", "out")
    pm = ml.compile(model, ml.MlirBackend(), shapes={"input": [2, 8, 7, 7]}, inference=True)
    params = {k: (wt if k.endswith("weight") else b) for k in pm.randomize_params()}
    stages, out = winograd_kernels(pm, params, {"input": x})
    assert stages
    y = torch.relu(reference(x, wt, b, 1))
    assert_close(out["activation"], y.numpy())
    assert_close(out["out"], F.max_pool2d(y, 2).numpy())


@pytest.mark.parametrize("target", ["host", "haswell"])
@pytest.mark.parametrize("size", [8, 14])
def test_gradients_through_a_winograd_forward(size, target, rng):
    # Training keeps the ReLU's result for the backward pass, so the forward
    # convolution lowers by Winograd without the pooling folded in; the
    # gradients match torch's. 14 x 14: rows of 7 tiles, 7 lanes of 8 written
    # through masks, which AVX2 code writes as pieces of 4, 2 and 1
    # (mithril-split-masked-writes).
    x, wt, b = random_inputs(rng, 2, 8, 64, size, size)
    model = M.Model()
    model |= M.Convolution2D(kernel_size=3, out_channels=64, padding=1).connect(input="input")
    model += M.Relu()
    model += M.MaxPool2D(kernel_size=2).connect(output="out")
    pm = ml.compile(model, ml.MlirBackend(), shapes={"input": [2, 8, size, size]},
                    trainable_keys=["input"],
                    cpu_options=None if target == "host" else {"target_cpu": target})
    params = {k: (wt if k.endswith("weight") else b) for k in pm.randomize_params()}
    tx, tw, tb = (torch.tensor(v, dtype=torch.float64, requires_grad=True) for v in (x, wt, b))
    y = F.max_pool2d(torch.relu(F.conv2d(tx, tw, tb, padding=1)), 2)
    seed = rng.standard_normal(tuple(y.shape)).astype(np.float32)
    y.backward(torch.tensor(seed, dtype=torch.float64))
    stages, (out, grads) = winograd_kernels(pm, {**params, "input": x},
                                            output_gradients={"out": seed})
    assert stages
    assert_close(out["out"], y.detach().numpy())
    wkey = next(k for k in params if k.endswith("weight"))
    bkey = next(k for k in params if k.endswith("bias"))
    assert_close(grads["input"], tx.grad.numpy())
    assert_close(grads[wkey], tw.grad.numpy())
    assert_close(grads[bkey], tb.grad.numpy())


@pytest.mark.parametrize("groups", [1, 2])
def test_pooled_blocks_without_bias(groups, rng):
    # No bias: the pooled output transform adds nothing; with two groups of
    # 8 channels the pooling stays a separate op after each group's transforms.
    x, wt, _ = random_inputs(rng, 2, 16, 16, 8, 10, groups=groups)
    model = M.Model()
    model |= M.Convolution2D(kernel_size=3, out_channels=16, padding=1, use_bias=False,
                             groups=groups).connect(input="input")
    model += M.Relu()
    model += M.MaxPool2D(kernel_size=2).connect(output="out")
    pm = ml.compile(model, ml.MlirBackend(), shapes={"input": list(x.shape)}, inference=True)
    (key,) = pm.randomize_params()
    out = pm.evaluate({key: wt}, {"input": x})["out"]
    y = F.conv2d(torch.tensor(x, dtype=torch.float64), torch.tensor(wt, dtype=torch.float64),
                 padding=1, groups=groups)
    assert_close(out, F.max_pool2d(torch.relu(y), 2).numpy())
