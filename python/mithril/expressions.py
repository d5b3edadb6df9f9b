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
                      "//": "__rfloordiv__", "/": "__rtruediv__", "**": "__rpow__"}[name]
            if reflected:
                method = method.replace("__r", "__")
            return getattr(other, method)(self)
        allowed = (Dim, numbers.Real) if name in ("/", "**") else (Dim, numbers.Integral)
        if not isinstance(other, allowed) or isinstance(other, bool):
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
        return self._op(o, lambda a, b: a / b, "/")

    def __rtruediv__(self, o): return self._op(o, lambda a, b: a / b, "/", True)
    def __pow__(self, o): return self._op(o, lambda a, b: a ** b, "**")
    def __rpow__(self, o): return self._op(o, lambda a, b: a ** b, "**", True)

    def tensor(self):
        """The size as an integer tensor (the original's `H.tensor()`)."""
        from .models.scalars import static_expression
        return Expr(_models().ToTensor, {"input": static_expression(self)})

    def values(self) -> list:
        """The connections this size reads."""
        if self.kind in ("dim", "numel"):
            return [self.args[0]]
        return [v for x in self.args[2:] if isinstance(x, Dim) for v in x.values()]

    def resolve(self, shape_of: Callable) -> int:
        """The size, given shape_of(connection) -> its compiled shape."""
        if self.kind == "op":
            a, b = (x.resolve(shape_of) if isinstance(x, Dim) else x for x in self.args[2:])
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
    """`x.shape`: index it for sizes (`x.shape[0]`, `x.shape[:2]`). As a
    value (a terminal's connection, `Reshape()(shape=x.shape)`), the whole
    shape, or the part a slice the rank decides picks (`x.shape[2:]`), is a
    tuple known at compile time."""

    def __init__(self, value, index: slice | None = None) -> None:
        self.value = value
        self.index = index

    def __getitem__(self, index):
        if self.index is not None:
            raise TypeError("a slice of a shape is indexed once it is known: slice x.shape "
                            "once")
        if isinstance(index, slice):
            if index.step not in (None, 1) or index.stop is None or any(
                    i is not None and (i < 0) for i in (index.start, index.stop)):
                # Bounds the rank decides: the sizes are picked when compiled.
                return Shape(self.value, index)
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
    atleast_1d = _unary("AtLeast1D")
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

    def reshape(self, *shape, **keyword) -> Expr:
        """Sizes are ints (one may be -1), sizes read from shapes (`x.shape[0]`,
        `B * T`) or connections whose values are known at compile time (an
        input a parent gives a size), as the original's; `shape=` is the
        keyword form."""
        if keyword:
            if shape or set(keyword) != {"shape"}:
                raise TypeError("reshape takes the shape, positionally or as shape=")
            shape = (keyword["shape"],)
        if len(shape) == 1 and isinstance(shape[0], Shape):
            from .models.scalars import static_expression
            return Expr(_models().Reshape, {"input": self, "shape": static_expression(shape[0])})
        if len(shape) == 1 and isinstance(shape[0], (list, tuple)):
            shape = tuple(shape[0])
        if any(isinstance(d, ExprOps) and not isinstance(d, Dim) for d in shape):
            # Sizes that are connections: a shape known when compiling.
            from .models.scalars import static_expression
            return Expr(_models().Reshape, {"input": self,
                                            "shape": static_expression(tuple(shape))})
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
        """The input as `dtype`: a dtype, or a connection whose value is one
        (`x.cast(y.dtype())`); None is the backend's float type."""
        models = _models()
        if isinstance(dtype, ExprOps):
            return Expr(models.Cast, {"input": self, "dtype": dtype})
        return Expr(lambda: models.Cast(dtype="float_like" if dtype is None else dtype),
                    {"input": self})

    def dtype(self) -> Expr:
        """The original's x.dtype(): the element type, known at compile time
        (for Cast and .cast)."""
        from .models.scalars import DtypeOf
        return Expr(DtypeOf, {"input": self})

    def tensor(self) -> Expr:
        """A number known at compile time (a size, an item) as a tensor."""
        return Expr(_models().ToTensor, {"input": self})

    def item(self) -> Expr:
        """The number a one-element tensor holds, known at compile time."""
        return Expr(_models().Item, {"input": self})

    def split(self, split_size: int, axis: int = 0):
        """The original's split: `split_size` equal chunks along `axis`
        (Split's outputs); index the result for one (`x.split(2, axis=1)[0]`)."""
        return _models().Split(split_size, axis)(input=self)

    def __getitem__(self, index) -> Expr:
        """numpy's indexing (ints, slices, None, ..., integer arrays and
        tensors), of a tensor or a list (models.lists.Indexer)."""
        from .models.lists import Indexer
        model = Indexer(index)
        return Expr(lambda: model, {"input": self, **model.operands})

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
        self.shape_template = None

    def set_shapes(self, shape) -> None:
        """The original's set_shapes on a connection the expression computes:
        the shape it must have (ints; None or a name for any size), checked
        when the model is compiled."""
        self.shape_template = list(shape)

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
