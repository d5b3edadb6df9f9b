# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""The original's scalar models: values it passes along connections as Python
numbers, tuples and dtypes rather than tensors (`Size`, `Arange`'s bounds,
`x.dtype()`, `t.item()`, a shape given to `Reshape`). Here they are known
when the model is compiled (mithril.static records them with the IR values)
and reach the IR as constants; models whose IR needs them fixed read them
there."""

from __future__ import annotations

import numbers

import numpy as np

from .. import static
from ..errors import MithrilError
from ..expressions import Dim, Shape, resolve_sizes, size_values
from ..framework import TBD, Primitive, TerminalSpec
from .parity import _int_like, _shape_of, _show

__all__ = ["Arange", "DtypeOf", "Item", "RandInt", "Randn", "Size", "StaticValue", "ToTensor"]


def _is_connection(value) -> bool:
    from ..expressions import ExprOps
    return isinstance(value, ExprOps) and not isinstance(value, Dim)


class StaticValue(Primitive):
    """A value known when the model is compiled, built of numbers, sizes
    read from shapes (Dims, `x.shape`) and connections whose values are known
    then (`(B, C, h.item(), -1)`): a Python scalar or tuple, and an integer
    (or float) constant in the IR. A lone size is weakly typed, as the
    original's Python ints: it takes the type of the tensor it meets."""

    def __init__(self, spec, name=None) -> None:
        self._connections: list = []
        shapes: list = []

        def walk(x):
            if isinstance(x, Shape):
                shapes.append(x.value)
                return ("shape", x.value, x.index)
            if isinstance(x, (list, tuple)):
                return tuple(walk(y) for y in x)
            if _is_connection(x):
                self._connections.append(x)
                return ("value", len(self._connections) - 1)
            return x

        self._spec = walk(spec)
        self._weak = isinstance(spec, Dim)
        sources = size_values([x for x in _flat(self._spec) if isinstance(x, Dim)])
        for value in shapes:
            if all(value is not v for v in sources):
                sources.append(value)
        self._sources = sources
        self.inputs = (tuple(f"size{i}" for i in range(len(self._sources)))
                       + tuple(f"value{i}" for i in range(len(self._connections))))
        super().__init__(name)

    @property
    def operands(self) -> dict:
        return ({f"size{i}": v for i, v in enumerate(self._sources)}
                | {f"value{i}": v for i, v in enumerate(self._connections)})

    def emit(self, builder, operands, path, float_dtype="float32"):
        by_id = {id(v): operands[f"size{i}"] for i, v in enumerate(self._sources)}

        def shape_of(value):
            return _shape_of(builder, by_id[id(value)])

        def resolve(x):
            if _tagged(x, "shape"):
                shape = shape_of(x[1])
                if x[2] is not None:
                    shape = shape[x[2]]
                if any(d is None for d in shape):
                    raise MithrilError(f"{path}: a shape used as a value must be known at "
                                       f"compile time, got {_show(shape)}")
                return tuple(shape)
            if _tagged(x, "value"):
                return static.python_value(builder, operands[f"value{x[1]}"], "a value",
                                           path)
            if isinstance(x, Dim):
                try:
                    return resolve_sizes(x, shape_of)
                except (ValueError, IndexError) as e:
                    raise MithrilError(f"{path}: {e}") from None
            if isinstance(x, tuple):
                out = []
                for y in x:
                    r = resolve(y)
                    if _tagged(y, "shape"):
                        out.extend(r)
                    else:
                        out.append(r)
                return tuple(out)
            return x

        value = resolve(self._spec)
        array = np.asarray([-1 if v is None else v for v in value]
                           if isinstance(value, tuple) else value)
        if array.dtype.kind == "f":
            array = array.astype(float_dtype)
        elif array.dtype.kind in "iu":
            array = array.astype(np.int64)
        result = builder.add_constant(np.require(array, requirements="C"), path)
        static.record(builder, result, value, weak=self._weak)
        return {"output": result}


def _tagged(x, tag: str) -> bool:
    return (isinstance(x, tuple) and len(x) in (2, 3) and isinstance(x[0], str) and x[0] == tag
            and not isinstance(x[1], str))


def _flat(spec) -> list:
    if _tagged(spec, "shape") or _tagged(spec, "value"):
        return []
    if isinstance(spec, tuple):
        return [y for x in spec for y in _flat(x)]
    return [spec]


def needs_static_value(value) -> bool:
    """Whether a connection value (a terminal's argument) is a size, a shape,
    or a tuple or list holding one: those become a StaticValue."""
    if isinstance(value, (Dim, Shape)):
        return True
    if isinstance(value, (list, tuple)):
        return any(needs_static_value(v) for v in value)
    return False


def static_expression(value):
    """The expression computing `value` (see StaticValue)."""
    from ..expressions import Expr
    model = StaticValue(value)
    return Expr(lambda: model, model.operands)


class Size(Primitive):
    """The original's Size(dim=None): the number of elements of the input
    (dim None), the size of axis `dim`, or a tuple of sizes (dim a tuple),
    known at compile time."""
    op = "shape"

    def __init__(self, dim=None, name=None) -> None:
        if dim is not None and not isinstance(dim, (numbers.Integral, tuple, list)):
            raise MithrilError(f"Size: dim must be None, an int or a tuple of ints, got {dim!r}")
        super().__init__(name)
        self.dim = tuple(dim) if isinstance(dim, list) else dim

    def emit(self, builder, operands, path, float_dtype="float32"):
        shape = _shape_of(builder, operands["input"])
        dims = range(len(shape)) if self.dim is None else (
            self.dim if isinstance(self.dim, tuple) else (self.dim,))
        try:
            sizes = [shape[d] for d in dims]
        except IndexError:
            raise MithrilError(f"{path}: Size: dim {self.dim} is out of range for an input of "
                               f"shape {_show(shape)}") from None
        if any(d is None for d in sizes):
            raise MithrilError(f"{path}: Size needs the sizes it reads known at compile time, "
                               f"got shape {_show(shape)}")
        if self.dim is None:
            value = int(np.prod(sizes, dtype=np.int64))
        elif isinstance(self.dim, tuple):
            value = tuple(int(d) for d in sizes)
        else:
            value = int(sizes[0])
        result = builder.add_constant(np.asarray(value, dtype=np.int64), path)
        static.record(builder, result, value, weak=not isinstance(value, tuple))
        return {"output": result}


class DtypeOf(Primitive):
    """`x.dtype()`: the input's element type, known at compile time (for
    Cast(dtype=...))."""
    op = "shape"

    def emit(self, builder, operands, path, float_dtype="float32"):
        _, dtype = builder.type_of(operands["input"])
        result = builder.add_constant(np.zeros((), dtype=np.int64), path)
        static.record(builder, result, static.DtypeValue(dtype))
        return {"output": result}


class ToTensor(Primitive):
    """`x.tensor()`: a number known at compile time as a tensor of its kind
    (an int an integer tensor, a float one of the backend's float type); a
    tensor stays itself."""
    op = "cast"

    def emit(self, builder, operands, path, float_dtype="float32"):
        x = operands["input"]
        if not static.is_weak(builder, x):
            return {"output": x}
        value = static.lookup(builder, x)
        array = np.asarray(value)
        array = array.astype(np.int64 if array.dtype.kind in "iu" else
                             np.bool_ if array.dtype.kind == "b" else float_dtype)
        result = builder.add_constant(array, path)
        static.record(builder, result, array)
        return {"output": result}


class Item(Primitive):
    """`t.item()`: the number a one-element tensor holds, which must be known
    at compile time here (the original computes it at run time, outside jit)."""
    op = "reshape"

    def emit(self, builder, operands, path, float_dtype="float32"):
        value = np.asarray(static.require(builder, operands["input"], "item()", path))
        if value.size != 1:
            raise MithrilError(f"{path}: item() of a tensor of {value.size} elements")
        number = value.reshape(()).item()
        result = builder.add_constant(np.asarray(number), path) if not isinstance(number, float) \
            else builder.add_constant(np.asarray(number, dtype=float_dtype), path)
        static.record(builder, result, number, weak=True)
        return {"output": result}


class Arange(Primitive):
    """numpy.arange(start, stop, step), the original's Arange: integers of
    the backend's precision when start, stop and step are all ints, else its
    float type (or `dtype`). Each bound is a number, a size read from a shape
    (`Arange(stop=x.shape[1])`), or, left TBD (stop's default), an input
    terminal whose value must be known at compile time (`Size()`'s output,
    an int input the parent gives a size). Input terminals in the original's
    order: stop, start, step."""

    def __init__(self, start=0, stop=TBD, step=1, dtype=None, name=None) -> None:
        bounds = {"start": start, "stop": stop, "step": step}
        terminals = []
        for key in ("stop", "start", "step"):
            value = bounds[key]
            if value is TBD or value is None:
                terminals.append(key)
            elif not (isinstance(value, Dim) or (isinstance(value, numbers.Real)
                                                  and not isinstance(value, bool))):
                raise MithrilError(f"Arange: {key} must be a number, a size of a shape or TBD "
                                   f"(a terminal), got {value!r}")
        if isinstance(step, numbers.Real) and step == 0:
            raise MithrilError("Arange: step must not be 0")
        self._bounds = bounds
        self._terminals = tuple(terminals)
        self._sources = size_values([v for v in bounds.values() if isinstance(v, Dim)])
        self.inputs = self._terminals + tuple(f"size{i}" for i in range(len(self._sources)))
        super().__init__(name)
        self.dtype = dtype

    def connect(self, *args, **connections):
        for i, value in enumerate(self._sources):
            connections.setdefault(f"size{i}", value)
        return super().connect(*args, **connections)

    __call__ = connect

    def emit(self, builder, operands, path, float_dtype="float32"):
        by_id = {id(v): operands[f"size{i}"] for i, v in enumerate(self._sources)}
        values = []
        for key in ("start", "stop", "step"):
            bound = self._bounds[key]
            if key in self._terminals:
                if key not in operands:
                    raise MithrilError(f"{path}: Arange's {key} is not connected")
                bound = static.python_value(builder, operands[key], f"Arange's {key}", path)
            elif isinstance(bound, Dim):
                try:
                    bound = resolve_sizes(bound, lambda v: _shape_of(builder, by_id[id(v)]))
                except (ValueError, IndexError) as e:
                    raise MithrilError(f"{path}: Arange: {e}") from None
            values.append(bound)
        start, stop, step = values
        if step == 0:
            raise MithrilError(f"{path}: Arange: step must not be 0")
        integral = all(isinstance(v, numbers.Integral) for v in values)
        if self.dtype is not None:
            from ..types import compiled_dtype_name
            dtype = compiled_dtype_name(self.dtype, "Arange")
        else:
            dtype = _int_like(float_dtype) if integral else float_dtype
        array = np.arange(start, stop, step, dtype=dtype)
        result = builder.add_constant(array, path)
        static.record(builder, result, array)
        return {"output": result}



class _Random(Primitive):
    """Samples of `shape` drawn inside the compiled model from the int64
    `key` (the dialect's counter-based random ops: the same key, the same
    samples, on every target), and `new_key` (key + 1) for the next draw.

    `shape` must be known when the model is compiled: ints, a tuple, or sizes
    of shapes (`x.shape`). Without a key (the original's default) the key is a
    state key (bind_state_keys) starting at 42: `pm.evaluate(..., state=s)`
    draws with s["key"] and returns the next state (key + 1), and without
    `state=` every call draws with 42. Connect `key` to an input, or give an
    int, to choose the key yourself."""
    outputs = ("output", "new_key")
    _bounds: tuple = ()  # further value terminals (RandInt's low and high)

    def __init__(self, shape, key, dtype, allowed: tuple, name=None, **bounds) -> None:
        from .primitives import _static_shape
        owner = type(self).__name__
        fixed, later = _static_shape(owner, shape)
        self.inputs = (("shape",) if fixed is None else ()) + ("key",) + self._bounds
        super().__init__(name)
        # An int64 scalar, whether given or connected (an input it feeds is one).
        self._specs["key"] = TerminalSpec(shape=(), dtype="int64")
        self._fixed, self._later = fixed, later
        if fixed is not None and any(d < 0 for d in fixed):
            raise MithrilError(f"{owner}: shape must be non-negative sizes, got {shape!r}")
        if dtype is not None:
            from ..types import dtype_name_among
            dtype = dtype_name_among(dtype, allowed, f"{owner}'s dtype")
        self.dtype = dtype
        if key is TBD or key is None:
            # The original's state key, from 42.
            self.state_pairs["key"] = ("new_key", np.array(42, dtype=np.int64))
        elif isinstance(key, bool) or not isinstance(key, numbers.Integral):
            raise MithrilError(f"{owner}: key must be an int (or a connection), got {key!r}")
        else:
            self._set_terminal_value("key", np.array(int(key), dtype=np.int64))
        for name_, value in bounds.items():
            if value is TBD or value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, numbers.Integral):
                raise MithrilError(f"{owner}: {name_} must be an int (or a connection), got "
                                   f"{value!r}")
            self._set_terminal_value(name_, np.array(int(value), dtype=np.int64))

    def connect(self, *args, **connections):
        if self._later is not None:
            connections.setdefault("shape", self._later)
        for key in ("key",) + self._bounds:
            if key in connections:
                # A connected value replaces the one given when built (and
                # the key is no state then).
                self.terminal_values.pop(key, None)
                if key == "key":
                    self.state_pairs.pop("key", None)
        return super().connect(*args, **connections)

    __call__ = connect

    def _shape(self, builder, operands, path) -> list:
        owner = type(self).__name__
        if self._fixed is not None:
            return list(self._fixed)
        if "shape" not in operands:
            raise MithrilError(f"{path}: {owner} needs a shape: give shape= when it is built or "
                               "connect its shape terminal")
        shape = static.python_value(builder, operands["shape"], f"{owner}'s shape", path)
        shape = [shape] if isinstance(shape, (int, np.integer)) else list(shape)
        if any(d is None or int(d) < 0 for d in shape):
            raise MithrilError(f"{path}: {owner} needs every size of its shape known at compile "
                               f"time, got {_show(shape)}")
        return [int(d) for d in shape]

    def _integer_scalar(self, builder, operands, terminal, path) -> int:
        """The terminal's value as an int64 scalar tensor."""
        owner = type(self).__name__
        value = operands[terminal]
        value_shape, value_type = builder.type_of(value)
        if list(value_shape) not in ([], [1]):
            raise MithrilError(f"{path}: {owner}'s {terminal} must be one integer, got a tensor "
                               f"of shape {_show(list(value_shape))}")
        if not static.is_integer_type(value_type):
            raise MithrilError(f"{path}: {owner}'s {terminal} must be an integer, got "
                               f"{value_type}")
        if value_shape:
            value = builder.add_op("reshape", [value], {"shape": []}, path)[0]
        if value_type != "int64":
            value = builder.add_op("cast", [value], {"element_type": "int64"}, path)[0]
        return value

    def emit(self, builder, operands, path, float_dtype="float32"):
        shape = self._shape(builder, operands, path)
        key = self._integer_scalar(builder, operands, "key", path)
        samples = self._samples(builder, operands, key, shape, path, float_dtype)
        one = builder.add_constant(np.array(1, dtype=np.int64), path)
        return {"output": samples, "new_key": builder.add_op("add", [key, one], {}, path)[0]}


class Randn(_Random):
    """The original's Randn(shape, key, dtype=None): standard normal samples
    (the dialect's random_normal) of the backend's float type unless `dtype`
    says; see _Random for the key."""
    __doc__ += _Random.__doc__

    def __init__(self, shape=TBD, key=TBD, dtype=None, name=None) -> None:
        from ..types import FLOATS
        super().__init__(shape, key, dtype, FLOATS, name)

    def _samples(self, builder, operands, key, shape, path, float_dtype):
        return builder.add_op("random_normal", [key],
                              {"shape": shape, "element_type": self.dtype or float_dtype},
                              path)[0]


class RandInt(_Random):
    """The original's RandInt(shape, key, low, high, dtype=None): integers
    uniform in [low, high) (from the dialect's random_uniform), of the
    backend's integer precision (int32 for a float32 backend, int64 for
    float64) unless `dtype` says; see _Random for the key."""
    __doc__ += _Random.__doc__
    _bounds = ("low", "high")

    def __init__(self, shape=TBD, key=TBD, low=TBD, high=TBD, dtype=None, name=None) -> None:
        super().__init__(shape, key, dtype, ("int8", "int16", "int32", "int64"), name,
                         low=low, high=high)
        for bound in self._bounds:
            self._specs[bound] = TerminalSpec(shape=(), dtype="int64")

    def _samples(self, builder, operands, key, shape, path, float_dtype):
        for bound in self._bounds:
            if bound not in operands:
                raise MithrilError(f"{path}: RandInt needs {bound}: give it when it is built or "
                                   "connect it")
        if all(static.known(builder, operands[b]) for b in self._bounds):
            lo, hi = (int(np.asarray(static.python_value(builder, operands[b], b, path)))
                      for b in self._bounds)
            if hi <= lo:
                raise MithrilError(f"{path}: RandInt needs low < high, got low={lo}, high={hi}")
        low = self._integer_scalar(builder, operands, "low", path)
        high = self._integer_scalar(builder, operands, "high", path)

        def op(name, operands_, attrs=None):
            return builder.add_op(name, operands_, attrs or {}, path)[0]

        # floor(u * (high - low)) + low, the floor below high - 1 (u * n may
        # round up to n).
        u = op("random_uniform", [key], {"shape": shape, "element_type": "float64"})
        count = op("subtract", [high, low])
        scaled = op("multiply", [u, op("cast", [count], {"element_type": "float64"})])
        offset = op("cast", [scaled], {"element_type": "int64"})
        one = builder.add_constant(np.array(1, dtype=np.int64), path)
        offset = op("minimum", [offset, op("subtract", [count, one])])
        values = op("add", [offset, low])
        dtype = self.dtype or _int_like(float_dtype)
        return values if dtype == "int64" else op("cast", [values], {"element_type": dtype})


class PrimitiveRandn(Randn):
    """The original's PrimitiveRandn(shape, key, dtype=None): Randn."""


class PrimitiveRandInt(RandInt):
    """The original's PrimitiveRandInt(shape, key, low, high, dtype=None):
    RandInt."""


class ShapeCheck(Primitive):
    """The identity, which checks when the model is compiled that the input
    has the shape `template` (ints; None or a name for any size): the
    original's set_shapes on a computed connection."""
    op = "reshape"

    def __init__(self, template, name=None) -> None:
        super().__init__(name)
        self.template = list(template)

    def emit(self, builder, operands, path, float_dtype="float32"):
        x = operands["input"]
        shape = _shape_of(builder, x)
        fixed = [d if isinstance(d, numbers.Integral) else None for d in self.template]
        if len(shape) != len(fixed) or any(
                f is not None and s is not None and f != s for f, s in zip(fixed, shape)):
            raise MithrilError(f"{path}: set_shapes({self.template}) does not match the shape "
                               f"{_show(shape)} the connection has")
        return {"output": x}
