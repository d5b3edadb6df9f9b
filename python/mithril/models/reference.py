# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""Models of the original's library (its reference, section 4) that were still
missing, with the original's constructor arguments, defaults and terminal
names, built from the existing primitives and ops:

    AtLeast1D()                      input -> output          numpy.atleast_1d
    CartesianDifference()            left [N, d], right [M, d] -> output [N, M, d]
    Trapezoid()                      y, x -> output           numpy.trapezoid(y, x), last axis
    ElementWiseAffine()              input, weight, bias -> output = input * weight + bias
    EyeComplement(N=TBD, M=None, dtype=None)
                                     (N, M) -> output = ones - eye, [N, M or N]
    Length()                         input -> output          len(input), compile time
    TensorToList()                   input -> output          input.tolist(), compile time
    PrimitiveUnion(n=1)              input1 .. input{n} -> output, tuples joined
    PaddingConverter1D(kernel_size=TBD, input=TBD), PaddingConverter2D(...),
    StrideConverter(kernel_size=TBD, input=TBD), TupleConverter(input=TBD)
                                     the original's compile-time argument helpers
    PrimitiveConvolution1D(use_bias=True), PrimitiveConvolution2D(use_bias=True)
                                     input, weight, bias, stride, padding, dilation (, groups)
    PrimitiveMaxPool1D(), PrimitiveMaxPool2D(), PrimitiveAvgPool2D()
                                     input, kernel_size, stride, padding, dilation
    Metric(threshold=None, is_binary=False, is_pred_one_hot=True, is_label_one_hot=True)
                                     pred, label -> output, pred_formatted, label_formatted
    AUCCore()                        input [N], label [N] -> output [2, N]

The original passes values such as a stride or a padding along connections as
Python ints and tuples. Here they must be known when the model is compiled (a
constant, a constructor argument, a size read from a shape, another helper's
output): mithril.static records them beside the IR values, and the models
below read them there. A terminal left unconnected is an error that names the
model and the terminal.
"""

from __future__ import annotations

import enum
import numbers

import numpy as np

from .. import static
from ..errors import MithrilError
from ..framework import TBD, Model, Primitive, TerminalSpec, _is_constant_value
from ._compose import Composer
from .layers import _padding, _param
from .parity import _dtype_or, _shape_of, _show
from .primitives import Add, Buffer, Multiply, Slice, Subtract, Sum

__all__ = ["AtLeast1D", "AUCCore", "CartesianDifference", "ElementWiseAffine", "EyeComplement",
           "Length", "Metric", "PaddingConverter1D", "PaddingConverter2D", "PrimitiveAvgPool2D",
           "PrimitiveConvolution1D", "PrimitiveConvolution2D", "PrimitiveMaxPool1D",
           "PrimitiveMaxPool2D", "PrimitiveUnion", "StrideConverter", "TensorToList",
           "Trapezoid", "TupleConverter"]


# Compile-time values ----------------------------------------------------------------

def _static_result(builder, value, path: str, float_dtype: str) -> int:
    """An IR constant holding `value` (a number or a nested tuple or list of
    numbers), recorded as `value` for the models that read it."""
    array = np.asarray(value)
    if array.dtype.kind == "f":
        array = array.astype(float_dtype)
    elif array.dtype.kind in "iu":
        array = array.astype(np.int64)
    elif array.dtype.kind != "b":
        raise MithrilError(f"{path}: {value!r} is not a number or a tuple of numbers")
    result = builder.add_constant(np.require(array, requirements="C"), path)
    static.record(builder, result, value)
    return result


def _known(builder, operands: dict, key: str, owner: str, path: str):
    """The compile-time value of terminal `key` (an element of a list
    terminal each known)."""
    if key not in operands:
        raise MithrilError(f"{path}: {owner}'s {key} is not connected: give it a value when "
                           f"the model is built or connect it to one known at compile time")
    value = operands[key]
    if isinstance(value, list):
        return tuple(static.python_value(builder, v, f"{owner}'s {key}", path) for v in value)
    return static.python_value(builder, value, f"{owner}'s {key}", path)


def _is_int(value) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_))


def _is_int_tuple(value, length: int | None = None) -> bool:
    return (isinstance(value, (tuple, list)) and all(_is_int(v) for v in value)
            and (length is None or len(value) == length))


def _padding_mode(value) -> str | None:
    """"same" or "valid" for the original's PaddingType (any enum named so)
    or those strings; None for anything else."""
    if isinstance(value, enum.Enum):
        value = value.name
    if isinstance(value, str) and value.lower() in ("same", "valid"):
        return value.lower()
    return None


class _CompileTimeHelper(Primitive):
    """A primitive whose terminals are values known at compile time. A value
    given to the constructor is kept here (a padding mode such as
    PaddingType.SAME is no number an IR constant could hold); one that is TBD
    is an input terminal, as is one connect() gives a connection."""
    op = "shape"  # a label: these emit constants
    # Terminals for which None is a value (connect(input=None) gives it).
    takes_none: tuple[str, ...] = ()

    def __init__(self, values: dict, name=None) -> None:
        self._fixed = {k: v for k, v in values.items() if v is not TBD}
        self.inputs = tuple(k for k, v in values.items() if v is TBD)
        super().__init__(name)
        # A scalar when left unconnected: emitting it then says that its
        # value must be known, instead of asking for a shape.
        self._specs = {k: TerminalSpec(shape=()) for k in self.inputs}

    def connect(self, *args, **connections):
        info = super().connect(*args, **connections)  # positional arguments bound
        for key, value in list(info.connections.items()):
            # A string names a connection; a PaddingType (or None where it is a
            # value) is kept here, as a constructor argument is.
            if key in self.inputs and ((isinstance(value, enum.Enum) and _padding_mode(value))
                                       or (value is None and key in self.takes_none)):
                self._fixed[key] = info.connections.pop(key)
                self.inputs = tuple(k for k in self.inputs if k != key)
                self._specs.pop(key)
        return info

    __call__ = connect

    def _value(self, builder, operands, key: str, path: str):
        if key in self._fixed:
            return self._fixed[key]
        return _known(builder, operands, key, self.class_name, path)

    def compute(self, value, path: str):
        """The output, from value(key), each terminal's value."""
        raise NotImplementedError

    def emit(self, builder, operands, path, float_dtype="float32"):
        # Every terminal is read, needed or not (a kernel size only matters
        # for SAME padding): one left unconnected is an error here rather
        # than an input that the compiled model would ask for.
        keys = list(self._fixed) + list(self.inputs)
        values = {k: self._value(builder, operands, k, path) for k in keys}
        output = self.compute(values.__getitem__, path)
        return {"output": _static_result(builder, output, path, float_dtype)}


def _kernel_pair(kernel, owner: str, path: str) -> tuple[int, int]:
    if _is_int(kernel):
        return int(kernel), int(kernel)
    if _is_int_tuple(kernel, 2):
        return int(kernel[0]), int(kernel[1])
    raise MithrilError(f"{path}: {owner}: kernel_size must be an int or a pair of ints, got "
                       f"{kernel!r}")


def _same_half(kernel: int, owner: str, path: str) -> int:
    if kernel % 2 == 0:
        raise MithrilError(f"{path}: {owner}: 'same' padding needs an odd kernel size, got "
                           f"{kernel}")
    return kernel // 2


class PaddingConverter1D(_CompileTimeHelper):
    """The original's padding of a 1-D convolution or pool as (before, after):
    an int p is (p, p); PaddingType.SAME (or "same") half the odd kernel_size
    each side; VALID (0, 0); a pair stays itself."""

    def __init__(self, kernel_size=TBD, input=TBD, *, name=None) -> None:
        super().__init__({"input": input, "kernel_size": kernel_size}, name)

    def compute(self, value, path):
        padding = value("input")
        mode = _padding_mode(padding)
        if mode == "valid":
            return (0, 0)
        if mode == "same":
            kernel = value("kernel_size")
            if not _is_int(kernel):
                raise MithrilError(f"{path}: PaddingConverter1D: 'same' padding needs an int "
                                   f"kernel_size, got {kernel!r}")
            half = _same_half(int(kernel), "PaddingConverter1D", path)
            return (half, half)
        if _is_int(padding):
            return (int(padding), int(padding))
        if _is_int_tuple(padding, 2):
            return (int(padding[0]), int(padding[1]))
        raise MithrilError(f"{path}: PaddingConverter1D: padding must be an int, a pair of ints "
                           f"or a PaddingType, got {padding!r}")


class PaddingConverter2D(_CompileTimeHelper):
    """The original's padding of a 2-D convolution or pool as ((top, bottom),
    (left, right)): an int p pads every side by p; a pair (ph, pw) each axis
    by its own on both sides; pairs of pairs stay themselves; VALID is zeros;
    SAME is half the odd kernel (int or (kh, kw)) each side of its axis. (For
    SAME with a kernel (kh, kw) the original writes ((kh // 2, kw // 2),
    (kh // 2, kw // 2)), which is the same for a square kernel; here each axis
    takes its own kernel size.)"""

    def __init__(self, kernel_size=TBD, input=TBD, *, name=None) -> None:
        super().__init__({"input": input, "kernel_size": kernel_size}, name)

    def compute(self, value, path):
        padding = value("input")
        mode = _padding_mode(padding)
        if mode == "valid":
            return ((0, 0), (0, 0))
        if mode == "same":
            kh, kw = _kernel_pair(value("kernel_size"), "PaddingConverter2D", path)
            h = _same_half(kh, "PaddingConverter2D", path)
            w = _same_half(kw, "PaddingConverter2D", path)
            return ((h, h), (w, w))
        if _is_int(padding):
            return ((int(padding),) * 2, (int(padding),) * 2)
        if isinstance(padding, (tuple, list)) and len(padding) == 2:
            pairs = []
            for p in padding:
                if _is_int(p):
                    pairs.append((int(p), int(p)))
                elif _is_int_tuple(p, 2):
                    pairs.append((int(p[0]), int(p[1])))
                else:
                    break
            else:
                return tuple(pairs)
        raise MithrilError(f"{path}: PaddingConverter2D: padding must be an int, a pair of ints "
                           f"or of (before, after) pairs, or a PaddingType, got {padding!r}")


class StrideConverter(_CompileTimeHelper):
    """The original's stride of a pool: the given stride, or kernel_size when
    it is None (the pools' default; connect(input=None) gives None)."""
    takes_none = ("input",)

    def __init__(self, kernel_size=TBD, input=TBD, *, name=None) -> None:
        super().__init__({"input": input, "kernel_size": kernel_size}, name)

    def compute(self, value, path):
        stride = value("input")
        result = value("kernel_size") if stride is None else stride
        if not (_is_int(result) or _is_int_tuple(result)):
            raise MithrilError(f"{path}: StrideConverter: the stride must be None, an int or a "
                               f"tuple of ints, got {result!r}")
        return result


class TupleConverter(_CompileTimeHelper):
    """The original's pair of an int argument: an int i is (i, i); a tuple
    stays itself."""

    def __init__(self, input=TBD, *, name=None) -> None:
        super().__init__({"input": input}, name)

    def compute(self, value, path):
        given = value("input")
        if _is_int(given):
            return (int(given), int(given))
        if isinstance(given, (tuple, list)):
            return tuple(tuple(v) if isinstance(v, list) else v for v in given)
        raise MithrilError(f"{path}: TupleConverter: input must be an int or a tuple, got "
                           f"{given!r}")


class PrimitiveUnion(Primitive):
    """The original's union: the values of input1 .. input{n} (numbers or
    tuples of numbers, known at compile time) joined into one tuple, a number
    counting as a tuple of one. Inputs may be given values as keywords
    (`PrimitiveUnion(2, input1=(1, 2))`)."""
    op = "concat"  # a label: it emits a constant
    accepts_lists = True

    def __init__(self, n: int = 1, *, name=None, **kwargs) -> None:
        if not _is_int(n) or n < 1:
            raise MithrilError(f"PrimitiveUnion: n must be a positive int, got {n!r}")
        self.inputs = tuple(f"input{i + 1}" for i in range(int(n)))
        for key in kwargs:
            if key not in self.inputs:
                raise TypeError(f"PrimitiveUnion() got an unexpected keyword argument '{key}' "
                                f"(its inputs are {list(self.inputs)})")
        super().__init__(name)
        self._specs = {k: TerminalSpec(shape=()) for k in self.inputs}
        for key, value in kwargs.items():
            if value is TBD or value is None:
                continue
            if not _is_union_part(value):
                raise TypeError(f"PrimitiveUnion() argument '{key}' must be a number or a tuple "
                                f"of numbers, got {value!r}")
            self._set_terminal_value(key, tuple(value) if isinstance(value, list) else value)

    def emit(self, builder, operands, path, float_dtype="float32"):
        joined: tuple = ()
        for key in self.inputs:
            value = _known(builder, operands, key, "PrimitiveUnion", path)
            if isinstance(value, np.ndarray):
                value = tuple(value.tolist()) if value.ndim == 1 else value
            if not _is_union_part(value):
                raise MithrilError(f"{path}: PrimitiveUnion's {key} must be a number or a "
                                   f"tuple of numbers, got {value!r}")
            joined += tuple(value) if isinstance(value, (tuple, list)) else (value,)
        return {"output": _static_result(builder, joined, path, float_dtype)}


def _is_union_part(value) -> bool:
    def number(v):
        return isinstance(v, numbers.Real) and not isinstance(v, (bool, np.bool_))
    return number(value) or (isinstance(value, (tuple, list)) and all(number(v) for v in value))


class Length(Primitive):
    """The original's Length: the number of elements of a list or tuple
    value, or the size of axis 0 of a tensor, known at compile time (a weakly
    typed int, as Size's)."""
    op = "shape"  # a label: it emits a constant
    accepts_lists = True

    def emit(self, builder, operands, path, float_dtype="float32"):
        x = operands["input"]
        if isinstance(x, list):
            count = len(x)
        else:
            value = static.lookup(builder, x, None)
            if isinstance(value, (tuple, list)):
                count = len(value)
            else:
                shape = _shape_of(builder, x)
                if not shape:
                    raise MithrilError(f"{path}: Length of a scalar: its input must be a list, "
                                       f"a tuple or a tensor of rank >= 1")
                if shape[0] is None:
                    raise MithrilError(f"{path}: Length needs the size of axis 0 known at compile "
                                       f"time, got shape {_show(shape)}")
                count = int(shape[0])
        result = builder.add_constant(np.asarray(count, dtype=np.int64), path)
        static.record(builder, result, count, weak=True)
        return {"output": result}


class TensorToList(Primitive):
    """The original's TensorToList: the input's value as a (nested) Python
    list. The value must be known at compile time here (the original reads it
    at run time, outside jit); the output also holds it as a tensor."""
    op = "reshape"  # a label: it emits a constant

    def emit(self, builder, operands, path, float_dtype="float32"):
        value = static.require(builder, operands["input"], "TensorToList's input", path)
        if isinstance(value, static.DtypeValue):
            raise MithrilError(f"{path}: TensorToList of a dtype: its input must be a tensor")
        array = np.asarray(value)
        _, dtype = builder.type_of(operands["input"])
        result = builder.add_constant(np.require(array.astype(dtype), requirements="C"), path)
        static.record(builder, result, array.tolist())
        return {"output": result}


class AtLeast1D(Primitive):
    """numpy.atleast_1d: a scalar (0-d) input becomes shape (1,), any other
    input is itself. A reshape, whose gradient is the dialect's."""
    op = "reshape"

    def emit(self, builder, operands, path, float_dtype="float32"):
        x = operands["input"]
        if _shape_of(builder, x):
            return {"output": x}
        attrs = {"shape": [1]}
        results = builder.add_op("reshape", [x], attrs, path)
        static.fold(builder, "reshape", attrs, [x], results)
        return {"output": results[0]}


class EyeComplement(Primitive):
    """ones - eye: [N, M] (M defaults to N) of ones with zeros on the
    diagonal, of the backend's float type unless `dtype` says. N and M are
    ints given here, or, left TBD, terminals whose values must be known at
    compile time (Size()'s output, a size read from a shape)."""

    def __init__(self, N=TBD, M=None, dtype=None, *, name=None) -> None:
        sizes = {"N": N, "M": M}
        for key, value in sizes.items():
            if value is TBD or (key == "M" and value is None):
                continue
            if not _is_int(value) or value < 0:
                other = ", None (M = N)" if key == "M" else ""
                raise MithrilError(f"EyeComplement: {key} must be a non-negative int, TBD (a "
                                   f"terminal){other}, got {value!r}")
        self.inputs = tuple(k for k, v in sizes.items() if v is TBD)
        super().__init__(name)
        self._specs = {k: TerminalSpec(shape=()) for k in self.inputs}
        self.N, self.M, self.dtype = N, M, dtype
        if dtype is not None:
            _dtype_or(dtype, "float32", "EyeComplement")  # checked now

    def emit(self, builder, operands, path, float_dtype="float32"):
        sizes = {}
        for key in ("N", "M"):
            value = getattr(self, key)
            if value is TBD:
                value = _known(builder, operands, key, "EyeComplement", path)
                if not _is_int(value) or value < 0:
                    raise MithrilError(f"{path}: EyeComplement: {key} must be a non-negative "
                                       f"int, got {value!r}")
            sizes[key] = value
        rows = int(sizes["N"])
        columns = rows if sizes["M"] is None else int(sizes["M"])
        dtype = _dtype_or(self.dtype, float_dtype, "EyeComplement")
        value = np.ones((rows, columns), dtype) - np.eye(rows, columns, dtype=dtype)
        return {"output": builder.add_constant(value, path)}


# Tensor models -----------------------------------------------------------------------

class CartesianDifference(Primitive):
    """output[i, j] = left[i] - right[j]: left [N, d] and right [M, d] give
    [N, M, d] (left[:, None, :] - right[None, :, :]): unsqueezes and a
    broadcasting subtraction, differentiable in both."""
    op = "subtract"
    inputs = ("left", "right")

    def emit(self, builder, operands, path, float_dtype="float32"):
        left, right = operands["left"], operands["right"]
        shapes = [_shape_of(builder, left), _shape_of(builder, right)]
        if any(len(shape) != 2 for shape in shapes) or (
                None not in (shapes[0][1], shapes[1][1]) and shapes[0][1] != shapes[1][1]):
            raise MithrilError(f"{path}: CartesianDifference needs left [N, d] and right "
                               f"[M, d], got shapes {_show(shapes[0])} and {_show(shapes[1])}")
        rows = builder.add_op("unsqueeze", [left], {"axis": 1}, path)[0]
        columns = builder.add_op("unsqueeze", [right], {"axis": 0}, path)[0]
        values = static.promote(builder, [rows, columns], float_dtype, path)
        return {"output": builder.add_op("subtract", values, {}, path)[0]}


class Trapezoid(Model):
    """numpy.trapezoid(y, x) along the last axis: the sum of (x[k+1] - x[k])
    * (y[k+1] + y[k]) / 2. x has y's shape or is 1-D (the positions along
    the last axis). Differentiable in y and x. The original's x may be
    omitted (unit spacing); here it is a terminal to connect."""

    _connect_order = ("y", "x", "output")

    def __init__(self, *, name=None) -> None:
        super().__init__(name)
        c = Composer(self)

        def step(key: str, start, stop):
            return c(Slice(start=start, stop=stop, axis=-1), input=key)

        heights = c(Add(), left=step("y", 1, None), right=step("y", 0, -1))
        widths = c(Subtract(), left=step("x", 1, None), right=step("x", 0, -1))
        areas = c(Multiply(), left=c(Multiply(), left=widths, right=heights), right=0.5)
        c(Sum(axis=-1), input=areas, output="output")
        c.finish("y")


class ElementWiseAffine(Model):
    """output = input * weight + bias, broadcasting, without shape rules (the
    shapes given decide). weight and bias are trainable parameters."""

    _connect_order = ("input", "weight", "bias", "output")

    def __init__(self, *, name=None) -> None:
        super().__init__(name)
        c = Composer(self)
        scaled = c(Multiply(), left="input", right=_param("weight", None))
        c(Add(), left=scaled, right=_param("bias", None), output="output")
        c.finish("input")


# Convolutions and pools with compile-time arguments --------------------------------

class _WindowedPrimitive(Primitive):
    """A convolution or pool whose stride, padding, ... are terminals known at
    compile time: constructor values (the original's), or connections."""

    owner = ""
    spatial = 1
    value_keys: tuple[str, ...] = ()

    def _take_values(self, values: dict) -> None:
        for key, value in values.items():
            if value is TBD or value is None:
                continue
            if key in self.value_keys:
                if isinstance(value, list):
                    value = tuple(tuple(v) if isinstance(v, list) else v for v in value)
                if not (_is_int(value) or isinstance(value, tuple)):
                    raise TypeError(f"{self.owner}() argument '{key}' must be an int or a tuple "
                                    f"of ints, got {value!r}")
            elif not _is_constant_value(value):
                raise TypeError(f"{self.owner}() argument '{key}' is a tensor terminal: give "
                                f"a constant (a numpy array), not {type(value).__name__}")
            self._set_terminal_value(key, value)

    def _ints(self, builder, operands, key: str, path: str) -> list[int]:
        value = _known(builder, operands, key, self.owner, path)
        if _is_int(value):
            return [int(value)] * self.spatial
        if _is_int_tuple(value, self.spatial):
            return [int(v) for v in value]
        raise MithrilError(f"{path}: {self.owner}'s {key} must be an int or {self.spatial} ints, "
                           f"got {value!r}")

    def _pads(self, builder, operands, kernel: list[int], path: str) -> list[int]:
        value = _known(builder, operands, "padding", self.owner, path)
        try:
            return _padding(value, kernel, self.spatial)
        except (MithrilError, TypeError, ValueError) as e:
            raise MithrilError(f"{path}: {self.owner}'s padding {value!r}: {e}") from None


class _PrimitiveConvolution(_WindowedPrimitive):
    """Convolution of input [N, C_in, *spatial] by weight [out, C_in / groups,
    *kernel], plus bias [1, out, 1 ...] (a broadcasting add; the original's
    bias shape, not Convolution2D's [out])."""
    _connect_order = ("input", "weight", "stride", "padding", "dilation", "output")

    def __init__(self, use_bias: bool, values: dict, name) -> None:
        if not use_bias and values.get("bias", TBD) is not TBD and values["bias"] is not None:
            raise ValueError(f"{self.owner}: bias given with use_bias=False")
        keys = ["input", "weight"] + (["bias"] if use_bias else []) + list(self.value_keys)
        self.inputs = tuple(keys)
        super().__init__(name)
        self.use_bias = bool(use_bias)
        for key in self.value_keys:
            self._specs[key] = TerminalSpec(shape=())
        ones = (1,) * self.spatial
        self._specs["weight"] = TerminalSpec("param", (None, None) + (None,) * self.spatial)
        if use_bias:
            self._specs["bias"] = TerminalSpec("param", (1, None) + ones)
        self._take_values({k: v for k, v in values.items() if k in keys})

    def connect(self, *args, **connections):
        if not self.use_bias and connections.get("bias") is not None:
            raise ValueError(f"{self.owner}: it has no 'bias' input (use_bias=False), got "
                             f"bias={connections['bias']!r}")
        return super().connect(*args, **connections)

    __call__ = connect

    def emit(self, builder, operands, path, float_dtype="float32"):
        weight_shape = _shape_of(builder, operands["weight"])
        if len(weight_shape) != 2 + self.spatial or any(
                d is None for d in weight_shape[2:]):
            raise MithrilError(f"{path}: {self.owner} needs a weight [out, C_in, "
                               f"{', '.join(['k'] * self.spatial)}] whose kernel sizes are "
                               f"known, got shape {_show(weight_shape)}")
        kernel = [int(d) for d in weight_shape[2:]]
        groups = 1
        if "groups" in self.value_keys:
            groups = _known(builder, operands, "groups", self.owner, path)
            if not _is_int(groups) or groups < 1:
                raise MithrilError(f"{path}: {self.owner}'s groups must be a positive int, got "
                                   f"{groups!r}")
        attrs = {"stride": self._ints(builder, operands, "stride", path),
                 "padding": self._pads(builder, operands, kernel, path),
                 "dilation": self._ints(builder, operands, "dilation", path),
                 "groups": int(groups)}
        values = static.promote(builder, [operands["input"], operands["weight"]], float_dtype,
                                path)
        result = builder.add_op(self.op, values, attrs, path)[0]
        if self.use_bias:
            result = builder.add_op("add", static.promote(builder, [result, operands["bias"]],
                                                          float_dtype, path), {}, path)[0]
        return {"output": result}


class PrimitiveConvolution1D(_PrimitiveConvolution):
    """The original's PrimitiveConvolution1D: input [N, C_in, L], weight
    [out, C_in, k], bias [1, out, 1]; stride and dilation ints, padding an
    int or (before, after), known at compile time (left TBD: terminals)."""
    op, owner, spatial = "conv1d", "PrimitiveConvolution1D", 1
    value_keys = ("stride", "padding", "dilation")

    def __init__(self, use_bias: bool = True, input=TBD, weight=TBD, stride=TBD, padding=TBD,
                 dilation=TBD, *, bias=TBD, name=None) -> None:
        super().__init__(use_bias, dict(input=input, weight=weight, bias=bias, stride=stride,
                                        padding=padding, dilation=dilation), name)


class PrimitiveConvolution2D(_PrimitiveConvolution):
    """The original's PrimitiveConvolution2D: input [N, C_in, H, W], weight
    [out, C_in / groups, kh, kw], bias [1, out, 1, 1]; stride and dilation
    ints or pairs, padding an int, (ph, pw) or ((top, bottom), (left,
    right)), groups an int, known at compile time (left TBD: terminals)."""
    op, owner, spatial = "conv2d", "PrimitiveConvolution2D", 2
    value_keys = ("stride", "padding", "dilation", "groups")
    _connect_order = ("input", "weight", "stride", "padding", "dilation", "groups", "output")

    def __init__(self, use_bias: bool = True, input=TBD, weight=TBD, stride=TBD, padding=TBD,
                 dilation=TBD, groups=TBD, *, bias=TBD, name=None) -> None:
        super().__init__(use_bias, dict(input=input, weight=weight, bias=bias, stride=stride,
                                        padding=padding, dilation=dilation, groups=groups), name)


class _PrimitivePool(_WindowedPrimitive):
    """A pool of input [N, C, *spatial] over windows kernel_size with stride,
    padding and dilation known at compile time (left TBD: terminals)."""
    value_keys = ("kernel_size", "stride", "padding", "dilation")

    def __init__(self, input=TBD, kernel_size=TBD, stride=TBD, padding=TBD, dilation=TBD, *,
                 name=None) -> None:
        self.inputs = ("input",) + self.value_keys
        super().__init__(name)
        for key in self.value_keys:
            self._specs[key] = TerminalSpec(shape=())
        self._take_values(dict(input=input, kernel_size=kernel_size, stride=stride,
                               padding=padding, dilation=dilation))

    def emit(self, builder, operands, path, float_dtype="float32"):
        kernel = self._ints(builder, operands, "kernel_size", path)
        attrs = {"kernel_size": kernel, "stride": self._ints(builder, operands, "stride", path),
                 "padding": self._pads(builder, operands, kernel, path),
                 "dilation": self._ints(builder, operands, "dilation", path)}
        return {"output": builder.add_op(self.op, [operands["input"]], attrs, path)[0]}


class PrimitiveMaxPool1D(_PrimitivePool):
    """The original's PrimitiveMaxPool1D: the maximum over windows of
    input [N, C, L]; kernel_size, stride, dilation ints, padding an int or
    (before, after)."""
    op, owner, spatial = "max_pool1d", "PrimitiveMaxPool1D", 1


class PrimitiveMaxPool2D(_PrimitivePool):
    """The original's PrimitiveMaxPool2D: the maximum over windows of
    input [N, C, H, W]; kernel_size, stride, dilation ints or pairs, padding
    an int, (ph, pw) or ((top, bottom), (left, right))."""
    op, owner, spatial = "max_pool2d", "PrimitiveMaxPool2D", 2


class PrimitiveAvgPool2D(_PrimitivePool):
    """The original's PrimitiveAvgPool2D: the mean over windows of input
    [N, C, H, W], with PrimitiveMaxPool2D's arguments."""
    op, owner, spatial = "avg_pool2d", "PrimitiveAvgPool2D", 2


# Metrics ---------------------------------------------------------------------------

class Metric(Model):
    """The original's Metric, the core Accuracy, Precision, Recall and F1
    build on (it is not Accuracy): label argmax'ed on its last axis when
    one-hot; pred argmax'ed when one-hot, or with is_binary and a pred of
    probabilities 1 where pred > threshold and 0 elsewhere. Outputs
    pred_formatted, label_formatted and output = pred_formatted -
    label_formatted (0 where the prediction is right); class indices stay
    integers. Canonical input pred."""

    _connect_order = ("pred", "label", "output", "pred_formatted", "label_formatted")

    def __init__(self, threshold: float | None = None, is_binary: bool = False,
                 is_pred_one_hot: bool = True, is_label_one_hot: bool = True, *,
                 name=None) -> None:
        from .parity import _check_metric_arguments, metric_indices
        _check_metric_arguments("Metric", threshold, is_binary)
        super().__init__(name)
        self.threshold, self.is_binary = threshold, bool(is_binary)
        self.is_pred_one_hot, self.is_label_one_hot = bool(is_pred_one_hot), bool(is_label_one_hot)
        c = Composer(self)
        pred, label = metric_indices(c, threshold, is_binary, is_pred_one_hot, is_label_one_hot)
        c(Buffer(), input=pred, output="pred_formatted")
        c(Buffer(), input=label, output="label_formatted")
        c(Subtract(), left="pred_formatted", right="label_formatted", output="output")
        self.nets["label"].differentiable = False
        c.finish("pred")


class _AUCCurve(Primitive):
    """The (tpr, fpr) points of AUCCore (see there), from comparisons of all
    pairs of samples: N^2 elements, no sorting."""
    op = "greater_equal"
    inputs = ("input", "label")

    def emit(self, builder, operands, path, float_dtype="float32"):
        scores, label = operands["input"], operands["label"]
        shape = _shape_of(builder, scores)
        if len(shape) != 1 or len(_shape_of(builder, label)) != 1:
            raise MithrilError(f"{path}: AUCCore needs 1-D input and label [N], got shapes "
                               f"{_show(shape)} and {_show(_shape_of(builder, label))}")
        count = shape[0]
        if count is None:
            raise MithrilError(f"{path}: AUCCore needs the number of samples known at compile "
                               f"time, got shape {_show(shape)}")

        def op(name, *values, **attrs):
            return builder.add_op(name, list(values), attrs, path)[0]

        def const(value):
            return builder.add_constant(np.asarray(value, dtype=float_dtype), path)

        def as_float(value):
            return op("cast", value, element_type=float_dtype)

        def row_sum(matrix):
            return op("sum", matrix, axes=[1], keepdim=False)

        scores = static.promote_to(builder, scores, float_dtype, path)
        positive = as_float(op("equal", as_float(label), const(1.0)))
        negative = as_float(op("equal", as_float(label), const(0.0)))
        column = op("reshape", scores, shape=[count, 1])  # s_i down the rows
        row = op("reshape", scores, shape=[1, count])  # s_j along the columns
        # Predicted positive at threshold s_i: the samples j with s_j >= s_i.
        chosen = as_float(op("greater_equal", row, column))
        tpr = op("divide", row_sum(op("multiply", chosen, positive)), op("sum", positive))
        fpr = op("divide", row_sum(op("multiply", chosen, negative)), op("sum", negative))
        # One point per distinct score: the first sample holding it, placed at
        # the number of distinct scores above it (the original's order, from
        # the highest score down).
        same = as_float(op("equal", column, row))
        earlier = const(np.tril(np.ones((count, count)), k=-1))
        first = as_float(op("equal", row_sum(op("multiply", same, earlier)), const(0.0)))
        above = as_float(op("greater", row, column))
        place = row_sum(op("multiply", above, op("reshape", first, shape=[1, count])))
        positions = const(np.arange(count).reshape(count, 1))
        picks = op("multiply", as_float(op("equal", positions, op("reshape", place,
                                                                   shape=[1, count]))),
                   op("reshape", first, shape=[1, count]))
        unused = op("subtract", const(1.0), row_sum(picks))
        curves = []
        for rate in (tpr, fpr):
            points = row_sum(op("multiply", picks, op("reshape", rate, shape=[1, count])))
            # Past the last distinct score: the last point again (the lowest
            # threshold's, where the rates are largest).
            last = op("max", rate, keepdim=False)
            points = op("add", points, op("multiply", unused, last))
            curves.append(op("reshape", points, shape=[1, count]))
        return {"output": op("concat", *curves, axis=0)}


class AUCCore(Model):
    """The original's AUCCore, the ROC curve of one class that AUC integrates
    with Trapezoid: input [N] scores, label [N] (1 or True positive, 0 or
    False negative); output [2, M], row 0 the true positive rates and row 1
    the false positive rates at each of the M distinct scores taken as the
    threshold (score >= threshold is predicted positive), from the highest
    score down. The original's M is the number of distinct scores, known only
    at run time; here the output is [2, N] and its columns past the M-th
    repeat the last point, which adds nothing to a trapezoid integral.
    Nothing has a gradient. N must be known at compile time."""

    _connect_order = ("input", "label", "output")

    def __init__(self, *, name=None) -> None:
        super().__init__(name)
        c = Composer(self)
        c(_AUCCurve(), input="input", label="label", output="output")
        self.nets["label"].differentiable = False
        c.finish("input")


# Primitives by formula key ------------------------------------------------------------

class PrimitiveModel(Primitive):
    """The original's PrimitiveModel(formula_key, *, name=None, **keys): one
    primitive whose terminals are the keyword arguments (IOKey, Tensor or
    TBD; `output` is its output, the others its inputs, in the order given)
    and whose computation is the backend's function `formula_key`. Here the
    backend's functions are the mithril dialect's ops: `formula_key` names one
    (`"add"`, `"relu"`, `"matmul"`, ...; docs/reference/MithrilDialect.md) and
    the inputs are its operands in order. An op that does not exist, or takes
    other operands, is an error naming it when the model is compiled."""

    def __init__(self, formula_key: str, *, name=None, **keys) -> None:
        if not isinstance(formula_key, str) or not formula_key:
            raise MithrilError(f"{type(self).__name__}: formula_key must be the name of an op, "
                               f"got {formula_key!r}")
        if "output" not in keys:
            raise MithrilError(f"{type(self).__name__}('{formula_key}'): give the output "
                               "terminal as output=IOKey(...)")
        self.inputs = tuple(k for k in keys if k != "output")
        self.outputs = ("output",)
        super().__init__(name)
        self.op = formula_key.removeprefix("mithril.")
        self.formula_key = formula_key
        # The IOKeys' shape templates: a registered C primitive's shape rule.
        self._templates = {k: getattr(v, "shape_template", None) for k, v in keys.items()}
        for key in self.inputs:
            value = keys[key]
            shape = getattr(value, "shape_template", None)
            if shape is not None:
                self._specs[key] = TerminalSpec(shape=tuple(shape))
            given = getattr(value, "value", None)
            if given is not None and not isinstance(value, str):
                self._set_terminal_value(key, given)

    def emit(self, builder, operands, path, float_dtype="float32"):
        values = [operands[k] for k in self.inputs if k in operands]
        try:
            results = builder.add_op(self.op, values, {}, path)
        except MithrilError as e:
            raise MithrilError(f"{type(self).__name__}('{self.formula_key}'): "
                               f"{str(e).splitlines()[0]}") from None
        return {"output": results[0]}

    def emit_custom_call(self, builder, operands, path, primitive):
        """The primitive as a call of the C function the backend registered
        for `formula_key` (backend.register_primitive; custom.py)."""
        from ..custom import result_shape_attributes
        missing = [k for k in self.inputs if k not in operands]
        if missing:
            raise MithrilError(f"{type(self).__name__}('{self.formula_key}'): input "
                               f"'{missing[0]}' is not connected")
        attributes = {"callee": primitive.function.name,
                      **result_shape_attributes(self.formula_key, self.inputs, self._templates,
                                                self._templates.get("output"))}
        if primitive.gradient is not None:
            attributes["grad_callee"] = primitive.gradient.name
        try:
            results = builder.add_op("custom_call", [operands[k] for k in self.inputs],
                                     attributes, path)
        except MithrilError as e:
            raise MithrilError(f"{type(self).__name__}('{self.formula_key}'): "
                               f"{str(e).splitlines()[0]}") from None
        return {"output": results[0]}


class CustomPrimitiveModel(PrimitiveModel):
    """The original's CustomPrimitiveModel(formula_key, name=None, **keys): a
    PrimitiveModel (see there) a user defines."""

    def __init__(self, formula_key: str, name=None, **keys) -> None:
        super().__init__(formula_key, name=name, **keys)


__all__ += ["CustomPrimitiveModel", "PrimitiveModel"]
