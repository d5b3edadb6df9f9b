# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""Values known while a model is emitted (compile time): constants, sizes read
from shapes (`Size()`, `x.shape[1]`), dtypes (`x.dtype()`) and what the
original's scalar ops make of them (`H_in / H_out`, `size[0]`).

The original passes such values along connections as Python scalars and
tuples. Here every connection is an IR value; a value also known in Python is
recorded with it (per ModelBuilder), so that models whose IR needs it fixed
(Arange's bounds, Reshape's shape, Cast's dtype) read it, and ops of known
operands fold. The recording is an emission-time table, nothing more: the IR
still computes everything it uses.

Python scalars are weakly typed, as in the original (and torch): `x * 2` keeps
x's element type, `int_tensor + 0.5` is a float. `promote` gives the operands
of an elementwise op one element type, by that rule for a weak scalar and by
numpy's for two tensors.
"""

from __future__ import annotations

import numbers
import weakref

import numpy as np

_MISSING = object()
_values: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
_weak: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


class DtypeValue(str):
    """A dtype known at compile time (`x.dtype()`): its compiled name."""


def record(builder, value_id: int, value, weak: bool = False) -> None:
    _values.setdefault(builder, {})[value_id] = value
    if weak:
        _weak.setdefault(builder, set()).add(value_id)


def lookup(builder, value_id, default=_MISSING):
    if isinstance(value_id, list):
        return default
    return _values.get(builder, {}).get(value_id, default)


def known(builder, value_id) -> bool:
    return lookup(builder, value_id) is not _MISSING


def is_weak(builder, value_id) -> bool:
    return not isinstance(value_id, list) and value_id in _weak.get(builder, ())


def is_python_scalar(value) -> bool:
    return isinstance(value, (bool, numbers.Number)) and not isinstance(value, np.generic)


def require(builder, value_id, what: str, path: str):
    """The known value of `value_id`, or an error that says `what` needs it."""
    from .errors import MithrilError
    value = lookup(builder, value_id)
    if value is _MISSING:
        raise MithrilError(f"{path}: {what} must be known when the model is compiled (a "
                           "number, a size read from a shape, or a value computed from them)")
    return value


def _python(value):
    """A recorded value as the original's Python value: a 0-d array is a
    scalar, a 1-d array a tuple."""
    if isinstance(value, np.ndarray):
        if value.ndim == 0:
            return value.item()
        if value.ndim == 1:
            return tuple(v.item() for v in value)
    return value


def python_value(builder, value_id, what: str, path: str):
    return _python(require(builder, value_id, what, path))


# Element types -------------------------------------------------------------------

_KIND = {"bool": 0, "int8": 1, "int16": 1, "int32": 1, "int64": 1, "uint8": 1,
         "float16": 2, "bfloat16": 2, "float32": 2, "float64": 2}


def _kind_of_scalar(value) -> int:
    value = _python(value)
    if isinstance(value, (bool, np.bool_)):
        return 0
    if isinstance(value, numbers.Integral):
        return 1
    return 2


def _common(a: str, b: str) -> str:
    if "bfloat16" in (a, b):
        other = b if a == "bfloat16" else a
        return "bfloat16" if _KIND.get(other, 2) < 2 or other == "bfloat16" else (
            "float32" if other in ("float16",) else other)
    return np.promote_types(np.dtype(a), np.dtype(b)).name


def _recast_weak(builder, value_id, dtype: str, path: str) -> int:
    value = np.asarray(lookup(builder, value_id)).astype(dtype)
    new = builder.add_constant(value, path + "_scalar")
    record(builder, new, value, weak=True)
    return new


def promote(builder, values: list, float_dtype: str, path: str) -> list:
    """`values` (IR value ids) converted to one element type: a weak scalar
    (a Python number) takes a tensor's type unless its kind is higher (a float
    meeting ints gives the backend's float type); tensors promote as numpy's."""
    dtypes = [builder.type_of(v)[1] for v in values]
    if len(set(dtypes)) < 2:
        return values
    weak = [is_weak(builder, v) for v in values]
    strong = [d for d, w in zip(dtypes, weak) if not w]
    if strong:
        target = strong[0]
        for d in strong[1:]:
            target = _common(target, d)
        for v, d, w in zip(values, dtypes, weak):
            if w and _kind_of_scalar(lookup(builder, v)) > _KIND.get(target, 2):
                target = float_dtype if _kind_of_scalar(lookup(builder, v)) == 2 else "int64"
    else:
        top = max(_kind_of_scalar(lookup(builder, v)) for v in values)
        target = {0: "bool", 1: "int64", 2: float_dtype}[top]
    out = []
    for v, d, w in zip(values, dtypes, weak):
        if d == target:
            out.append(v)
        elif w:
            out.append(_recast_weak(builder, v, target, path))
        else:
            out.append(builder.add_op("cast", [v], {"element_type": target}, path)[0])
    return out


def promote_to(builder, value_id: int, dtype: str, path: str) -> int:
    """`value_id` converted to `dtype` (a weak scalar re-made, else a cast)."""
    if builder.type_of(value_id)[1] == dtype:
        return value_id
    if is_weak(builder, value_id):
        return _recast_weak(builder, value_id, dtype, path)
    result = builder.add_op("cast", [value_id], {"element_type": dtype}, path)[0]
    if known(builder, value_id):
        record(builder, result, np.asarray(lookup(builder, value_id)).astype(dtype))
    return result


def is_integer_type(dtype: str) -> bool:
    return _KIND.get(dtype, 2) < 2


# Folding ---------------------------------------------------------------------------

def _slice(x, attrs):
    index = [slice(None)] * x.ndim
    for axis, start, stop, step in zip(attrs["axes"], attrs["start"], attrs["stop"],
                                       attrs["step"]):
        index[axis] = slice(start, stop, step)
    return x[tuple(index)]


def _squeeze(x, attrs):
    axes = attrs.get("axes")
    return np.squeeze(x) if axes is None else np.squeeze(x, axis=tuple(axes))


_FOLD = {
    "add": lambda a, b, **_: a + b,
    "subtract": lambda a, b, **_: a - b,
    "multiply": lambda a, b, **_: a * b,
    "divide": lambda a, b, **_: a / b,
    "floor_divide": lambda a, b, **_: a // b,
    "power": lambda a, b, **_: a ** b,
    "minimum": lambda a, b, **_: np.minimum(a, b),
    "maximum": lambda a, b, **_: np.maximum(a, b),
    "equal": lambda a, b, **_: a == b,
    "not_equal": lambda a, b, **_: a != b,
    "less": lambda a, b, **_: a < b,
    "less_equal": lambda a, b, **_: a <= b,
    "greater": lambda a, b, **_: a > b,
    "greater_equal": lambda a, b, **_: a >= b,
    "negate": lambda a, **_: -a,
    "abs": lambda a, **_: np.abs(a),
    "slice": lambda a, attrs, **_: _slice(a, attrs),
    "squeeze": lambda a, attrs, **_: _squeeze(a, attrs),
    "unsqueeze": lambda a, attrs, **_: np.expand_dims(a, attrs["axis"]),
    "reshape": lambda a, attrs, **_: a.reshape(attrs["shape"]),
    "cast": lambda a, attrs, **_: a.astype(attrs["element_type"]),
}


def fold(builder, op: str, attrs: dict, values: list, results: list) -> None:
    """Records the value of an op's single result when all its operands are
    known and the op is one of the simple ones above."""
    fn = _FOLD.get(op)
    if fn is None or len(results) != 1 or not values:
        return
    known_values = [lookup(builder, v) for v in values]
    if any(v is _MISSING or isinstance(v, DtypeValue) for v in known_values):
        return
    arrays = [np.asarray(v) for v in known_values]
    if any(a.size > 1024 for a in arrays):
        return  # values, not sizes: left to the compiled code
    try:
        with np.errstate(all="ignore"):
            if op in ("slice", "squeeze", "unsqueeze", "reshape", "cast"):
                result = fn(arrays[0], attrs=attrs)
            else:
                result = fn(*arrays)
    except Exception:  # noqa: BLE001 - folding is an optimization of what is known
        return
    _, dtype = builder.type_of(results[0])
    result = np.asarray(result)
    if dtype in _KIND:
        result = result.astype(dtype)
    weak = all(is_weak(builder, v) for v in values)
    record(builder, results[0], result, weak=weak)
