# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""The original's connection expressions: `a + b`, `x.T`, `h.mean(axis=1)`,
`x[:, 0]`, ... on connections (Connection, IOKey, a model call's result)
build an `Expr`, a small tree of library models that nothing has added yet.
Used as a terminal's connection (`Relu()(input=a + b)`, `Model.create(...)`),
the composite receiving it adds the tree's models, once per expression, and
connects the terminal to the tree's output.

Only the models are chosen here: what each computes is its op's, in the
dialect."""

from __future__ import annotations

import numbers
from collections.abc import Callable

import numpy as np


class Dim:
    """A size read from a connection's shape when the model is emitted (the
    original's `x.shape[1]`, `x.size(1)`), and integer arithmetic on sizes
    (`B * T`, `C // heads`). The shape must be known at compile time there."""

    def __init__(self, kind: str, *args) -> None:
        self.kind, self.args = kind, args

    def _op(self, other, fn, name, reflected=False):
        if isinstance(other, ExprOps) and not isinstance(other, Dim):
            # A size meeting a tensor: the tensor's operator, with the size
            # as a constant operand.
            method = {"+": "__radd__", "-": "__rsub__", "*": "__rmul__",
                      "//": "__rfloordiv__"}[name]
            if reflected:
                method = method.replace("__r", "__")
            return getattr(other, method)(self)
        if not isinstance(other, (Dim, numbers.Integral)) or isinstance(other, bool):
            return NotImplemented
        a, b = (other, self) if reflected else (self, other)
        return Dim("op", name, fn, a, b)

    def __add__(self, o): return self._op(o, lambda a, b: a + b, "+")
    def __radd__(self, o): return self._op(o, lambda a, b: a + b, "+", True)
    def __sub__(self, o): return self._op(o, lambda a, b: a - b, "-")
    def __rsub__(self, o): return self._op(o, lambda a, b: a - b, "-", True)
    def __mul__(self, o): return self._op(o, lambda a, b: a * b, "*")
    def __rmul__(self, o): return self._op(o, lambda a, b: a * b, "*", True)
    def __floordiv__(self, o): return self._op(o, lambda a, b: a // b, "//")
    def __rfloordiv__(self, o): return self._op(o, lambda a, b: a // b, "//", True)
    def __truediv__(self, o):
        if isinstance(o, ExprOps) and not isinstance(o, Dim):
            return o.__rtruediv__(self)
        return NotImplemented

    def values(self) -> list:
        """The connections this size reads."""
        if self.kind in ("dim", "numel"):
            return [self.args[0]]
        return [v for x in self.args[2:] if isinstance(x, Dim) for v in x.values()]

    def resolve(self, shape_of: Callable) -> int:
        """The size, given shape_of(connection) -> its compiled shape."""
        if self.kind == "op":
            a, b = (x.resolve(shape_of) if isinstance(x, Dim) else int(x) for x in self.args[2:])
            return self.args[1](a, b)
        shape = shape_of(self.args[0])
        if self.kind == "numel":
            sizes = shape
        else:
            axis = self.args[1]
            if not -len(shape) <= axis < len(shape):
                raise IndexError(f"shape index {axis} is out of range for a shape of rank "
                                 f"{len(shape)}")
            sizes = [shape[axis]]
        if any(d is None for d in sizes):
            raise ValueError(f"a size read from the shape {list(shape)} must be known at "
                             "compile time")
        return int(np.prod(sizes, dtype=np.int64))


class Shape:
    """`x.shape`: index it for sizes (`x.shape[0]`, `x.shape[:2]`)."""

    def __init__(self, value) -> None:
        self.value = value

    def __getitem__(self, index):
        if isinstance(index, slice):
            if index.step not in (None, 1) or any(
                    i is not None and (i < 0) for i in (index.start, index.stop)):
                raise TypeError("x.shape[a:b] takes non-negative bounds and no step")
            if index.stop is None:
                raise TypeError("x.shape[a:] needs the rank: write x.shape[a:b]")
            return tuple(Dim("dim", self.value, i) for i in range(index.start or 0, index.stop))
        if isinstance(index, numbers.Integral) and not isinstance(index, bool):
            return Dim("dim", self.value, int(index))
        raise TypeError(f"x.shape takes an int or a slice, got {type(index).__name__}")

    def __iter__(self):
        raise TypeError("x.shape cannot be unpacked before the rank is known: index it "
                        "(x.shape[0], x.shape[:3])")


def size_values(*specs) -> list:
    """The distinct connections the Dims in `specs` (nested lists) read."""
    found, seen = [], set()

    def walk(x):
        if isinstance(x, Dim):
            for v in x.values():
                if id(v) not in seen:
                    seen.add(id(v))
                    found.append(v)
        elif isinstance(x, (list, tuple)):
            for y in x:
                walk(y)
    for spec in specs:
        walk(spec)
    return found


def resolve_sizes(spec, shape_of: Callable):
    """`spec` with every Dim replaced by its size (nested lists kept)."""
    if isinstance(spec, Dim):
        return spec.resolve(shape_of)
    if isinstance(spec, (list, tuple)):
        return type(spec)(resolve_sizes(x, shape_of) for x in spec)
    return spec


def _models():
    from . import models
    return models


def _binary(name: str, reflected: bool = False, left: str = "left", right: str = "right"):
    def apply(self, other):
        model = getattr(_models(), name)
        a, b = (other, self) if reflected else (self, other)
        return Expr(model, {left: a, right: b})
    return apply


def _unary(name: str, **kwargs):
    def apply(self):
        model = getattr(_models(), name)
        return Expr(lambda: model(**kwargs), {"input": self})
    return apply


def _reduction(name: str):
    def apply(self, axis=None, keepdim: bool = False):
        model = getattr(_models(), name)
        return Expr(lambda: model(axis=axis, keepdim=keepdim), {"input": self})
    return apply


def _index_steps(index) -> list:
    """numpy basic indexing (ints, slices, None, Ellipsis) as a list of
    steps on axes: ("slice", axis, start, stop, step), ("squeeze", axis),
    ("unsqueeze", axis). Ellipsis is allowed only where nothing follows
    it but None or full slices (the rank is not known here)."""
    items = list(index) if isinstance(index, tuple) else [index]
    for item in items:
        if isinstance(item, (bool, np.bool_)) or not (
                item is None or item is Ellipsis or isinstance(item, (slice, numbers.Integral))):
            raise TypeError(f"connection indexing takes ints, slices, None and ..., got "
                            f"{type(item).__name__} (integer-array indexing is not supported)")
    tail_steps = []
    if Ellipsis in items:
        where = items.index(Ellipsis)
        tail = items[where + 1:]
        if any(not (t is None or (isinstance(t, slice) and t == slice(None))) for t in tail):
            raise TypeError("connection indexing: ... must be followed only by None or ':'")
        items = items[:where]
        # A None after ... is a new axis counted from the end; inserted
        # right to left, each lands where numpy puts it.
        tail_steps = [("unsqueeze", -(len(tail) - i)) for i in reversed(range(len(tail)))
                      if tail[i] is None]
    steps, axis, squeezed = [], 0, []
    for item in items:
        if item is None:
            steps.append(("unsqueeze", axis))
            axis += 1
        elif isinstance(item, slice):
            if item != slice(None):
                steps.append(("slice", axis, item.start, item.stop, item.step))
            axis += 1
        else:
            i = int(item)
            stop = None if i == -1 else i + 1
            steps.append(("slice", axis, i, stop, 1))
            squeezed.append(axis)
            axis += 1
    # Integer indices drop their axes last, from the highest, so that the
    # axes the other steps name stay where they were.
    steps += [("squeeze", a) for a in sorted(squeezed, reverse=True)]
    return steps + tail_steps


class ExprOps:
    """The expression operators of connections, expressions and calls."""

    __add__ = _binary("Add")
    __radd__ = _binary("Add", reflected=True)
    __sub__ = _binary("Subtract")
    __rsub__ = _binary("Subtract", reflected=True)
    __mul__ = _binary("Multiply")
    __rmul__ = _binary("Multiply", reflected=True)
    __truediv__ = _binary("Divide", left="numerator", right="denominator")
    __rtruediv__ = _binary("Divide", True, "numerator", "denominator")
    __floordiv__ = _binary("FloorDivide", left="numerator", right="denominator")
    __rfloordiv__ = _binary("FloorDivide", True, "numerator", "denominator")
    __pow__ = _binary("Power", left="base", right="exponent")
    __rpow__ = _binary("Power", True, "base", "exponent")
    __matmul__ = _binary("MatrixMultiply")
    __rmatmul__ = _binary("MatrixMultiply", reflected=True)
    __gt__ = _binary("Greater")
    __ge__ = _binary("GreaterEqual")
    __lt__ = _binary("Less")
    __le__ = _binary("LessEqual")
    __and__ = _binary("LogicalAnd")
    __rand__ = _binary("LogicalAnd", reflected=True)
    __xor__ = _binary("LogicalXOr")
    __rxor__ = _binary("LogicalXOr", reflected=True)
    __lshift__ = _binary("ShiftLeft", left="input", right="shift")
    __rshift__ = _binary("ShiftRight", left="input", right="shift")
    __neg__ = _unary("Negate")
    __invert__ = _unary("LogicalNot")
    eq = _binary("Equal")
    ne = _binary("NotEqual")
    sqrt = _unary("Sqrt")
    exp = _unary("Exponential")
    sin = _unary("Sine")
    cos = _unary("Cosine")
    abs = _unary("Absolute")
    floor = _unary("Floor")
    sum = _reduction("Sum")
    mean = _reduction("Mean")
    max = _reduction("Max")
    min = _reduction("Min")
    prod = _reduction("Prod")

    # `|` stays free for composites (`model |= ...`); logical or is `.or_`.
    or_ = _binary("LogicalOr")

    def var(self, axis=None, keepdim: bool = False, correction: float = 0.0) -> Expr:
        models = _models()
        return Expr(lambda: models.Variance(axis=axis, keepdim=keepdim, correction=correction),
                    {"input": self})

    def transpose(self, axes=None) -> Expr:
        """axes None reverses every axis (the original's, and numpy's, rule)."""
        models = _models()
        return Expr(lambda: models.Transpose(axes=axes), {"input": self})

    @property
    def T(self) -> Expr:  # noqa: N802 - numpy's name
        return self.transpose()

    def reshape(self, *shape) -> Expr:
        """Sizes are ints (one may be -1) or sizes read from shapes
        (`x.shape[0]`, `B * T`), known at compile time."""
        if len(shape) == 1 and isinstance(shape[0], (list, tuple)):
            shape = tuple(shape[0])
        flat = []
        for d in shape:
            flat.extend(d if isinstance(d, tuple) else [d])
        if not all(isinstance(d, Dim) or (isinstance(d, numbers.Integral)
                                          and not isinstance(d, bool)) for d in flat):
            raise TypeError(f"reshape takes ints (and one -1) or sizes of shapes, got {shape}")
        models = _models()
        refs = size_values(flat)
        if not refs:
            return Expr(lambda: models.Reshape(shape=[int(d) for d in flat]), {"input": self})
        from .models.parity import SizedReshape
        operands = {"input": self, **{f"size{i}": v for i, v in enumerate(refs)}}
        return Expr(lambda: SizedReshape(flat, refs), operands)

    def size(self, dim=None):
        """The original's size(): a dimension's size, or the element count."""
        if dim is None:
            return Dim("numel", self)
        return Dim("dim", self, int(dim))

    def len(self) -> Dim:
        """The original's len(): the size of the first axis."""
        return Dim("dim", self, 0)

    @property
    def shape(self) -> Shape:
        return Shape(self)

    def clamp(self, min_val=None, max_val=None) -> Expr:
        models = _models()
        big = np.finfo(np.float64).max
        return Expr(models.Clamp, {"input": self, "min_val": -big if min_val is None else min_val,
                                   "max_val": big if max_val is None else max_val})

    def cast(self, dtype=None) -> Expr:
        models = _models()
        return Expr(lambda: models.Cast(dtype="float_like" if dtype is None else dtype),
                    {"input": self})

    def __getitem__(self, index) -> Expr:
        models = _models()
        value = self
        for step in _index_steps(index):
            kind, axis = step[0], step[1]
            if kind == "slice":
                start, stop, stride = step[2:]
                value = Expr(lambda a=axis, s=start, e=stop, t=stride:
                             models.Slice(start=s, stop=e, step=t, axis=a), {"input": value})
            elif kind == "squeeze":
                value = Expr(lambda a=axis: models.Squeeze(axis=a), {"input": value})
            else:
                value = Expr(lambda a=axis: models.Unsqueeze(axis=a), {"input": value})
        return value

    # Connections are keys of dicts and members of sets by identity, as
    # the original's (== is not an expression).
    __hash__ = object.__hash__
    __eq__ = object.__eq__


class Expr(ExprOps):
    """An operator applied to operands: `make()` creates the model, whose
    input terminals take `operands` (connections, expressions or constants)
    and whose `output` terminal is the expression's value."""

    def __init__(self, make: Callable, operands: dict, output: str = "output") -> None:
        self.make = make
        self.operands = operands
        self.output = output

    def __repr__(self) -> str:
        return f"Expr({getattr(self.make, '__name__', 'model')})"


def functional(fn: Callable) -> Callable:
    """The original's @functional: `fn` takes connections and returns an
    expression (or a dict of them, or a tuple); the decorated function builds
    a model whose inputs are named after fn's positional parameters, by
    Model.create. Keyword arguments pass through to `fn` (sizes, options);
    a dict's keys name the outputs, otherwise the output is "output"."""
    import functools
    import inspect

    from .framework import IOKey, Model
    parameters = [p for p in inspect.signature(fn).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
                  and p.default is p.empty]

    @functools.wraps(fn)
    def build(*args, name: str | None = None, **kwargs) -> Model:
        given = dict(zip([p.name for p in parameters], args))
        inputs = {p.name: given.get(p.name, IOKey(p.name)) for p in parameters
                  if p.name not in kwargs}
        result = fn(**inputs, **kwargs)
        if isinstance(result, dict):
            return Model.create(name=name, **result)
        if isinstance(result, (list, tuple)):
            return Model.create(*result, name=name)
        return Model.create(name=name, output=result)
    return build
