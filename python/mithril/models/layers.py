# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""Composite models of the library: layers built from primitives."""

from __future__ import annotations

import numbers

import numpy as np

from ..errors import MithrilError
from ..framework import BaseModel, IOKey, Model, Primitive, TerminalSpec
from .primitives import (Add, MatrixMultiply, Multiply, Relu, Sigmoid, Subtract, Tanh,
                         Transpose)


def _pair(v, n: int) -> list[int]:
    """An int or a sequence of `n` ints (kernel size, stride, ...), as a list."""
    if isinstance(v, (list, tuple)):
        if len(v) != n:
            raise MithrilError(f"expected {n} values, got {len(v)}: {list(v)}")
        return [int(x) for x in v]
    return [int(v)] * n


def _padding(padding, kernel: list[int], spatial: int) -> list[int]:
    """Mithril's padding forms as [before, after] per spatial axis, flattened:
    an int; "same" (half the odd kernel each side) or "valid"; one int per axis
    (both sides); [before, after] pairs per axis; for 1-D, one (before, after)
    pair."""
    if hasattr(padding, "name") and not isinstance(padding, str):  # an enum
        padding = padding.name
    if isinstance(padding, str):
        mode = padding.lower()
        if mode == "valid":
            return [0] * (2 * spatial)
        if mode != "same":
            raise MithrilError(f"padding must be 'same', 'valid' or numbers, got {padding!r}")
        if any(k % 2 == 0 for k in kernel):
            raise MithrilError(f"'same' padding needs an odd kernel size, got {kernel}")
        return [k // 2 for k in kernel for _ in range(2)]
    if not isinstance(padding, (list, tuple)):
        return [int(padding)] * (2 * spatial)
    items = list(padding)
    if spatial == 1 and len(items) == 2 and all(not isinstance(p, (list, tuple)) for p in items):
        return [int(items[0]), int(items[1])]
    if len(items) != spatial:
        raise MithrilError(f"expected {spatial} padding values, got {len(items)}: {items}")
    pads = []
    for p in items:
        if isinstance(p, (list, tuple)):
            if len(p) != 2:
                raise MithrilError(f"a padding pair is (before, after), got {list(p)}")
            pads += [int(p[0]), int(p[1])]
        else:
            pads += [int(p), int(p)]
    return pads


def _param(name: str, shape) -> IOKey:
    return IOKey(name, shape=shape, differentiable=True)


class Linear(Model):
    """output = input @ weight.T + bias, with weight stored [dimension, in].

    Linear(dimension) is Mithril's form; Linear(in_features, out_features), as
    torch writes it, also fixes the input size. Linear(dimension, False) is
    Mithril's positional use_bias."""

    _connect_order = ("input", "weight", "output")

    def __init__(self, dimension: int | None = None, *out_features: int | bool,
                 use_bias: bool = True, name=None) -> None:
        # A second positional argument: torch's out_features (the first is
        # then the input size), or a bool, Mithril's use_bias.
        in_features = None
        if len(out_features) > 1:
            raise TypeError(f"Linear() takes at most 2 positional arguments "
                            f"({len(out_features) + 1} given)")
        if out_features and isinstance(out_features[0], (bool, np.bool_)):
            if use_bias is not True:
                raise TypeError("Linear() got multiple values for argument 'use_bias'")
            use_bias = bool(out_features[0])
        elif out_features:
            if not isinstance(out_features[0], numbers.Integral):
                raise TypeError(f"Linear() argument 'out_features' must be an int, "
                                f"not {type(out_features[0]).__name__}")
            in_features, dimension = dimension, int(out_features[0])
        super().__init__(name)
        self.dimension = dimension
        self.in_features = in_features
        self |= Transpose().connect(input=_param("weight", (dimension, in_features)),
                                    output="_wt")
        mm = MatrixMultiply()
        if use_bias:
            self |= mm.connect(left="input", right="_wt", output="_mm")
            self |= Add().connect(left="_mm", right=_param("bias", (dimension,)),
                                  output=IOKey("output", expose=True))
        else:
            self |= mm.connect(left="input", right="_wt", output=IOKey("output", expose=True))
        self._cin = self.nets["input"]
        self._cout = self.nets["output"]
        self.nets["_wt"].auto = True
        if use_bias:
            self.nets["_mm"].auto = True


class _ConvOp(Primitive):
    inputs = ("input", "weight", "bias")

    def __init__(self, op: str, spatial: int, out_channels, kernel_size, stride, padding,
                 dilation, groups, use_bias) -> None:
        k = _pair(kernel_size, spatial)
        pads = _padding(padding, k, spatial)
        self.op = op
        if not use_bias:
            self.inputs = ("input", "weight")
        super().__init__(None)
        self._set_attrs(stride=_pair(stride, spatial), padding=pads,
                        dilation=_pair(dilation, spatial), groups=int(groups))
        self._specs["weight"] = TerminalSpec("param", (out_channels, None, *k))
        if use_bias:
            self._specs["bias"] = TerminalSpec("param", (out_channels,))


class Convolution2D(Model):
    """2-D convolution over [N, C, H, W] with weight [out_channels, C / groups, k, k]."""

    # The original's Convolution2D.connect(input, weight, stride, padding,
    # dilation, output).
    _connect_order = ("input", "weight", "stride", "padding", "dilation", "output")
    _op, _spatial = "conv2d", 2

    def __init__(self, kernel_size, out_channels: int | None = None, stride=1, padding=0,
                 dilation=1, groups: int = 1, use_bias: bool = True, name=None) -> None:
        super().__init__(name)
        conv = _ConvOp(self._op, self._spatial, out_channels, kernel_size, stride, padding,
                       dilation, groups, use_bias)
        kw = dict(input="input", weight=_param("weight", conv.input_specs["weight"].shape),
                  output=IOKey("output", expose=True))
        if use_bias:
            kw["bias"] = _param("bias", (out_channels,))
        self |= conv.connect(**kw)


class Convolution1D(Convolution2D):
    """1-D convolution over [N, C, L] with weight [out_channels, C / groups, k]."""
    _op, _spatial = "conv1d", 1


class _PoolOp(Primitive):
    def __init__(self, op, spatial, kernel_size, stride, padding, dilation) -> None:
        self.op = op
        k = _pair(kernel_size, spatial)
        s = k if stride is None else _pair(stride, spatial)
        pads = _padding(padding, k, spatial)
        super().__init__(None)
        self._set_attrs(kernel_size=k, stride=s, padding=pads, dilation=_pair(dilation, spatial))


def _pool(cls_name: str, op: str, spatial: int):
    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, name=None) -> None:
        _PoolOp.__init__(self, op, spatial, kernel_size, stride, padding, dilation)
        self.name = name
    return type(cls_name, (_PoolOp,), {"__init__": __init__, "inputs": ("input",)})


MaxPool1D = _pool("MaxPool1D", "max_pool1d", 1)
MaxPool2D = _pool("MaxPool2D", "max_pool2d", 2)
AvgPool2D = _pool("AvgPool2D", "avg_pool2d", 2)


class _LayerNormOp(Primitive):
    """layer_norm over the last axis, with the weight and bias it has: the op
    ties their size to the input's last axis."""
    op = "layer_norm"

    def __init__(self, eps: float, use_scale: bool = False, use_bias: bool = False) -> None:
        self.inputs = ("input",) + (("weight",) if use_scale else ()) + \
            (("bias",) if use_bias else ())
        super().__init__()
        self._set_attrs(eps=float(eps), scaled=bool(use_scale), shifted=bool(use_bias))
        for key in self.inputs[1:]:
            self._specs[key] = TerminalSpec("param", (None,))


class LayerNorm(Model):
    """Normalizes over the last axis, then scales and shifts."""

    # The original's LayerNorm.connect(input, output, ...).
    _connect_order = ("input", "output")

    def __init__(self, use_scale: bool = True, use_bias: bool = True, eps: float = 1e-5,
                 name=None) -> None:
        super().__init__(name)
        norm = _LayerNormOp(eps, use_scale, use_bias)
        params = {key: _param(key, (None,)) for key in norm.inputs[1:]}
        self |= norm.connect(input="input", **params, output=IOKey("output"))
        self._cin, self._cout = self.nets["input"], self.nets["output"]


class _BatchNormOp(Primitive):
    op = "batch_norm"
    inputs = ("input", "running_mean", "running_var", "weight", "bias")

    def __init__(self, eps: float, num_features) -> None:
        super().__init__(None)
        self._set_attrs(eps=float(eps))
        self._specs["running_mean"] = TerminalSpec("const", (num_features,))
        self._specs["running_var"] = TerminalSpec("const", (num_features,))
        self._specs["weight"] = TerminalSpec("param", (num_features,))
        self._specs["bias"] = TerminalSpec("param", (num_features,))


def _terminal(name: str):
    """`name` as a connection: "output" exposed, the others internal."""
    return IOKey(name) if name == "output" else name


class BatchNorm2D(Model):
    """The original's BatchNorm2D(num_features=None, use_scale=True,
    use_bias=True, eps=1e-5, momentum=0.1, inference=True) over the channels
    of [N, C, H, W]; weight and bias are [C] parameters (the original's are
    [1, C, 1, 1]).

    inference=True: (input - running_mean) / sqrt(running_var + eps) * weight
    + bias, with running_mean and running_var [C] data inputs.

    inference=False (training): the statistics of the batch over (N, H, W),
    the variance biased, and the outputs running_mean_out = (1 - momentum) *
    running_mean + momentum * batch mean and running_var_out, likewise from
    the unbiased batch variance. As in the original, the running statistics
    are state keys (bind_state_keys) starting at 0 and 1:
    `pm.evaluate(..., state=s)` uses s["running_mean"] and s["running_var"]
    and returns the updated ones (without num_features they are plain inputs
    and outputs, fed by the caller)."""

    def __init__(self, num_features: int | None = None, use_scale: bool = True,
                 use_bias: bool = True, eps: float = 1e-5, momentum: float = 0.1,
                 inference: bool = True, name=None) -> None:
        super().__init__(name)
        if inference:
            if (not use_scale or not use_bias) and num_features is None:
                raise MithrilError("BatchNorm2D: use_scale=False or use_bias=False needs "
                                   "num_features (the fixed scale and shift are [C])")
            norm = _BatchNormOp(eps, num_features)
            ones, zeros = (None if num_features is None else np.ones(num_features),
                           None if num_features is None else np.zeros(num_features))
            self |= norm.connect(
                input="input", running_mean=IOKey("running_mean", differentiable=False),
                running_var=IOKey("running_var", differentiable=False),
                weight=_param("weight", (num_features,)) if use_scale else ones,
                bias=_param("bias", (num_features,)) if use_bias else zeros,
                output=IOKey("output"))
            return
        self._training_form(num_features, use_scale, use_bias, float(eps), float(momentum))

    def _training_form(self, num_features, use_scale, use_bias, eps, momentum) -> None:
        from .primitives import Divide, Mean, Reshape, Sqrt, Variance
        axes = (0, 2, 3)
        self |= Mean(axis=axes, keepdim=True)(input="input", output="_mean")
        self |= Variance(axis=axes, keepdim=True)(input="input", output="_var")
        self |= Subtract()(left="input", right="_mean", output="_centered")
        self |= Add()(left="_var", right=eps, output="_var_eps")
        self |= Sqrt()(input="_var_eps", output="_std")
        last = "output" if not (use_scale or use_bias) else "_normalized"
        self |= Divide()(numerator="_centered", denominator="_std", output=_terminal(last))
        channel = (1, -1, 1, 1)  # [C] against [N, C, H, W]
        if use_scale:
            self |= Reshape(shape=channel)(input=_param("weight", (num_features,)),
                                           output="_weight4")
            scaled = "output" if not use_bias else "_scaled"
            self |= Multiply()(left=last, right="_weight4", output=_terminal(scaled))
            last = scaled
        if use_bias:
            self |= Reshape(shape=channel)(input=_param("bias", (num_features,)),
                                           output="_bias4")
            self |= Add()(left=last, right="_bias4", output=IOKey("output"))
        # The running statistics, updated with the batch's (unbiased variance).
        self |= Reshape(shape=(-1,))(input="_mean", output="_batch_mean")
        self |= Variance(axis=axes, correction=1.0)(input="input", output="_batch_var")
        for stat, batch in (("running_mean", "_batch_mean"), ("running_var", "_batch_var")):
            self |= Multiply()(left=IOKey(stat, shape=(num_features,), differentiable=False),
                               right=1.0 - momentum,
                               output=f"_{stat}_kept")
            self |= Multiply()(left=batch, right=momentum, output=f"_{stat}_new")
            self |= Add()(left=f"_{stat}_kept", right=f"_{stat}_new",
                          output=IOKey(f"{stat}_out"))
        self.expose_keys("output", "running_mean_out", "running_var_out")
        self._cin, self._cout = self.nets["input"], self.nets["output"]
        if num_features is not None:
            # The original's state keys, from zeros and ones.
            self.bind_state_keys("running_mean", "running_mean_out", np.zeros(num_features))
            self.bind_state_keys("running_var", "running_var_out", np.ones(num_features))


def _activation(spec):
    """An activation model from a model, a class, a library name (any case) or
    a model dictionary."""
    if isinstance(spec, BaseModel):
        return spec
    if isinstance(spec, type):
        return spec()
    if isinstance(spec, dict):
        from ..utils import dict_to_model
        return dict_to_model(spec)
    from .. import models
    matches = [name for name in dir(models) if name.lower() == str(spec).lower()
               and isinstance(getattr(models, name), type)
               and issubclass(getattr(models, name), BaseModel)]
    # The exact name first, then Mithril's own models before the torch-style
    # ones: "relu" stays Mithril's Relu, not torch_layers.ReLU.
    matches.sort(key=lambda name: (name != str(spec),
                                   getattr(models, name).__module__.endswith(".torch_layers")))
    if matches:
        return getattr(models, matches[0])()
    raise ValueError(f"unknown activation '{spec}'")


class MLP(Model):
    """Linear layers of `dimensions`, each followed by its activation."""

    def __init__(self, activations, dimensions, name=None) -> None:
        super().__init__(name)
        if len(activations) != len(dimensions):
            raise ValueError("MLP needs one activation per dimension")
        for i, (act, dim) in enumerate(zip(activations, dimensions)):
            # Mithril names the parameters weight0, bias0, weight1, ...
            layer = Linear(dim, name=f"layer{i}")
            params = dict(weight=f"weight{i}", bias=f"bias{i}")
            if i == 0:
                self |= layer.connect(input="input", **params)
            else:
                self += layer.connect(**params)
            if act is not None:
                self += _activation(act)
        self.nets[self.canonical_output].expose = True
        if self._cout.auto:
            self._rename(self._cout, "output")


class Cell(Model):
    """The original's base class of the recurrent cells (RNNCell, LSTMCell):
    what ManyToOne, OneToMany and EncoderDecoder take as `cell_type`."""


class RNNCell(Cell):
    """Mithril's RNN cell. input is [N, 1, d_in]; prev_hidden is [M, 1, d_hid]
    with M >= N (a batch sorted by length that shrinks over time): the cell
    updates the first N rows.

        hidden = tanh(prev_hidden[:N] @ w_hh.T + input @ w_ih.T + bias_h)
        output = hidden @ w_ho.T + bias_o
        hidden_compl = prev_hidden[N:]  (the rows whose sequences have ended)

    w_ih is [d_hid, d_in], w_hh [d_hid, d_hid], w_ho [d_out, d_hid]. N (axis
    0 of input) is read at compile time; when both N and M are dynamic sizes,
    M is taken to equal N (all of prev_hidden is used and hidden_compl has no
    rows), the cell's form before it took a larger state."""

    _connect_order = ("input", "prev_hidden", "w_ih", "w_hh", "w_ho", "bias_h", "bias_o",
                      "hidden", "hidden_compl", "output")

    def __init__(self, name=None) -> None:
        super().__init__(name)
        from .parity import _Rows  # parity imports this module
        self |= Transpose().connect(input=_param("w_ih", (None, None)), output="_wih_t")
        self |= Transpose().connect(input=_param("w_hh", (None, None)), output="_whh_t")
        self |= Transpose().connect(input=_param("w_ho", (None, None)), output="_who_t")
        rows = dict(owner="RNNCell", same_when_dynamic=True)
        self |= _Rows("head", **rows).connect(input="prev_hidden", like="input", output="_prev")
        self |= MatrixMultiply().connect(left="_prev", right="_whh_t", output="_b")
        self |= MatrixMultiply().connect(left="input", right="_wih_t", output="_a")
        self |= Add().connect(left="_b", right="_a", output="_ab")
        self |= Add().connect(left="_ab", right=_param("bias_h", (None,)), output="_pre")
        self |= Tanh().connect(input="_pre", output=IOKey("hidden"))
        self |= MatrixMultiply().connect(left="hidden", right="_who_t", output="_o")
        self |= Add().connect(left="_o", right=_param("bias_o", (None,)), output=IOKey("output"))
        self |= _Rows("tail", **rows).connect(input="prev_hidden", like="input",
                                              output=IOKey("hidden_compl"))
        for n in ("_wih_t", "_whh_t", "_who_t", "_prev", "_a", "_b", "_ab", "_pre", "_o"):
            self.nets[n].auto = True
        self.nets["hidden"].expose = True
        self._cin, self._cout = self.nets["input"], self.nets["output"]


class Layer(Model):
    """Linear followed by an activation (a model, or its name)."""

    def __init__(self, activation, dimension: int | None = None, name=None) -> None:
        super().__init__(name)
        act = _activation(activation)
        lin = Linear(dimension)
        self |= lin.connect(input="input", weight="weight", bias="bias", output="_lin")
        self |= act.connect(input="_lin", output=IOKey("output"))
        self.nets["_lin"].auto = True
        self._cin, self._cout = self.nets["input"], self.nets["output"]


class LogisticRegression(Model):
    """output = input @ weight.T + bias (logits); probs_output = sigmoid(output)."""

    def __init__(self, name=None) -> None:
        super().__init__(name)
        self |= Linear(1).connect(input="input", weight="weight", bias="bias",
                                  output=IOKey("output"))
        self |= Sigmoid().connect(input="output", output=IOKey("probs_output", expose=True))
        self.nets["output"].expose = True
        self._cin, self._cout = self.nets["input"], self.nets["output"]


class LinearSVM(Model):
    """output = input @ weight.T + bias; decision_output = sign(output)."""

    def __init__(self, name=None) -> None:
        super().__init__(name)
        from .primitives import Sign
        self |= Linear(1).connect(input="input", weight="weight", bias="bias",
                                  output=IOKey("output"))
        self |= Sign().connect(input="output", output=IOKey("decision_output", expose=True))
        self.nets["output"].expose = True
        self._cin, self._cout = self.nets["input"], self.nets["output"]


class PolynomialRegression(Model):
    """Linear regression on the polynomial features of `input` up to `degree`."""

    def __init__(self, degree: int, dimension: int | None = None, name=None) -> None:
        super().__init__(name)
        from .primitives import PolynomialFeatures
        self |= PolynomialFeatures(degree).connect(input="input", output="_features")
        self |= Linear(dimension).connect(input="_features", weight="weight", bias="bias",
                                          output=IOKey("output"))
        self.nets["_features"].auto = True
        self._cin, self._cout = self.nets["input"], self.nets["output"]
