# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""Models of Mithril's library that were still missing, built from the
existing primitives (no new ops), with the original's arguments, defaults
and terminal names:

    SiLU()                                   input -> output
    SwapAxes(axis1, axis2)                   input -> output
    Clamp()                                  input, min_val, max_val -> output
    ScaledDotProduct(is_causal=True, scale=None, dropout_p=0.0, use_attn_mask=False)
                                             query, key, value (, attn_mask) -> output
    GroupNorm(num_groups=32, use_scale=True, use_bias=True, eps=1e-5)
                                             input (, weight, bias) -> output
    PositionalEncoding(hidden_dim, max_len=5000)
                                             input -> output
    LSTMCell()                               input, prev_hidden, prev_cell, w_*, bias_*
                                             -> hidden, cell, hidden_compl, output

Where the original reads a size from a shape (GroupNorm reshapes to
`input.shape`, the causal mask is [L, S], LSTMCell slices `prev_hidden` at
`input.shape[0]`), a small helper primitive below reads that size from its
operand's type when the model is emitted and emits the existing ops (reshape,
slice, transpose, a constant) with it. Such a size must then be known at
compile time; where it is not, the helper says so, naming the model.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from ..errors import MithrilError
from ..framework import Model, Primitive
from ._compose import Composer
from .layers import Linear, _param
from .primitives import (Add, Concat, Greater, Less, MatrixMultiply, Mean, Multiply, Reciprocal,
                         Shape, Sigmoid, Slice, Softmax, Sqrt, Subtract, Tanh, Variance, Where)

__all__ = ["Arange", "Clamp", "Eye", "Floor", "GroupNorm", "IsNan", "LSTMCell", "NanToNum",
           "Ones", "PositionalEncoding", "ScaledDotProduct", "SiLU", "SwapAxes", "ZerosLike"]


# Helpers: existing ops whose attributes come from an operand's shape -------

def _shape_of(builder, value) -> list:
    """The compiled shape of `value`: ints, None where a size is dynamic."""
    shape, _ = builder.type_of(value)
    return list(shape)


def _op(builder, name: str, operands: list, attrs: dict, path: str) -> int:
    return builder.add_op(name, operands, attrs, path)[0]


class _FloatCast(Primitive):
    """input cast to the backend's float type (Cast takes a fixed dtype; the
    scale of an attention must follow the backend's)."""
    op = "cast"

    def __init__(self, name=None) -> None:
        super().__init__(name)
        self._set_attrs(element_type="float_like")


class _ReshapeLike(Primitive):
    """`input` reshaped to the shape of `like` (the original's
    `Reshape()(input=..., shape=like.shape)`). One dynamic size of `like`
    is left to the reshape to infer."""
    op = "reshape"
    inputs = ("input", "like")

    def emit(self, builder, operands, path, float_dtype="float32"):
        shape = _shape_of(builder, operands["like"])
        if sum(d is None for d in shape) > 1:
            raise MithrilError(f"{path}: reshaping back to {_show(shape)} needs all but one of "
                               f"its sizes known at compile time")
        target = [-1 if d is None else d for d in shape]
        return {"output": _op(builder, "reshape", [operands["input"]], {"shape": target}, path)}


class _GroupView(Primitive):
    """[B, C, H, W] viewed as [B, num_groups, C / num_groups * H * W], the
    original's `input.reshape((B, num_groups, -1))`."""
    op = "reshape"

    def __init__(self, num_groups: int, name=None) -> None:
        super().__init__(name)
        self.num_groups = num_groups

    def emit(self, builder, operands, path, float_dtype="float32"):
        shape = _shape_of(builder, operands["input"])
        groups = self.num_groups
        if len(shape) != 4:
            raise MithrilError(f"{path}: GroupNorm needs an input [B, C, H, W], got shape "
                               f"{_show(shape)}")
        channels = shape[1]
        if channels is not None and channels % groups:
            raise MithrilError(f"{path}: GroupNorm: {channels} channels do not split into "
                               f"{groups} groups")
        if shape[0] is not None:
            target = [shape[0], groups, -1]
        elif all(d is not None for d in shape[1:]):
            target = [-1, groups, int(np.prod(shape[1:])) // groups]
        else:
            raise MithrilError(f"{path}: GroupNorm needs the batch size, or else the channel "
                               f"and spatial sizes, known at compile time; got shape "
                               f"{_show(shape)}")
        return {"output": _op(builder, "reshape", [operands["input"]], {"shape": target}, path)}


class _CausalMask(Primitive):
    """scores [..., L, S] with -inf added where the key position j exceeds
    the query position i (torch's is_causal: the mask is tril(ones(L, S)))."""
    op = "add"

    def emit(self, builder, operands, path, float_dtype="float32"):
        shape = _shape_of(builder, operands["input"])
        queries, keys = shape[-2:]
        if queries is None or keys is None:
            raise MithrilError(f"{path}: ScaledDotProduct(is_causal=True) needs the query and "
                               f"key lengths known at compile time; got attention scores of "
                               f"shape {_show(shape)}")
        above = np.triu(np.ones((queries, keys), dtype=bool), k=1)
        mask = np.where(above, -np.inf, 0.0).astype(float_dtype)
        constant = builder.add_constant(mask, path + "_causal_mask")
        return {"output": _op(builder, "add", [operands["input"], constant], {}, path)}


class _SinusoidTable(Primitive):
    """The sinusoidal table [T, hidden_dim] for an input [..., T, hidden_dim]:
    table[t, 2k] = sin(t w_k), table[t, 2k + 1] = cos(t w_k) with
    w_k = exp(-2k log(10000) / hidden_dim), as the original computes it."""

    def __init__(self, hidden_dim: int, max_len: int, name=None) -> None:
        super().__init__(name)
        self.hidden_dim, self.max_len = hidden_dim, max_len

    def emit(self, builder, operands, path, float_dtype="float32"):
        shape = _shape_of(builder, operands["input"])
        if len(shape) < 2:
            raise MithrilError(f"{path}: PositionalEncoding needs an input [..., T, hidden_dim], "
                               f"got shape {_show(shape)}")
        length, width = shape[-2:]
        if width is not None and width != self.hidden_dim:
            raise MithrilError(f"{path}: PositionalEncoding(hidden_dim={self.hidden_dim}) got an "
                               f"input whose last axis is {width}")
        if length is None:
            raise MithrilError(f"{path}: PositionalEncoding needs the sequence length (axis -2 "
                               f"of the input) known at compile time; got shape {_show(shape)}")
        if length > self.max_len:
            raise MithrilError(f"{path}: PositionalEncoding: a sequence of {length} is longer "
                               f"than max_len={self.max_len}")
        table = sinusoid_table(length, self.hidden_dim).astype(float_dtype)
        return {"output": builder.add_constant(table, path + "_table")}


def sinusoid_table(length: int, hidden_dim: int) -> np.ndarray:
    """The first `length` rows of the original's positional encoding table.
    An odd hidden_dim (which the original's torch backend rejects) takes the
    cosines of the first hidden_dim // 2 frequencies."""
    position = np.arange(length, dtype=np.float64)[:, None]
    frequency = np.exp(np.arange(0, hidden_dim, 2, dtype=np.float64)
                       * (-math.log(10000.0) / hidden_dim))
    table = np.zeros((length, hidden_dim))
    table[:, 0::2] = np.sin(position * frequency)
    table[:, 1::2] = np.cos(position * frequency)[:, : hidden_dim // 2]
    return table


class _Rows(Primitive):
    """input[:N] (part "head") or input[N:] (part "tail") along axis 0, with
    N = like.shape[0]: the original LSTMCell's `prev_hidden[:N]`."""
    op = "slice"
    inputs = ("input", "like")

    def __init__(self, part: str, name=None) -> None:
        super().__init__(name)
        self.part = part

    def emit(self, builder, operands, path, float_dtype="float32"):
        like = _shape_of(builder, operands["like"])
        count = like[0] if like else None
        if count is None:
            raise MithrilError(f"{path}: LSTMCell needs the batch size of `input` (its axis 0) "
                               f"known at compile time, to take that many rows of the previous "
                               f"state")
        start, stop = (0, count) if self.part == "head" else (count, 2**62)
        attrs = {"axes": [0], "start": [start], "stop": [stop], "step": [1]}
        return {"output": _op(builder, "slice", [operands["input"]], attrs, path)}


def _show(shape) -> str:
    return "[" + ", ".join("?" if d is None else str(d) for d in shape) + "]"


# The models -------------------------------------------------------------------

class SiLU(Model):
    """output = input / (1 + exp(-input)), computed as input * sigmoid(input):
    the same function, but exp(-input) overflows for very negative inputs
    (below -88 in float32) and the quotient's gradient is then NaN."""

    def __init__(self, name=None) -> None:
        super().__init__(name)
        c = Composer(self)
        c(Multiply(), left="input", right=c(Sigmoid(), input="input"), output="output")
        c.finish("input")


class SwapAxes(Primitive):
    """input with axes axis1 and axis2 exchanged (numpy.swapaxes); negative
    axes count from the end. A transpose, whose permutation needs the input's
    rank: it is read from the compiled type."""
    op = "transpose"

    def __init__(self, axis1: int, axis2: int, name=None) -> None:
        super().__init__(name)
        self.axis1, self.axis2 = int(axis1), int(axis2)

    def emit(self, builder, operands, path, float_dtype="float32"):
        shape = _shape_of(builder, operands["input"])
        rank = len(shape)
        for axis in (self.axis1, self.axis2):
            if not -rank <= axis < rank:
                raise MithrilError(f"{path}: SwapAxes axis {axis} is out of range for an input "
                                   f"of rank {rank} (shape {_show(shape)})")
        permutation = list(range(rank))
        first, second = self.axis1 % rank, self.axis2 % rank
        permutation[first], permutation[second] = second, first
        attrs = {"permutation": permutation}
        return {"output": _op(builder, "transpose", [operands["input"]], attrs, path)}


class Clamp(Model):
    """output = min(max(input, min_val), max_val), as torch.clamp (and so
    Mithril's backends) computes it: min_val > max_val gives max_val, and at
    a bound the gradient goes to the input, not to the bound (maximum and
    minimum would split it). min_val and max_val are inputs:
    connect(min_val=0.0, ...) or IOKey(value=...) makes them constants."""

    def __init__(self, name=None) -> None:
        super().__init__(name)
        c = Composer(self)
        floored = c(Where(), cond=c(Less(), left="input", right="min_val"),
                    input1="min_val", input2="input")
        c(Where(), cond=c(Greater(), left=floored, right="max_val"), input1="max_val",
          input2=floored, output="output")
        c.finish("input")


class ScaledDotProduct(Model):
    """Attention: softmax(query @ key^T * scale + mask) @ value, for query
    [..., L, E], key [..., S, E] and value [..., S, O]; output [..., L, O].

    scale=None is 1 / sqrt(E). is_causal (the default, as in Mithril) masks
    the key positions after each query position (-inf before the softmax);
    it needs L and S known at compile time. use_attn_mask adds the input
    `attn_mask` [L, S] to the scores instead (a float, additive mask). Dropout
    is not supported: dropout_p must be 0."""

    def __init__(self, is_causal: bool = True, scale: float | None = None,
                 dropout_p: float = 0.0, use_attn_mask: bool = False, name=None) -> None:
        if is_causal and use_attn_mask:
            raise MithrilError("ScaledDotProduct: is_causal=True cannot be used with "
                               "use_attn_mask=True (give the causal mask as attn_mask instead)")
        if dropout_p != 0.0:
            raise MithrilError(f"ScaledDotProduct: dropout is not supported (dropout_p="
                               f"{dropout_p!r}); use dropout_p=0.0")
        if scale is not None and (isinstance(scale, bool)
                                  or not isinstance(scale, numbers.Real)):
            raise TypeError(f"ScaledDotProduct() argument 'scale' must be a number or None, "
                            f"not {type(scale).__name__}")
        super().__init__(name)
        self.is_causal, self.scale = bool(is_causal), scale
        self.dropout_p, self.use_attn_mask = float(dropout_p), bool(use_attn_mask)
        c = Composer(self)
        scores = c(MatrixMultiply(), left="query", right=c(SwapAxes(-2, -1), input="key"))
        if scale is None:
            # 1 / sqrt(E) from the query's shape, so that E may be dynamic.
            width = c(_FloatCast(), input=c(Slice(start=-1, axis=0),
                                           input=c(Shape(), input="query")))
            factor = c(Reciprocal(), input=c(Sqrt(), input=width))
        else:
            factor = float(scale)
        scores = c(Multiply(), left=scores, right=factor)
        if is_causal:
            scores = c(_CausalMask(), input=scores)
        if use_attn_mask:
            scores = c(Add(), left=scores, right="attn_mask")
        weights = c(Softmax(axis=-1), input=scores)
        c(MatrixMultiply(), left=weights, right="value", output="output")
        c.finish("query")


class GroupNorm(Model):
    """Group normalization of [B, C, H, W]: the mean and (biased) variance
    of each of the num_groups groups of C / num_groups channels (over the
    input viewed as [B, num_groups, -1]); then weight * x + bias with weight
    and bias [1, C, 1, 1], as torch.nn.functional.group_norm."""

    def __init__(self, num_groups: int = 32, use_scale: bool = True, use_bias: bool = True,
                 eps: float = 1e-5, name=None) -> None:
        if num_groups < 1:
            raise MithrilError(f"GroupNorm: num_groups must be positive, got {num_groups}")
        super().__init__(name)
        self.num_groups, self.eps = num_groups, float(eps)
        c = Composer(self)
        grouped = c(_GroupView(num_groups), input="input")
        centered = c(Subtract(), left=grouped,
                     right=c(Mean(axis=-1, keepdim=True), input=grouped))
        variance = c(Variance(axis=-1, keepdim=True), input=grouped)
        normalized = c(Multiply(), left=centered, right=c(
            Reciprocal(), input=c(Sqrt(), input=c(Add(), left=variance, right=float(eps)))))
        # weight * x + bias, the last step given the name `output`.
        affine = []
        if use_scale:
            affine.append((Multiply(), "weight"))
        if use_bias:
            affine.append((Add(), "bias"))
        result = c(_ReshapeLike(), input=normalized, like="input",
                   output=None if affine else "output")
        for k, (model, key) in enumerate(affine):
            result = c(model, left=result, right=_param(key, (1, None, 1, 1)),
                       output="output" if k == len(affine) - 1 else None)
        c.finish("input")


class PositionalEncoding(Model):
    """output = input + the sinusoidal table of the input's positions, for
    an input [..., T, hidden_dim] with T <= max_len (known at compile time):
    table[t, 2k] = sin(t / 10000^(2k / hidden_dim)), table[t, 2k + 1] the
    cosine, the original's table (its rows are the input's axis 1, which is
    axis -2 for the original's [B, T, hidden_dim] inputs)."""

    def __init__(self, hidden_dim: int, max_len: int = 5000, name=None) -> None:
        if hidden_dim < 1 or max_len < 1:
            raise MithrilError(f"PositionalEncoding: hidden_dim and max_len must be positive, "
                               f"got {hidden_dim} and {max_len}")
        super().__init__(name)
        self.hidden_dim, self.max_len = hidden_dim, max_len
        c = Composer(self)
        table = c(_SinusoidTable(hidden_dim, max_len), input="input")
        c(Add(), left="input", right=table, output="output")
        c.finish("input")


class LSTMCell(Model):
    """Mithril's LSTM cell. input is [N, 1, d_in]; prev_hidden and prev_cell
    are [M, 1, d_hid] with M >= N (a batch sorted by length that shrinks
    over time): the cell updates their first N rows.

        x = concat([input, prev_hidden[:N]], axis=-1)
        f = sigmoid(x @ w_f.T + bias_f)    i = sigmoid(x @ w_i.T + bias_i)
        c = tanh(x @ w_c.T + bias_c)       o = sigmoid(x @ w_o.T + bias_o)
        cell = prev_cell[:N] * f + i * c   hidden = tanh(cell) * o
        output = hidden @ w_out.T + bias_out
        hidden_compl = prev_hidden[N:]  (the rows whose sequences have ended)

    w_f, w_i, w_c, w_o are [d_hid, d_in + d_hid] and w_out [d_out, d_hid]
    (Linear's [out, in]). N must be known at compile time."""

    def __init__(self, name=None) -> None:
        super().__init__(name)
        c = Composer(self)
        previous_hidden = c(_Rows("head"), input="prev_hidden", like="input")
        previous_cell = c(_Rows("head"), input="prev_cell", like="input")
        joint = c(Concat(n=2, axis=-1), input1="input", input2=previous_hidden)

        def gate(weight: str, bias: str, activation) -> str:
            return c(activation, input=c(Linear(), input=joint, weight=weight, bias=bias))

        forget = gate("w_f", "bias_f", Sigmoid())
        admit = gate("w_i", "bias_i", Sigmoid())
        candidate = gate("w_c", "bias_c", Tanh())
        output_gate = gate("w_o", "bias_o", Sigmoid())
        c(Add(), left=c(Multiply(), left=previous_cell, right=forget),
          right=c(Multiply(), left=admit, right=candidate), output="cell")
        c(Multiply(), left=c(Tanh(), input="cell"), right=output_gate, output="hidden")
        c(_Rows("tail"), input="prev_hidden", like="input", output="hidden_compl")
        c(Linear(), input="hidden", weight="w_out", bias="bias_out", output="output")
        c.finish("input")


# Elementwise models over existing ops ----------------------------------------

def _int_like(float_dtype: str) -> str:
    """The integer type of the backend's precision, as the original's
    backends pick it (int32 beside float32, int64 beside float64)."""
    return "int64" if float_dtype == "float64" else "int32"


class Floor(Primitive):
    """The largest integer <= input, as an integer tensor of the backend's
    precision (the original's Floor returns ints). floor_divide by 1 is the
    exact floor of a float; its gradient is zero."""
    op = "floor_divide"

    def emit(self, builder, operands, path, float_dtype="float32"):
        x = operands["input"]
        _, dtype = builder.type_of(x)
        if dtype in ("int32", "int64"):
            return {"output": x}
        one = builder.add_constant(np.array(1.0, dtype=dtype), path + "_one")
        floored = _op(builder, "floor_divide", [x, one], {}, path)
        return {"output": _op(builder, "cast", [floored], {"element_type": _int_like(float_dtype)},
                              path)}


class IsNan(Primitive):
    """True where input is NaN: NaN is the only value unequal to itself
    (the comparison is unordered, so it holds for NaN)."""
    op = "not_equal"

    def emit(self, builder, operands, path, float_dtype="float32"):
        x = operands["input"]
        return {"output": _op(builder, "not_equal", [x, x], {}, path)}


class NanToNum(Primitive):
    """numpy.nan_to_num: NaN becomes `nan`, +inf `posinf` and -inf `neginf`
    (None: the largest finite value of the input's type, and its negative).
    The gradient passes where the input is finite and is zero elsewhere."""
    op = "where"

    def __init__(self, nan: float = 0.0, posinf: float | None = None,
                 neginf: float | None = None, name=None) -> None:
        super().__init__(name)
        self.nan, self.posinf, self.neginf = float(nan), posinf, neginf

    def emit(self, builder, operands, path, float_dtype="float32"):
        x = operands["input"]
        _, dtype = builder.type_of(x)
        if dtype not in ("float32", "float64"):
            return {"output": x}  # integers hold no NaN or inf
        big = np.finfo(dtype).max
        posinf = big if self.posinf is None else self.posinf
        neginf = -big if self.neginf is None else self.neginf

        def const(value, tag):
            return builder.add_constant(np.array(value, dtype=dtype), f"{path}_{tag}")

        out = x
        for value, replacement, tag in ((np.inf, posinf, "posinf"), (-np.inf, neginf, "neginf")):
            hit = _op(builder, "equal", [x, const(value, tag + "_value")], {}, path)
            out = _op(builder, "where", [hit, const(replacement, tag), out], {}, path)
        nan = _op(builder, "not_equal", [x, x], {}, path)
        return {"output": _op(builder, "where", [nan, const(self.nan, "nan"), out], {}, path)}


class ZerosLike(Primitive):
    """Zeros of the input's shape and type; no gradient flows to the input.
    A where on a mask of the input's shape, so dynamic sizes work too."""
    op = "where"

    def emit(self, builder, operands, path, float_dtype="float32"):
        x = operands["input"]
        _, dtype = builder.type_of(x)
        zero = builder.add_constant(np.array(0, dtype=dtype), path + "_zero")
        everywhere = _op(builder, "equal", [x, x], {}, path)
        return {"output": _op(builder, "where", [everywhere, zero, zero], {}, path)}


# Models that make a tensor from sizes --------------------------------------

class _Constant(Primitive):
    """A model without inputs whose output is a constant the arguments fix."""
    inputs = ()

    def value(self, float_dtype: str) -> np.ndarray:
        raise NotImplementedError

    def emit(self, builder, operands, path, float_dtype="float32"):
        return {"output": builder.add_constant(self.value(float_dtype), path)}


def _sizes(shape, what: str) -> tuple:
    if isinstance(shape, numbers.Integral) and not isinstance(shape, bool):
        shape = (shape,)
    if not isinstance(shape, (list, tuple)) or not all(
            isinstance(d, numbers.Integral) and not isinstance(d, bool) and d >= 0
            for d in shape):
        raise MithrilError(f"{what}: shape must be non-negative ints known when the model is "
                           f"built, got {shape!r}")
    return tuple(int(d) for d in shape)


def _dtype_or(dtype, default: str, what: str) -> str:
    from ..types import compiled_dtype_name
    return default if dtype is None else compiled_dtype_name(dtype, what)


class Ones(_Constant):
    """Ones of `shape` (the backend's float type unless `dtype` says)."""

    def __init__(self, shape=None, dtype=None, name=None) -> None:
        super().__init__(name)
        self.shape = _sizes(shape, "Ones")
        self.dtype = dtype

    def value(self, float_dtype):
        return np.ones(self.shape, _dtype_or(self.dtype, float_dtype, "Ones"))


class Eye(_Constant):
    """The identity [N, M] (M defaults to N), the backend's float type
    unless `dtype` says."""

    def __init__(self, N=None, M=None, dtype=None, name=None) -> None:
        super().__init__(name)
        self.N = _sizes(N, "Eye")[0] if N is not None else None
        if self.N is None:
            raise MithrilError("Eye: N must be an int known when the model is built")
        self.M = self.N if M is None else _sizes(M, "Eye")[0]
        self.dtype = dtype

    def value(self, float_dtype):
        return np.eye(self.N, self.M, dtype=_dtype_or(self.dtype, float_dtype, "Eye"))


class Arange(_Constant):
    """numpy.arange(start, stop, step): integers of the backend's precision
    when start, stop and step are all ints, else its float type (or `dtype`)."""

    def __init__(self, start=0, stop=None, step=1, dtype=None, name=None) -> None:
        super().__init__(name)
        values = (start, stop, step)
        if stop is None or not all(isinstance(v, numbers.Real) and not isinstance(v, bool)
                                   for v in values):
            raise MithrilError(f"Arange: start, stop and step must be numbers known when the "
                               f"model is built, got {values}")
        if step == 0:
            raise MithrilError("Arange: step must not be 0")
        self.start, self.stop, self.step, self.dtype = start, stop, step, dtype

    def value(self, float_dtype):
        integral = all(isinstance(v, numbers.Integral)
                       for v in (self.start, self.stop, self.step))
        default = _int_like(float_dtype) if integral else float_dtype
        return np.arange(self.start, self.stop, self.step,
                         dtype=_dtype_or(self.dtype, default, "Arange"))
