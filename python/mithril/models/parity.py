# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""Models of Mithril's library that were still missing, built from the
existing primitives (Pad and the Gaussian-process models from ops added for
them: mithril.pad, mithril.cholesky, mithril.triangular_solve), with the
original's arguments, defaults and terminal names:

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
    ManyToOne(cell_type, max_sequence_length)
                                             input0.., initial_hidden (, initial_cell),
                                             the cell's weights -> output0.., hidden_concat
    OneToMany(cell_type, max_sequence_length, teacher_forcing=False)
                                             input, initial_*, target1.., the cell's
                                             weights -> output0..
    EncoderDecoder(cell_type, max_input_sequence_length, max_target_sequence_length,
                   teacher_forcing=False)    the encoder's keys, indices, decoder_*,
                                             target1.. -> output0..
    Accuracy(threshold=None, is_binary=False, is_pred_one_hot=True, is_label_one_hot=True)
    Precision / Recall / F1(average="micro", n_classes=None, threshold=None,
                            is_binary=False, is_pred_one_hot=True, is_label_one_hot=True)
    AUC(n_classes, is_label_one_hot=True)    pred, label -> output (metrics)
    Cholesky()                               input -> output
    GPRAlpha()                               label_mu_diff, L, K_term -> output
    GPRVOuter()                              K, K_term, L -> output
    TransposedDiagonal()                     input -> output
    Eigvalsh(threshold=None)                 K_term, L -> output
    GPRLoss(robust=False)                    labels, mu, L, K_term, alpha -> output
    GaussProcessRegressionCore()             label, s, k, k_star, mu
                                             -> loss, prediction, confidence

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

from .. import static
from ..errors import MithrilError
from ..framework import TBD, Connection, IOKey, Model, Primitive, Tensor, _fresh_copy
from ._compose import Composer
from .layers import Cell, Linear, _param
from .primitives import (Absolute, Add, ArgMax, Buffer, Concat, Divide, Equal, EyeLike, Greater,
                         Less, Log, LogicalAnd, LogicalNot, MatrixMultiply, Max, Mean, Multiply,
                         NotEqual, PermuteTensor, Reciprocal, Reshape, Shape, Sigmoid, Slice,
                         Softmax, Sqrt, Squeeze, Subtract, Sum, Tanh, Transpose, Variance, Where)

__all__ = ["Split", "Arange", "Clamp", "Eye", "Floor", "GroupNorm", "IsNan", "LSTMCell", "LSTMCellBody", "NanToNum", "Unique",
           "Ones", "PositionalEncoding", "ScaledDotProduct", "SiLU", "SwapAxes", "ZerosLike",
           "ManyToOne", "OneToMany", "EncoderDecoder", "Accuracy", "Precision", "Recall", "F1",
           "AUC", "Cholesky", "GPRAlpha", "GPRVOuter", "TransposedDiagonal", "Eigvalsh", "GPRLoss",
           "GaussProcessRegressionCore"]


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
    N = like.shape[0]: the original LSTMCell's `prev_hidden[:N]`.

    N must be known at compile time, but with `same_when_dynamic` a dynamic
    N beside a dynamic axis 0 of the input is taken to be all of its rows
    (head: the input, tail: none), which a cell run with one dynamic batch
    size for its input and its state needs."""
    op = "slice"
    inputs = ("input", "like")

    def __init__(self, part: str, owner: str = "LSTMCell", like_name: str = "input",
                 same_when_dynamic: bool = False, name=None) -> None:
        super().__init__(name)
        self.part, self.owner, self.like_name = part, owner, like_name
        self.same_when_dynamic = same_when_dynamic

    def emit(self, builder, operands, path, float_dtype="float32"):
        like = _shape_of(builder, operands["like"])
        count = like[0] if like else None
        rows = _shape_of(builder, operands["input"])
        if count is None and self.same_when_dynamic and rows and rows[0] is None:
            if self.part == "head":
                return {"output": operands["input"]}
            count = 2**62  # no rows
        if count is None:
            raise MithrilError(f"{path}: {self.owner} needs the batch size of "
                               f"`{self.like_name}` (its axis 0) known at compile time, to "
                               f"take that many rows of the previous state")
        if self.part == "head" and rows and rows[0] == count:
            # All the rows: no slice, so that shape inference sees through it
            # (it gives the weights of a recurrent model their sizes).
            return {"output": operands["input"]}
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


def _lstm_gates(c: Composer) -> None:
    """The LSTM cell's gate math into `c`'s model: cell and hidden from
    input, prev_hidden, prev_cell and the gates' weights (LSTMCellBody)."""
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


class LSTMCellBody(Model):
    """The gate math of Mithril's LSTM cell (LSTMCell without its output
    layer and the ended rows): from input [N, 1, d_in] and the first N rows
    of prev_hidden and prev_cell,

        x = concat([input, prev_hidden[:N]], axis=-1)
        f = sigmoid(x @ w_f.T + bias_f)    i = sigmoid(x @ w_i.T + bias_i)
        c = tanh(x @ w_c.T + bias_c)       o = sigmoid(x @ w_o.T + bias_o)
        cell = prev_cell[:N] * f + i * c   hidden = tanh(cell) * o"""

    def __init__(self, name=None) -> None:
        super().__init__(name)
        c = Composer(self)
        _lstm_gates(c)
        c.finish("input", "hidden")


class LSTMCell(Cell):
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
        _lstm_gates(c)
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
        if static.is_integer_type(dtype):
            return {"output": x}
        one = builder.add_constant(np.array(1.0, dtype=dtype), path + "_one")
        floored = _op(builder, "floor_divide", [x, one], {}, path)
        return {"output": _op(builder, "cast", [floored], {"element_type": _int_like(float_dtype)},
                              path)}


def _pad_pairs(pad_width, where: str) -> list[tuple[int, int]]:
    """((before, after), ...) as int pairs, or an error naming Pad."""
    try:
        pairs = np.array(pad_width, dtype=np.int64).reshape(-1, 2)
    except (TypeError, ValueError):
        raise MithrilError(f"{where}Pad pad_width must be (before, after) pairs of integers, "
                           f"got {pad_width!r}") from None
    return [tuple(int(v) for v in pair) for pair in pairs]


class Pad(Primitive):
    """input padded with `value` (zeros by default), numpy-style: pad_width is
    ((before, after), ...) with one pair per axis of the input (numpy.pad's
    constant mode; a single pair pads every axis alike). The op is
    mithril.pad; its gradient is the slice of the output gradient over the
    input. pad_width is given to the constructor or, left TBD (the original's
    default), connected to the terminal `pad_width`, whose value must be
    known when the model compiles (the sizes of the result follow from it)."""
    op = "pad"

    def __init__(self, pad_width=TBD, value: float = 0.0, name=None) -> None:
        if pad_width is None or pad_width is TBD:
            self.inputs = ("input", "pad_width")
        super().__init__(name)
        self.pad_width = None if "pad_width" in self.inputs else _pad_pairs(pad_width, "")
        self.value = float(value)

    def emit(self, builder, operands, path, float_dtype="float32"):
        shape = _shape_of(builder, operands["input"])
        pairs = self.pad_width
        if pairs is None:
            if "pad_width" not in operands:
                raise MithrilError(f"{path}: Pad needs pad_width: give it when it is built or "
                                   "connect its pad_width terminal")
            pairs = _pad_pairs(static.python_value(builder, operands["pad_width"],
                                                   "Pad's pad_width", path), f"{path}: ")
        if len(pairs) == 1 and len(shape) != 1:
            pairs = pairs * len(shape)
        if len(pairs) != len(shape):
            raise MithrilError(f"{path}: Pad has {len(pairs)} (before, after) pairs for an "
                               f"input of rank {len(shape)} (shape {_show(shape)})")
        attrs = {"pad_width": [v for pair in pairs for v in pair], "value": self.value}
        return {"output": _op(builder, "pad", [operands["input"]], attrs, path)}


class IsNan(Primitive):
    """True where input is NaN: NaN is the only value unequal to itself
    (the comparison is unordered, so it holds for NaN)."""
    op = "not_equal"

    def emit(self, builder, operands, path, float_dtype="float32"):
        x = operands["input"]
        return {"output": _op(builder, "not_equal", [x, x], {}, path)}


class Unique(Primitive):
    """numpy.unique of the input: its distinct values, sorted, as a 1-D
    tensor (NaNs last, as one value). The dialect's `mithril.unique`. Their
    number depends on the data, so the output can only be an output of the
    model (the compiled code computes it at the input's size and trims it
    when it returns); feeding it to another model is an error when compiling.
    It has no gradient."""
    op = "unique"

    def emit(self, builder, operands, path, float_dtype="float32"):
        values, _count = builder.add_op("unique", [operands["input"]], {}, path)
        return {"output": values}


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


def _resolve_sized(builder, operands, sources: list, spec, path: str, what: str):
    """`spec` with the sizes read from shapes resolved: each of `sources`
    (the connections the sizes read) is the operand `size<i>`."""
    from ..expressions import resolve_sizes
    by_id = {id(v): operands[f"size{i}"] for i, v in enumerate(sources)}
    try:
        return resolve_sizes(spec, lambda value: _shape_of(builder, by_id[id(value)]))
    except (ValueError, IndexError) as e:
        raise MithrilError(f"{path}: {what}: {e}") from None


class Arange(_Constant):
    """numpy.arange(start, stop, step): integers of the backend's precision
    when start, stop and step are all ints, else its float type (or `dtype`).
    Each may be a size read from a shape (`Arange(stop=x.shape[1])`): the
    connections it reads become inputs `size0`, ... that connect() binds."""

    def __init__(self, start=0, stop=None, step=1, dtype=None, name=None) -> None:
        from ..expressions import Dim, size_values
        values = (start, stop, step)
        if stop is None or not all(isinstance(v, Dim) or (
                isinstance(v, numbers.Real) and not isinstance(v, bool)) for v in values):
            raise MithrilError(f"Arange: start, stop and step must be numbers known when the "
                               f"model is built, or sizes of shapes, got {values}")
        if step == 0:
            raise MithrilError("Arange: step must not be 0")
        self._sources = size_values(values)
        self.inputs = tuple(f"size{i}" for i in range(len(self._sources)))
        super().__init__(name)
        self.start, self.stop, self.step, self.dtype = start, stop, step, dtype

    def connect(self, *args, **connections):
        for i, value in enumerate(self._sources):
            connections.setdefault(f"size{i}", value)
        return super().connect(*args, **connections)

    __call__ = connect

    def emit(self, builder, operands, path, float_dtype="float32"):
        # Resolved per emission: a model compiled again for other shapes
        # reads its sizes again.
        bounds = _resolve_sized(builder, operands, self._sources,
                                [self.start, self.stop, self.step], path, "Arange")
        return {"output": builder.add_constant(self._values(*bounds, float_dtype), path)}

    def value(self, float_dtype):
        return self._values(self.start, self.stop, self.step, float_dtype)

    def _values(self, start, stop, step, float_dtype):
        integral = all(isinstance(v, numbers.Integral) for v in (start, stop, step))
        default = _int_like(float_dtype) if integral else float_dtype
        return np.arange(start, stop, step, dtype=_dtype_or(self.dtype, default, "Arange"))


# Recurrent models ------------------------------------------------------------
#
# A cell (RNNCell(), LSTMCell() or a model with their terminals) unrolled over
# time: one copy of the cell per step, every copy bound to the same weights.
# A cell's state keys are the outputs s it also takes back as prev_s ("hidden",
# and "cell" for an LSTM); its other inputs but `input` are the shared weights.
# Batches are sorted by sequence length, longest first, and shrink over time:
# step t updates the first N_t rows of the state and passes the others on as
# hidden_compl (N_t is read from the step's input at compile time).

def _cell_terminals(cell, owner: str) -> tuple[list[str], list[str]]:
    """(state keys, shared keys) of the cell model `cell`."""
    if isinstance(cell, type):
        raise TypeError(f"{owner}() argument 'cell_type' must be a cell instance such as "
                        f"RNNCell() or LSTMCell(), not the class {cell.__name__}")
    if not isinstance(cell, Model):
        raise TypeError(f"{owner}() argument 'cell_type' must be a cell model such as "
                        f"RNNCell() or LSTMCell(), not {type(cell).__name__}")
    inputs, outputs = cell.input_keys, cell.output_keys
    missing = ([k for k in ("input", "prev_hidden") if k not in inputs]
               + [k for k in ("hidden", "hidden_compl", "output") if k not in outputs])
    if missing:
        raise TypeError(f"{owner}() argument 'cell_type': {cell.class_name} is not a recurrent "
                        f"cell, it lacks the terminals {missing} (a cell takes input and "
                        f"prev_hidden and gives hidden, hidden_compl and output, as RNNCell "
                        f"and LSTMCell do)")
    states = [k for k in outputs if f"prev_{k}" in inputs]
    stepped = {f"prev_{k}" for k in states}
    shared = [k for k in inputs if k != "input" and k not in stepped]
    return states, shared


def _sequence_length(value: int, argument: str, owner: str) -> int:
    if value < 1:
        raise MithrilError(f"{owner}: {argument} must be at least 1, got {value}")
    return int(value)


def _exposed(name: str) -> IOKey:
    return IOKey(name, expose=True)


class ManyToOne(Model):
    """An encoder: the cell run over input0 .. input{L-1} (each [N_t, 1, d_in],
    N_0 >= N_1 >= ...), starting from initial_hidden (and initial_cell for an
    LSTM), every step with the same weights (the cell's names: w_ih, ...).

    Outputs: output{t}, the cell's output at step t, and hidden_concat, the
    final hidden state of every sequence, along axis 0 in the original's order:
    hidden_compl of steps 1 .. L-2 (the sequences whose last step was 0 ..
    L-3), the hidden state of step L-1, then hidden_compl of step L-1 (those
    whose last step was L-2). The rows initial_hidden has beyond N_0 are not
    in it (with L = 1 they follow the hidden state, as step 0 is then the last).
    Canonical input input0, canonical output hidden_concat."""

    def __init__(self, cell_type, max_sequence_length: int, name=None) -> None:
        states, shared = _cell_terminals(cell_type, "ManyToOne")
        length = _sequence_length(max_sequence_length, "max_sequence_length", "ManyToOne")
        super().__init__(name)
        self.cell_type, self.max_sequence_length = cell_type, length
        weights = {k: k for k in shared}
        previous: dict = {f"prev_{k}": f"initial_{k}" for k in states}
        finals = []
        for t in range(length):
            cell = _fresh_copy(cell_type)
            self |= cell.connect(input=f"input{t}", output=_exposed(f"output{t}"),
                                 **weights, **previous)
            previous = {f"prev_{k}": Connection(cell, k) for k in states}
            if t == length - 1:
                finals += [Connection(cell, "hidden"), Connection(cell, "hidden_compl")]
            elif t > 0:
                finals.append(Connection(cell, "hidden_compl"))
        self |= Concat(axis=0).connect(input=finals, output=_exposed("hidden_concat"))
        self._cin, self._cout = self.nets["input0"], self.nets["hidden_concat"]


class OneToMany(Model):
    """A decoder: the cell run max_sequence_length steps from `input`
    [N_0, 1, d] and initial_hidden (and initial_cell for an LSTM), every step
    with the same weights. The input of step t >= 1 is the first N_t rows of
    the output of step t-1 (teacher_forcing=False; the cell's output then has
    the input's size) or of target{t-1} (teacher_forcing=True), with N_t the
    batch size (axis 0) of target{t}: target1 .. target{L-1} are inputs that
    give the batch of each step (and target0 .. target{L-2} the inputs with
    teacher forcing). Outputs output0 .. output{L-1}; canonical input `input`,
    canonical output output{L-1}."""

    def __init__(self, cell_type, max_sequence_length: int, teacher_forcing: bool = False,
                 name=None) -> None:
        states, shared = _cell_terminals(cell_type, "OneToMany")
        length = _sequence_length(max_sequence_length, "max_sequence_length", "OneToMany")
        super().__init__(name)
        self.cell_type, self.max_sequence_length = cell_type, length
        self.teacher_forcing = bool(teacher_forcing)
        c = Composer(self)
        weights = {k: k for k in shared}
        previous: dict = {f"prev_{k}": f"initial_{k}" for k in states}
        step_input = "input"
        for t in range(length):
            cell = _fresh_copy(cell_type)
            if t > 0:
                source = f"target{t - 1}" if teacher_forcing else f"output{t - 1}"
                step_input = c(_Rows("head", owner="OneToMany", like_name=f"target{t}"),
                               input=source, like=f"target{t}")
            self |= cell.connect(input=step_input, output=_exposed(f"output{t}"),
                                 **weights, **previous)
            previous = {f"prev_{k}": Connection(cell, k) for k in states}
        self._cin, self._cout = self.nets["input"], self.nets[f"output{length - 1}"]


class EncoderDecoder(Model):
    """A ManyToOne encoder and a OneToMany decoder, each with its own weights.
    The encoder's inputs keep their names (input0 .., initial_hidden, the
    cell's weights); its hidden_concat, reordered by `indices` (rows
    hidden_concat[indices], to put the sequences back in the decoder's order),
    is the decoder's initial_hidden. The decoder's other inputs are named
    decoder_<name> (decoder_input, decoder_w_ih, decoder_initial_cell, ...)
    but for its targets, target0 ..; its outputs output0 .. output{T-1} are
    the model's."""

    def __init__(self, cell_type, max_input_sequence_length: int,
                 max_target_sequence_length: int, teacher_forcing: bool = False,
                 name=None) -> None:
        encoder = ManyToOne(cell_type, max_input_sequence_length)
        decoder = OneToMany(cell_type, max_target_sequence_length, teacher_forcing)
        super().__init__(name)
        self.cell_type = cell_type
        self.max_input_sequence_length = encoder.max_sequence_length
        self.max_target_sequence_length = decoder.max_sequence_length
        self.teacher_forcing = decoder.teacher_forcing
        self |= encoder.connect(**{k: k for k in encoder.input_keys})
        self |= PermuteTensor().connect(input=Connection(encoder, "hidden_concat"),
                                        indices="indices", output="_initial_hidden")
        self.nets["_initial_hidden"].auto = True
        bindings = {k: (k if "target" in k else "decoder_" + k)
                    for k in decoder.input_keys if k != "initial_hidden"}
        bindings.update({k: _exposed(k) for k in decoder.output_keys})
        self |= decoder.connect(initial_hidden="_initial_hidden", **bindings)
        self._cin = self.nets["input0"]
        self._cout = self.nets[decoder.canonical_output]


# Metrics -----------------------------------------------------------------------
#
# The original's Metric: label (argmax'ed on its last axis when one-hot) and
# pred (argmax'ed when one-hot; with is_binary and a pred of probabilities,
# 1 where pred > threshold, else 0), both as the backend's float type here (the
# class indices are exact), and metric_out = pred - label. Counts are sums of
# the backend's floats; nothing here has a gradient.

class _RowCount(Primitive):
    """input.shape[0] as a scalar of the backend's float type."""
    op = "shape"

    def __init__(self, owner: str = "a metric", name=None) -> None:
        super().__init__(name)
        self.owner = owner

    def emit(self, builder, operands, path, float_dtype="float32"):
        x = operands["input"]
        shape = _shape_of(builder, x)
        if not shape:
            raise MithrilError(f"{path}: {self.owner} needs labels of rank >= 1 (one per "
                               f"sample), got a scalar")
        if shape[0] is not None:
            return {"output": builder.add_constant(np.array(shape[0], dtype=float_dtype),
                                                   path + "_rows")}
        sizes = _op(builder, "shape", [x], {}, path)
        first = _op(builder, "slice", [sizes], {"axes": [0], "start": [0], "stop": [1],
                                               "step": [1]}, path)
        first = _op(builder, "reshape", [first], {"shape": []}, path)
        return {"output": _op(builder, "cast", [first], {"element_type": float_dtype}, path)}


class _DistinctCount(Primitive):
    """The number of distinct values of the input (its size after the
    original's Unique), as a scalar of the input's float type: the elements
    that equal no element before them. With the size known at compile time
    that is exact; a dynamic size counts sum(1 / multiplicity), rounded."""
    op = "equal"

    def emit(self, builder, operands, path, float_dtype="float32"):
        x = operands["input"]
        _, dtype = builder.type_of(x)
        shape = _shape_of(builder, x)
        count = None if any(d is None for d in shape) else int(np.prod(shape, dtype=np.int64))
        column = _op(builder, "reshape", [x], {"shape": [-1, 1]}, path)
        row = _op(builder, "reshape", [x], {"shape": [1, -1]}, path)
        same = _op(builder, "cast", [_op(builder, "equal", [column, row], {}, path)],
                   {"element_type": dtype}, path)

        def const(value, tag):
            return builder.add_constant(np.asarray(value, dtype=dtype), f"{path}_{tag}")

        if count is not None:
            earlier = const(np.tril(np.ones((count, count)), k=-1), "earlier")
            repeats = _op(builder, "sum", [_op(builder, "multiply", [same, earlier], {}, path)],
                          {"axes": [1], "keepdim": False}, path)
            first = _op(builder, "cast", [_op(builder, "equal", [repeats, const(0, "zero")], {},
                                              path)], {"element_type": dtype}, path)
            return {"output": _op(builder, "sum", [first], {"keepdim": False}, path)}
        multiplicity = _op(builder, "sum", [same], {"axes": [1], "keepdim": False}, path)
        total = _op(builder, "sum", [_op(builder, "reciprocal", [multiplicity], {}, path)],
                    {"keepdim": False}, path)
        total = _op(builder, "add", [total, const(0.5, "half")], {}, path)
        return {"output": _op(builder, "floor_divide", [total, const(1, "one")], {}, path)}


_AVERAGES = ("micro", "macro", "weighted")


def _check_metric_arguments(owner: str, threshold, is_binary: bool) -> None:
    if threshold is not None and (isinstance(threshold, (bool, np.bool_))
                                  or not isinstance(threshold, numbers.Real)):
        raise TypeError(f"{owner}() argument 'threshold' must be a number or None, not "
                        f"{type(threshold).__name__}")
    if is_binary and threshold is None:
        raise MithrilError(f"{owner}: is_binary=True needs a threshold (pred > threshold is "
                           f"class 1)")


def metric_indices(c: Composer, threshold, is_binary: bool, is_pred_one_hot: bool,
                   is_label_one_hot: bool) -> tuple[str, str]:
    """The metrics' formatted (pred, label): argmax over the last axis where
    one-hot; a binary pred of probabilities 1 above `threshold`, 0 below."""
    label = c(ArgMax(axis=-1), input="label") if is_label_one_hot else "label"
    if is_binary and not is_pred_one_hot:
        pred = c(Where(), cond=c(Greater(), left="pred", right=float(threshold)),
                 input1=Tensor(1), input2=Tensor(0))
    elif is_pred_one_hot:
        pred = c(ArgMax(axis=-1), input="pred")
    else:
        pred = "pred"
    return pred, label


class _MetricBase(Model):
    """The original's Metric; subclasses add their score as `output`."""

    def _formatted(self, c: Composer, threshold, is_binary: bool, is_pred_one_hot: bool,
                   is_label_one_hot: bool) -> tuple[str, str, str]:
        """(pred, label, pred - label) as the backend's floats."""
        pred, label = metric_indices(c, threshold, is_binary, is_pred_one_hot, is_label_one_hot)
        pred, label = c(_FloatCast(), input=pred), c(_FloatCast(), input=label)
        return pred, label, c(Subtract(), left=pred, right=label)

    @staticmethod
    def _count(c: Composer, condition: str) -> str:
        return c(Sum(), input=c(_FloatCast(), input=condition))


class Accuracy(_MetricBase):
    """The fraction of samples whose (formatted) pred equals their label:
    count(pred == label) / label.shape[0], a scalar. Terminals pred
    (canonical input), label and output."""

    def __init__(self, threshold: float | None = None, is_binary: bool = False,
                 is_pred_one_hot: bool = True, is_label_one_hot: bool = True,
                 name=None) -> None:
        _check_metric_arguments("Accuracy", threshold, is_binary)
        super().__init__(name)
        self.threshold, self.is_binary = threshold, bool(is_binary)
        self.is_pred_one_hot, self.is_label_one_hot = bool(is_pred_one_hot), bool(is_label_one_hot)
        c = Composer(self)
        _, label, difference = self._formatted(c, threshold, is_binary, is_pred_one_hot,
                                               is_label_one_hot)
        correct = self._count(c, c(Equal(), left=difference, right=0.0))
        c(Divide(), numerator=correct, denominator=c(_RowCount(), input=label), output="output")
        c.finish("pred")


class _ClassScore(_MetricBase):
    """Precision, Recall and F1: "micro" is count(pred == label) / count(all);
    for class k of range(n_classes), with tp, fp and fn its true positives,
    false positives and false negatives, the score is tp / denominator(tp, fp,
    fn) (a denominator of 0 counts as 1); "macro" sums the class scores and
    divides by the number of distinct labels, "weighted" sums score_k *
    count(label == k) / label.shape[0]."""

    def _denominator(self, c: Composer, tp: str, fp: str, fn: str) -> str:
        raise NotImplementedError

    def __init__(self, average: str = "micro", n_classes: int | None = None,
                 threshold: float | None = None, is_binary: bool = False,
                 is_pred_one_hot: bool = True, is_label_one_hot: bool = True,
                 name=None) -> None:
        owner = type(self).__name__
        if average not in _AVERAGES:
            raise MithrilError(f"{owner}: average must be one of {list(_AVERAGES)}, got "
                               f"{average!r}")
        if average != "micro" and n_classes is None:
            raise MithrilError(f"{owner}: average={average!r} needs n_classes")
        if n_classes is not None and n_classes < 1:
            raise MithrilError(f"{owner}: n_classes must be positive, got {n_classes}")
        _check_metric_arguments(owner, threshold, is_binary)
        super().__init__(name)
        self.average, self.n_classes, self.threshold = average, n_classes, threshold
        self.is_binary = bool(is_binary)
        self.is_pred_one_hot, self.is_label_one_hot = bool(is_pred_one_hot), bool(is_label_one_hot)
        c = Composer(self)
        pred, label, difference = self._formatted(c, threshold, is_binary, is_pred_one_hot,
                                                  is_label_one_hot)
        correct = c(Equal(), left=difference, right=0.0)
        if average == "micro":
            right = self._count(c, correct)
            wrong = self._count(c, c(NotEqual(), left=difference, right=0.0))
            c(Divide(), numerator=right, denominator=c(Add(), left=right, right=wrong),
              output="output")
            c.finish("pred")
            return
        rows = c(_RowCount(), input=label) if average == "weighted" else None
        total = None
        for k in range(n_classes):
            in_class = c(Equal(), left=label, right=float(k))
            predicted = c(Equal(), left=pred, right=float(k))
            tp = self._count(c, c(LogicalAnd(), left=correct, right=in_class))
            fp = self._count(c, c(LogicalAnd(), left=predicted,
                                  right=c(LogicalNot(), input=in_class)))
            fn = self._count(c, c(LogicalAnd(), left=c(LogicalNot(), input=predicted),
                                  right=in_class))
            denominator = self._denominator(c, tp, fp, fn)
            denominator = c(Where(), cond=c(Equal(), left=denominator, right=0.0), input1=1.0,
                            input2=denominator)
            score = c(Divide(), numerator=tp, denominator=denominator)
            if average == "weighted":
                score = c(Divide(), numerator=c(Multiply(), left=score,
                                                right=self._count(c, in_class)),
                          denominator=rows)
            last = k == n_classes - 1 and average == "weighted"
            if total is None:
                total = c(Buffer(), input=score, output="output" if last else None)
            else:
                total = c(Add(), left=total, right=score, output="output" if last else None)
        if average == "macro":
            c(Divide(), numerator=total, denominator=c(_DistinctCount(), input=label),
              output="output")
        c.finish("pred")


class Precision(_ClassScore):
    """Precision: tp / (tp + fp) per class (see _ClassScore)."""

    def _denominator(self, c, tp, fp, fn):
        return c(Add(), left=tp, right=fp)


class Recall(_ClassScore):
    """Recall: tp / (tp + fn) per class (see _ClassScore)."""

    def _denominator(self, c, tp, fp, fn):
        return c(Add(), left=tp, right=fn)


class F1(_ClassScore):
    """F1: tp / (tp + (fp + fn) / 2) per class (see _ClassScore)."""

    def _denominator(self, c, tp, fp, fn):
        return c(Add(), left=tp, right=c(Multiply(), left=0.5, right=c(Add(), left=fp,
                                                                        right=fn)))


class AUC(Model):
    """The area under the ROC curve of each of n_classes classes, averaged.
    pred is [N, n_classes] scores (or [N] with n_classes=1), label the class
    indices [N] (or one-hot [N, n_classes], argmax'ed). Class k's positives
    are the samples of label k; the original's curve has a point (fpr, tpr)
    at each distinct score, from the highest down, integrated by trapezoids
    and without the origin. That area is the Mann-Whitney statistic (a
    positive scored above a negative counts 1, a tie 1/2, over P * N pairs)
    less the triangle between the origin and the first point, which this
    computes from all pairs of samples (N^2 comparisons; no sorting)."""

    def __init__(self, n_classes: int, is_label_one_hot: bool = True, name=None) -> None:
        if n_classes < 1:
            raise MithrilError(f"AUC: n_classes must be positive, got {n_classes}")
        super().__init__(name)
        self.n_classes, self.is_label_one_hot = n_classes, bool(is_label_one_hot)
        c = Composer(self)
        label = c(ArgMax(axis=-1), input="label") if is_label_one_hot else "label"
        label = c(Reshape((-1,)), input=c(_FloatCast(), input=label))
        total = None
        for k in range(n_classes):
            scores = "pred" if n_classes == 1 else c(Slice(k, k + 1, axis=1), input="pred")
            scores = c(Reshape((-1,)), input=scores)
            positive = c(_FloatCast(), input=c(Equal(), left=label, right=float(k)))
            negative = c(Subtract(), left=1.0, right=positive)
            column = c(Reshape((-1, 1)), input=scores)
            row = c(Reshape((1, -1)), input=scores)
            above = c(_FloatCast(), input=c(Greater(), left=column, right=row))
            tied = c(_FloatCast(), input=c(Equal(), left=column, right=row))
            wins = c(Add(), left=above, right=c(Multiply(), left=0.5, right=tied))
            pairs = c(Multiply(), left=c(Reshape((-1, 1)), input=positive),
                      right=c(Reshape((1, -1)), input=negative))
            n_pos, n_neg = c(Sum(), input=positive), c(Sum(), input=negative)
            statistic = c(Divide(), numerator=c(Sum(), input=c(Multiply(), left=pairs,
                                                               right=wins)),
                          denominator=c(Multiply(), left=n_pos, right=n_neg))
            top = c(_FloatCast(), input=c(Equal(), left=scores,
                                          right=c(Max(), input=scores)))
            tpr = c(Divide(), numerator=c(Sum(), input=c(Multiply(), left=top, right=positive)),
                    denominator=n_pos)
            fpr = c(Divide(), numerator=c(Sum(), input=c(Multiply(), left=top, right=negative)),
                    denominator=n_neg)
            area = c(Subtract(), left=statistic,
                     right=c(Multiply(), left=0.5, right=c(Multiply(), left=tpr, right=fpr)))
            share = c(Divide(), numerator=area, denominator=float(n_classes),
                      output="output" if n_classes == 1 else None)
            if total is None:
                total = share
            else:
                total = c(Add(), left=total, right=share,
                          output="output" if k == n_classes - 1 else None)
        c.finish("pred")


# Sizes read from shapes ------------------------------------------------------

class SizedConstant(Primitive):
    """A size read from shapes (`x.shape[1]`, `B * T`) used as a tensor: a
    scalar constant of the backend's float type, as a Python int meeting a
    float tensor becomes in the original."""

    def __init__(self, size, sources: list, name=None) -> None:
        self.inputs = tuple(f"size{i}" for i in range(len(sources)))
        super().__init__(name)
        self.size = size
        self._sources = list(sources)

    def emit(self, builder, operands, path, float_dtype="float32"):
        value = _resolve_sized(builder, operands, self._sources, self.size, path, "size")
        return {"output": builder.add_constant(np.array(value, dtype=float_dtype), path)}


class SizedReshape(Primitive):
    """reshape to sizes some of which are read from other connections'
    shapes when the model is emitted (`x.reshape(x.shape[0], T, -1)`); the
    connections it reads are inputs `size0`, `size1`, ... whose values are
    not used."""
    op = "reshape"

    def __init__(self, shape: list, sources: list, name=None) -> None:
        self.inputs = ("input",) + tuple(f"size{i}" for i in range(len(sources)))
        super().__init__(name)
        self.shape_spec = list(shape)
        self._sources = list(sources)

    def emit(self, builder, operands, path, float_dtype="float32"):
        shape = _resolve_sized(builder, operands, self._sources, self.shape_spec, path,
                               "reshape")
        return {"output": _op(builder, "reshape", [operands["input"]], {"shape": shape}, path)}


class Split(Primitive):
    """The original's Split(split_size, axis): `split_size` equal chunks of
    the input along `axis` (the size there must divide). Its list output is
    the outputs output0, output1, ...; index a call for one
    (`Split(3, -1)(input=x)[0]`). The chunk size is read from the compiled
    type."""
    op = "slice"

    def __init__(self, split_size: int, axis: int = 0, name=None) -> None:
        if isinstance(split_size, bool) or not isinstance(split_size, numbers.Integral) \
                or split_size < 1:
            raise MithrilError(f"Split: split_size (the number of chunks) must be a positive "
                               f"int, got {split_size!r}")
        self.outputs = tuple(f"output{i}" for i in range(int(split_size)))
        super().__init__(name)
        self.split_size, self.axis = int(split_size), int(axis)

    @property
    def list_outputs(self) -> tuple:
        return self.outputs

    def emit(self, builder, operands, path, float_dtype="float32"):
        x = operands["input"]
        shape = _shape_of(builder, x)
        axis = self.axis
        if not -len(shape) <= axis < len(shape):
            raise MithrilError(f"{path}: Split axis {axis} is out of range for an input of "
                               f"shape {_show(shape)}")
        axis %= len(shape)
        size = shape[axis]
        if size is None:
            raise MithrilError(f"{path}: Split needs the size of axis {axis} known at compile "
                               f"time; got shape {_show(shape)}")
        if size % self.split_size:
            raise MithrilError(f"{path}: Split: axis {axis} of size {size} does not split into "
                               f"{self.split_size} equal chunks")
        chunk = size // self.split_size
        results = {}
        for i, key in enumerate(self.outputs):
            attrs = {"axes": [axis], "start": [i * chunk], "stop": [(i + 1) * chunk], "step": [1]}
            results[key] = _op(builder, "slice", [x], attrs, path)
        return results


# Linear algebra: Gaussian process regression ----------------------------------
#
# The original's GPR primitives (Cholesky, GPRAlpha, GPRVOuter, Eigvalsh,
# TransposedDiagonal) are here built on two dialect ops, mithril.cholesky and
# mithril.triangular_solve, and existing ones; their gradients come from the
# ops'. The original's GPRAlpha, GPRVOuter and Eigvalsh also take K_term, which
# they read only when no Cholesky factor L is given; L is always given here, so
# K_term is a terminal whose value is not read.

def _square_matrix(builder, value, path: str, owner: str, role: str) -> None:
    shape = _shape_of(builder, value)
    if len(shape) != 2 or (None not in shape and shape[0] != shape[1]):
        raise MithrilError(f"{path}: {owner} needs {role} to be a square matrix [N, N], got "
                           f"shape {_show(shape)}")


def _diagonal(builder, matrix, path: str) -> int:
    """The diagonal of a square matrix as a column [N, 1]."""
    eye = _op(builder, "eye_like", [matrix], {}, path)
    masked = _op(builder, "multiply", [matrix, eye], {}, path)
    return _op(builder, "sum", [masked], {"axes": [1], "keepdim": True}, path)


def _solve(builder, matrix, rhs, path: str, transpose: bool = False) -> int:
    """op(L)^-1 rhs for a lower-triangular L (op(L) = L^T when transposed)."""
    attrs = {"lower": True, "transpose": transpose}
    return _op(builder, "triangular_solve", [matrix, rhs], attrs, path)


class Cholesky(Primitive):
    """The lower Cholesky factor L of a symmetric positive-definite input
    [N, N]: L L^T = input (torch.linalg.cholesky). Only the lower triangle
    of the input is read. The gradient treats the input as symmetric, as
    torch's does. An input that is not positive definite gives NaN (torch
    raises an error there)."""
    op = "cholesky"


class GPRAlpha(Primitive):
    """alpha = K_term^-1 label_mu_diff from the Cholesky factor L of K_term:
    L^-T (L^-1 label_mu_diff), two triangular solves. label_mu_diff is
    [N, k] (the labels less the prior mean, [N, 1] in a GP), L and K_term
    are [N, N]; K_term is not read (see above)."""
    op = "triangular_solve"
    inputs = ("label_mu_diff", "L", "K_term")

    def emit(self, builder, operands, path, float_dtype="float32"):
        lower = operands["L"]
        _square_matrix(builder, lower, path, "GPRAlpha", "L")
        forward = _solve(builder, lower, operands["label_mu_diff"], path)
        return {"output": _solve(builder, lower, forward, path, transpose=True)}


class GPRVOuter(Primitive):
    """v^T v with v = L^-1 K, L the Cholesky factor of K_term: K^T K_term^-1 K,
    the part of a GP's prior covariance its observations explain. K is
    [N, M], L and K_term [N, N]; K_term is not read (see above)."""
    op = "triangular_solve"
    inputs = ("K", "K_term", "L")

    def emit(self, builder, operands, path, float_dtype="float32"):
        lower = operands["L"]
        _square_matrix(builder, lower, path, "GPRVOuter", "L")
        v = _solve(builder, lower, operands["K"], path)
        v_transposed = _op(builder, "transpose", [v], {}, path)
        return {"output": _op(builder, "matmul", [v_transposed, v], {}, path)}


class TransposedDiagonal(Primitive):
    """The diagonal of the transposed input [N, N] (the input's own
    diagonal), as a column [N, 1]."""
    op = "eye_like"

    def emit(self, builder, operands, path, float_dtype="float32"):
        matrix = operands["input"]
        _square_matrix(builder, matrix, path, "TransposedDiagonal", "its input")
        return {"output": _diagonal(builder, matrix, path)}


class Eigvalsh(Primitive):
    """The original's Eigvalsh with a Cholesky factor given: the diagonal of
    L [N, N] as a column [N, 1], whose logarithms sum to half the log
    determinant of K_term = L L^T. K_term is not read, nor `threshold`
    (the original uses both only without L); both are kept for its
    signature."""
    op = "eye_like"
    inputs = ("K_term", "L")

    def __init__(self, threshold: float | None = None, name=None) -> None:
        super().__init__(name)
        self.threshold = threshold

    def emit(self, builder, operands, path, float_dtype="float32"):
        lower = operands["L"]
        _square_matrix(builder, lower, path, "Eigvalsh", "L")
        return {"output": _diagonal(builder, lower, path)}


class GPRLoss(Model):
    """The negative log marginal likelihood of a Gaussian process:
    output = (labels - mu)^T alpha / 2 + sum(log(diag(L))) + N log(2 pi) / 2,
    [1], with labels and mu [N, 1], L the Cholesky factor of K_term and
    alpha = K_term^-1 (labels - mu) (GPRAlpha). robust=True takes the
    logarithm with Log(robust=True)."""

    def __init__(self, robust: bool = False, name=None) -> None:
        super().__init__(name)
        self.robust = bool(robust)
        c = Composer(self)
        difference = c(Subtract(), left="labels", right="mu")
        fit = c(MatrixMultiply(), left=c(Transpose(), input=difference), right="alpha")
        fit = c(Multiply(), left=c(Squeeze(), input=fit), right=0.5)
        log_determinant = c(Sum(), input=c(Log(robust=robust),
                                           input=c(Eigvalsh(), K_term="K_term", L="L")))
        normalizer = c(Multiply(), left=c(_RowCount("GPRLoss"), input="labels"),
                       right=math.log(2 * math.pi) / 2)
        total = c(Add(), left=c(Add(), left=fit, right=log_determinant), right=normalizer)
        c(Reshape((1,)), input=total, output="output")
        c.finish("labels")


class GaussProcessRegressionCore(Model):
    """Gaussian process regression from kernel matrices: label [N, 1], the
    noise variance s [1], k = K(X, X) [N, N], k_star [N, N] and the prior
    mean mu [N, 1]. With K_term = k + s I and L its Cholesky factor,

        alpha = K_term^-1 (label - mu)                  (GPRAlpha)
        loss = GPRLoss(label, mu, L, K_term, alpha)     [1]
        prediction = mu + k^T alpha                     [N, 1], canonical
        confidence = s + |diag(k_star - v^T v)|         [N, 1], v = L^-1 k

    as the original defines it (its terminal names and canonical output)."""

    def __init__(self, name=None) -> None:
        super().__init__(name)
        c = Composer(self)
        noise = c(Multiply(), left="s", right=c(EyeLike(), input="k"))
        k_term = c(Add(), left="k", right=noise)
        lower = c(Cholesky(), input=k_term)
        alpha = c(GPRAlpha(), label_mu_diff=c(Subtract(), left="label", right="mu"), L=lower,
                  K_term=k_term)
        c(GPRLoss(), labels="label", mu="mu", L=lower, K_term=k_term, alpha=alpha, output="loss")
        c(Add(), left="mu", right=c(MatrixMultiply(), left=c(Transpose(), input="k"),
                                   right=alpha), output="prediction")
        explained = c(GPRVOuter(), K="k", K_term=k_term, L=lower)
        spread = c(TransposedDiagonal(), input=c(Subtract(), left="k_star", right=explained))
        c(Add(), left="s", right=c(Absolute(), input=spread), output="confidence")
        c.finish("label", "prediction")
