# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""A first layer: a convolution of few input channels (gray, RGB, RGBA)
followed by its ReLU and a 2x2 max pooling, which lowers channels-last with
the pooling over whole vectors of channels (Convolution.cpp
lowerFewChannelPooledConv), against torch in float64; in bf16, against the
float32 model's result rounded (the convolution sums in float32 either
way, and rounding commutes with the ReLU and the maximum)."""

import numpy as np
import pytest
import torch

import mithril as ml
from mithril import models as M
from mithril.types import from_bfloat16_bits, to_bfloat16_bits

F = torch.nn.functional


def first_layer(f, kernel, padding, relu, bias):
    model = M.Model()
    model |= M.Convolution2D(kernel_size=kernel, out_channels=f, padding=padding,
                             use_bias=bias).connect(input="input")
    if relu:
        model += M.Relu()
    model += M.MaxPool2D(kernel_size=2).connect(output="out")
    return model


def reference(x, params, padding, relu):
    w = next(v for k, v in params.items() if k.endswith("weight"))
    b = next((v for k, v in params.items() if k.endswith("bias")), None)
    y = F.conv2d(torch.tensor(x, dtype=torch.float64), torch.tensor(w, dtype=torch.float64),
                 None if b is None else torch.tensor(b, dtype=torch.float64), padding=padding)
    return F.max_pool2d(torch.relu(y) if relu else y, 2).numpy()


def bf16_values(values):
    return from_bfloat16_bits(to_bfloat16_bits(values)).astype(np.float32)


CASES = [
    # n, c, f, kernel, padding, h, w, relu, bias
    (4, 1, 32, 3, 1, 28, 28, True, True),    # the bench CNN's: 7 columns x 32 channels a tile
    (2, 1, 16, 3, 1, 28, 28, True, True),    # one register of channels
    (2, 1, 48, 3, 1, 12, 12, True, True),    # channels in a tile and a half
    (2, 3, 64, 5, 2, 20, 24, True, True),    # RGB, 5x5
    (3, 2, 32, 3, 0, 18, 10, False, True),   # no ReLU, no padding: 8 x 16 x 4 pooled
    (2, 1, 32, 3, 1, 12, 12, True, False),   # no bias
    (1, 4, 16, 3, 1, 34, 34, True, True),    # RGBA, 34 columns (tiles of 2)
    (2, 1, 32, 3, 2, 30, 30, True, True),    # padding wider than the kernel's reach
]


# Threads: rows computed a few at a time and pooled in L1, in a loop per
# thread's chunk of images (3 images on two threads: whole, no chunks).
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("n,c,f,kernel,padding,h,w,relu,bias", CASES)
def test_float32_matches_torch(n, c, f, kernel, padding, h, w, relu, bias, threads, rng):
    pm = ml.compile(first_layer(f, kernel, padding, relu, bias),
                    ml.MlirBackend(num_threads=threads), shapes={"input": [n, c, h, w]},
                    inference=True)
    params = pm.randomize_params(seed=1)
    x = rng.standard_normal((n, c, h, w)).astype(np.float32)
    out = pm.evaluate(params, {"input": x})["out"]
    expected = reference(x, params, padding, relu)
    assert out.dtype == np.float32 and out.shape == expected.shape
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5 * np.abs(expected).max())


@pytest.mark.parametrize("n,c,f,kernel,padding,h,w,relu,bias", CASES[:5])
def test_bfloat16_is_float32_rounded(n, c, f, kernel, padding, h, w, relu, bias, rng):
    model = first_layer(f, kernel, padding, relu, bias)
    shapes = {"input": [n, c, h, w]}
    wide = ml.compile(model, ml.MlirBackend(), shapes=shapes, inference=True)
    narrow = ml.compile(model, ml.MlirBackend(dtype=ml.bfloat16), shapes=shapes, inference=True)
    params = {k: bf16_values(v) for k, v in wide.randomize_params(seed=2).items()}
    x = bf16_values(rng.standard_normal((n, c, h, w)))
    out = narrow.evaluate({k: to_bfloat16_bits(v) for k, v in params.items()},
                          {"input": to_bfloat16_bits(x)})["out"]
    expected = to_bfloat16_bits(wide.evaluate(params, {"input": x})["out"])
    # (bf16 results come back as float32 holding bf16 values.)
    np.testing.assert_array_equal(to_bfloat16_bits(out), expected)
