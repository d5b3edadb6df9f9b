# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""torch.nn-style layers, with torch's names, arguments and semantics.

Mithril's own layers keep their names and meaning (`Convolution2D(kernel_size,
out_channels)`, `BatchNorm2D` with running statistics as inputs, `MaxPool2D`,
`Relu`, `Flatten(start_dim=0)`, `Linear(dimension)`). This module adds the
layers as torch.nn spells them, built from those models:

    Conv2d(in_channels, out_channels, kernel_size=None, stride=1, padding=None,
           dilation=1, groups=1, bias=True, padding_mode="zeros")
    BatchNorm2d(num_features, eps=1e-5, momentum=0.1, affine=True)
    ReLU(inplace=False)
    MaxPool2d(kernel_size=2, stride=None, padding=0, dilation=1, ceil_mode=False)
    AvgPool2d(kernel_size=2, stride=None, padding=0, ceil_mode=False,
              count_include_pad=True)
    GlobalAvgPool2d()                     mean over H and W: [N, C, H, W] -> [N, C]
    Flatten(start_dim=1, end_dim=-1)      keeps the batch axis, as torch.nn.Flatten
    Linear(in_features, out_features, bias=True)

`Flatten` and `Linear` share their names with Mithril's models, so they are
only here: `mithril.models.Flatten` stays Mithril's (start_dim=0). Code
written torch-style imports from this module:

    from mithril.models import Model, Add
    from mithril.models.torch_layers import (Conv2d, BatchNorm2d, ReLU, MaxPool2d,
                                             GlobalAvgPool2d, Flatten, Linear)

The names that clash with nothing (Conv2d, BatchNorm2d, ReLU, MaxPool2d,
AvgPool2d, GlobalAvgPool2d) are also exported from `mithril.models`.

Where torch leaves a size required and the Mithril documents call the layer
without it, the documents' form is given a default: `Conv2d(64, 64)` is a
3x3 convolution with padding 1 (shape-preserving, as the documents' residual
block needs) and `MaxPool2d()` pools 2x2. Any call torch accepts means what it
means in torch.
"""

from __future__ import annotations

import numbers

import numpy as np

from ..errors import MithrilError, ShapeError
from ..framework import IOKey, Model
from . import layers as _layers
from . import primitives as _primitives

__all__ = ["AvgPool2d", "BatchNorm2d", "Conv2d", "Flatten", "GlobalAvgPool2d", "Linear",
           "MaxPool2d", "ReLU"]


def _is_int(value) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_))


def _sizes(cls: str, arg: str, value, minimum: int, n: int = 2) -> tuple[int, ...]:
    """An int or a sequence of `n` ints, each at least `minimum`, as a tuple:
    torch's `kernel_size=3` or `kernel_size=(3, 5)`."""
    items = tuple(value) if isinstance(value, (list, tuple)) else (value,) * n
    if len(items) != n or not all(_is_int(v) for v in items):
        raise TypeError(f"{cls}() argument '{arg}' must be an int or a tuple of {n} ints, "
                        f"not {value!r}")
    if any(v < minimum for v in items):
        raise ShapeError(f"{cls}() argument '{arg}' must be at least {minimum}, got {value!r}")
    return tuple(int(v) for v in items)


def _check_flag(cls: str, arg: str, value: bool, supported: bool, why: str) -> None:
    if bool(value) != supported:
        raise MithrilError(f"{cls}() does not support {arg}={value!r}: {why}")


class Conv2d(Model):
    """torch.nn.Conv2d: 2-D convolution of [N, in_channels, H, W] with weight
    [out_channels, in_channels / groups, kh, kw] and bias [out_channels].

    kernel_size  int or (kh, kw). Left out, it is 3 (torch requires it; the
                 Mithril documents write `Conv2d(64, 64)` for a 3x3 layer).
    padding      an int, (ph, pw), "same" or "valid", as torch. Left out it is 0,
                 torch's default, when kernel_size is given, and half the dilated
                 kernel (1 for 3x3: the output keeps H and W at stride 1) when
                 kernel_size is left out too, so that the documents'
                 `Conv2d(64, 64)` fits their residual block, whose output is added
                 to its input. "same" is torch's: stride 1 only, and the odd extra
                 row or column of an even kernel goes after (bottom, right).
    padding_mode "zeros" only.

    The parameters are `weight` and `bias`, in torch's layouts; in_channels fixes
    the input's channel count (a different one is a compile-time error). Built
    from Mithril's Convolution2D."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size=None, stride=1,
                 padding=None, dilation=1, groups: int = 1, bias: bool = True,
                 padding_mode: str = "zeros", name=None) -> None:
        cls = "Conv2d"
        for arg, value in (("in_channels", in_channels), ("out_channels", out_channels),
                           ("groups", groups)):
            if value < 1:
                raise ShapeError(f"{cls}() argument '{arg}' must be at least 1, got {value}")
        if in_channels % groups or out_channels % groups:
            raise ShapeError(f"{cls}(): in_channels ({in_channels}) and out_channels "
                             f"({out_channels}) must be divisible by groups ({groups})")
        if padding_mode != "zeros":
            raise MithrilError(f"{cls}() supports padding_mode='zeros' only, got "
                               f"{padding_mode!r}")
        kernel_given = kernel_size is not None
        kernel = _sizes(cls, "kernel_size", kernel_size if kernel_given else 3, 1)
        strides = _sizes(cls, "stride", stride, 1)
        dilations = _sizes(cls, "dilation", dilation, 1)
        pads = self._padding(padding, kernel_given, kernel, strides, dilations)
        super().__init__(name)
        self.in_channels, self.out_channels = int(in_channels), int(out_channels)
        self.kernel_size, self.stride, self.dilation = kernel, strides, dilations
        self.padding, self.groups = pads, int(groups)
        conv = _layers.Convolution2D(kernel_size=kernel, out_channels=self.out_channels,
                                     stride=strides, padding=pads, dilation=dilations,
                                     groups=self.groups, use_bias=bool(bias))
        weight_shape = (self.out_channels, self.in_channels // self.groups, *kernel)
        connections = dict(input="input", output=IOKey("output"),
                           weight=IOKey("weight", shape=weight_shape, differentiable=True))
        if bias:
            connections["bias"] = IOKey("bias", shape=(self.out_channels,), differentiable=True)
        self |= conv.connect(**connections)

    @staticmethod
    def _padding(padding, kernel_given, kernel, strides, dilations) -> list:
        """Torch's padding as [(before, after)] per spatial axis."""
        if padding is None:
            if kernel_given:
                return [(0, 0), (0, 0)]
            half = [d * (k - 1) // 2 for k, d in zip(kernel, dilations)]
            return [(p, p) for p in half]
        if isinstance(padding, str):
            mode = padding.lower()
            if mode == "valid":
                return [(0, 0), (0, 0)]
            if mode != "same":
                raise MithrilError(f"Conv2d() padding must be 'same', 'valid', an int or "
                                   f"(ph, pw), got {padding!r}")
            if any(s != 1 for s in strides):
                raise MithrilError("Conv2d() padding='same' is not supported for strided "
                                   "convolutions (as in torch)")
            pads = []
            for k, d in zip(kernel, dilations):
                total = d * (k - 1)
                pads.append((total // 2, total - total // 2))
            return pads
        return [(p, p) for p in _sizes("Conv2d", "padding", padding, 0)]


class BatchNorm2d(Model):
    """torch.nn.BatchNorm2d in evaluation form (`module.eval()`):

        output = (input - running_mean) / sqrt(running_var + eps) * weight + bias

    over the channels of [N, num_features, H, W]. weight and bias are parameters
    ([num_features], torch's names; with affine=False they are fixed at 1 and 0).
    running_mean and running_var are the layer's own state, not inputs: they
    start at 0 and 1, as in a fresh torch module, and are NumPy arrays that can
    be overwritten before compiling (`bn.running_mean[:] = tm.running_mean`); the
    compiled model takes their values as constants.

    Not supported: torch's training form. The statistics are always the running
    ones, also when the compiled model is trained (as torch does only after
    .eval()), and they are never updated: a compiled model has no state that
    evaluation could write back. `momentum` is accepted and kept for that reason
    only. Mithril's BatchNorm2D, by contrast, takes running_mean and running_var
    as inputs the caller feeds."""

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1,
                 affine: bool = True, name=None) -> None:
        if num_features < 1:
            raise ShapeError(f"BatchNorm2d() argument 'num_features' must be at least 1, "
                             f"got {num_features}")
        super().__init__(name)
        self.num_features, self.eps, self.momentum = int(num_features), float(eps), momentum
        self.affine = bool(affine)
        self._running_mean = np.zeros(self.num_features)
        self._running_var = np.ones(self.num_features)
        shape = (self.num_features,)
        if self.affine:
            weight = IOKey("weight", shape=shape, differentiable=True)
            bias = IOKey("bias", shape=shape, differentiable=True)
        else:
            weight, bias = np.ones(shape), np.zeros(shape)
        norm = _layers.BatchNorm2D(self.num_features, eps=self.eps)
        self |= norm.connect(input="input", running_mean=self._running_mean,
                             running_var=self._running_var, weight=weight, bias=bias,
                             output=IOKey("output"))

    def _set_stat(self, array: np.ndarray, value, what: str) -> None:
        value = np.asarray(value, dtype=np.float64)
        if value.shape != array.shape:
            raise ShapeError(f"BatchNorm2d() {what} must have shape {array.shape}, "
                             f"got {value.shape}")
        array[...] = value  # in place: the model's constant is this array

    @property
    def running_mean(self) -> np.ndarray:
        return self._running_mean

    @running_mean.setter
    def running_mean(self, value) -> None:
        self._set_stat(self._running_mean, value, "running_mean")

    @property
    def running_var(self) -> np.ndarray:
        return self._running_var

    @running_var.setter
    def running_var(self, value) -> None:
        self._set_stat(self._running_var, value, "running_var")


class ReLU(_primitives.Relu):
    """torch.nn.ReLU: max(input, 0). `inplace` is Relu's `in_place`: the
    result may take over its input's name; the numbers are the same."""

    def __init__(self, inplace: bool = False, name=None) -> None:
        super().__init__(in_place=inplace, name=name)
        self.inplace = bool(inplace)


def _pool_window(cls: str, kernel_size, stride, padding, ceil_mode) -> tuple:
    """torch's pooling window arguments, checked: (kernel, strides, pads)."""
    _check_flag(cls, "ceil_mode", ceil_mode, False, "only floor-mode output sizes are")
    kernel = _sizes(cls, "kernel_size", kernel_size, 1)
    strides = kernel if stride is None else _sizes(cls, "stride", stride, 1)
    pads = _sizes(cls, "padding", padding, 0)
    if any(p > k // 2 for p, k in zip(pads, kernel)):
        raise ShapeError(f"{cls}() padding {padding!r} must be at most half the kernel "
                         f"size {kernel}")
    return kernel, strides, pads


class MaxPool2d(_layers.MaxPool2D):
    """torch.nn.MaxPool2d over [N, C, H, W]: stride defaults to kernel_size,
    padding (at most half the kernel, as torch requires) counts as -inf.
    kernel_size defaults to 2 (torch requires it; the documents write
    `MaxPool2d()`). ceil_mode=True and return_indices are not supported."""

    def __init__(self, kernel_size=2, stride=None, padding=0, dilation=1,
                 ceil_mode: bool = False, name=None) -> None:
        kernel, strides, pads = _pool_window("MaxPool2d", kernel_size, stride, padding,
                                             ceil_mode)
        super().__init__(kernel, stride=strides, padding=pads,
                         dilation=_sizes("MaxPool2d", "dilation", dilation, 1), name=name)


class AvgPool2d(_layers.AvgPool2D):
    """torch.nn.AvgPool2d over [N, C, H, W]: stride defaults to kernel_size;
    padding counts as zeros in the average (count_include_pad=True, torch's
    default). kernel_size defaults to 2, as MaxPool2d's. Not supported:
    ceil_mode=True, count_include_pad=False with padding, divisor_override."""

    def __init__(self, kernel_size=2, stride=None, padding=0, ceil_mode: bool = False,
                 count_include_pad: bool = True, name=None) -> None:
        kernel, strides, pads = _pool_window("AvgPool2d", kernel_size, stride, padding,
                                             ceil_mode)
        if any(pads):
            _check_flag("AvgPool2d", "count_include_pad", count_include_pad, True,
                        "padding always counts in the average")
        super().__init__(kernel, stride=strides, padding=pads, name=name)


class GlobalAvgPool2d(_primitives.Mean):
    """The mean over the last two (spatial) axes: [N, C, H, W] -> [N, C], as
    torch's `x.mean((2, 3))` or AdaptiveAvgPool2d(1) followed by flatten(1)."""

    def __init__(self, name=None) -> None:
        super().__init__(axis=(-2, -1), keepdim=False, name=name)


class Flatten(_primitives.Flatten):
    """torch.nn.Flatten: joins the axes start_dim..end_dim. start_dim defaults
    to 1, keeping the batch axis ([N, C, H, W] -> [N, C*H*W]); Mithril's
    `mithril.models.Flatten` defaults to start_dim=0 and flattens to 1-D."""

    def __init__(self, start_dim: int = 1, end_dim: int = -1, name=None) -> None:
        super().__init__(start_dim=start_dim, end_dim=end_dim, name=name)


class Linear(_layers.Linear):
    """torch.nn.Linear: output = input @ weight.T + bias, weight [out_features,
    in_features], bias [out_features]; `bias=False` drops the bias. Mithril's
    `mithril.models.Linear(dimension)` leaves the input size to be inferred
    and names the flag use_bias."""

    def __init__(self, in_features: int, out_features: int, bias: bool = True,
                 name=None) -> None:
        for arg, value in (("in_features", in_features), ("out_features", out_features)):
            if value < 1:
                raise ShapeError(f"Linear() argument '{arg}' must be at least 1, got {value}")
        super().__init__(in_features, out_features, use_bias=bias, name=name)
        self.out_features = int(out_features)
