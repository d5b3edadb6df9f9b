# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""Checks against torch shared by several test files."""

import numpy as np
import torch

import mithril as ml
from mithril import models as M


def check_conv2d(backend, x, w, b, rng, *, stride=1, padding=0, dilation=1, groups=1,
                 rtol=1e-10, atol=1e-11):
    """A Convolution2D with `w`'s kernel and channels: its output and its
    gradients with respect to input, weight and bias, for a random output
    gradient, against torch.nn.functional.conv2d."""
    conv = M.Convolution2D(kernel_size=tuple(w.shape[2:]), out_channels=w.shape[0],
                           stride=stride, padding=padding, dilation=dilation, groups=groups)
    tx, tw, tb = (torch.tensor(v, requires_grad=True) for v in (x, w, b))
    ref = torch.nn.functional.conv2d(tx, tw, tb, stride, padding, dilation, groups)
    seed = rng.standard_normal(tuple(ref.shape))
    ref.backward(torch.tensor(seed))
    pm = ml.compile(conv, backend, shapes={"input": list(x.shape)},
                    trainable_keys=["input", "weight", "bias"])
    out, grads = pm.evaluate({"input": x, "weight": w, "bias": b},
                             output_gradients={"output": seed})
    np.testing.assert_allclose(out["output"], ref.detach().numpy(), rtol=rtol, atol=atol)
    for key, tensor in (("input", tx), ("weight", tw), ("bias", tb)):
        np.testing.assert_allclose(grads[key], tensor.grad.numpy(), rtol=rtol, atol=atol)
