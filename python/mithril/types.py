# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""Mithril's element types: the `Dtype` enum (the original's values), and the
conversion of any spelling a user writes (a Dtype, `ml.float32`, a NumPy
dtype or type, a name) to the name the compiler takes.

Top-level `ml.float32`, `ml.int64`, ... are NumPy's types, so that they also
work wherever NumPy takes a dtype (`x.astype(ml.float32)`); `ml.bfloat16`,
which NumPy lacks, is `Dtype.bfloat16`. Every function of the package that
takes a dtype accepts either form."""

from __future__ import annotations

import enum

import numpy as np


class Dtype(enum.IntEnum):
    uint8 = 0
    int8 = 1
    int16 = 2
    int32 = 3
    int64 = 4
    float16 = 5
    bfloat16 = 6
    float32 = 7
    float64 = 8
    bool = 9

    def __str__(self) -> str:
        return str(self.value)


# The original's aliases.
half, short, long = Dtype.float16, Dtype.int16, Dtype.int64

# What compiled code stores and computes with. float16 and bfloat16 are
# stored as such and computed in float32, rounded once per op.
COMPILED = ("float32", "float64", "float16", "bfloat16", "int8", "int16", "int32", "int64",
            "bool")
FLOATS = ("float32", "float64", "float16", "bfloat16")

try:  # bfloat16 arrays for numpy, where installed
    import ml_dtypes as _ml_dtypes
except ImportError:  # pragma: no cover - depends on the environment
    _ml_dtypes = None


# ml_dtypes' bfloat16, or None without it (compare with `is not None` first:
# numpy reads a comparison with None as one with float64).
BFLOAT16 = np.dtype(_ml_dtypes.bfloat16) if _ml_dtypes else None


def user_dtype(name: str) -> np.dtype:
    """The numpy dtype of the arrays the package returns for a terminal of
    type `name`: numpy has no bfloat16, so bfloat16 values come back as
    ml_dtypes.bfloat16 arrays where ml_dtypes is installed, else as float32
    arrays (which hold them exactly)."""
    if name == "bfloat16":
        return BFLOAT16 if _ml_dtypes else np.dtype(np.float32)
    return np.dtype(np.bool_ if name == "bool" else name)


def storage_dtype(name: str) -> np.dtype:
    """The numpy dtype of the buffers compiled code reads and writes:
    bfloat16 as its 16-bit patterns (uint16)."""
    return np.dtype(np.uint16) if name == "bfloat16" else user_dtype(name)


def to_bfloat16_bits(values) -> np.ndarray:
    """The bfloat16 bit patterns of `values`, rounded to nearest even (NaN
    stays NaN), as compiled code rounds. uint16 arrays are bit patterns
    already (the representation without ml_dtypes) and pass unchanged."""
    arr = np.asarray(values)
    if _ml_dtypes is not None and arr.dtype == _ml_dtypes.bfloat16:
        return np.require(arr, requirements="C").reshape(-1).view(np.uint16).reshape(arr.shape)
    if arr.dtype == np.uint16:
        return np.require(arr, requirements="C")
    try:  # the extension's loop: numpy's would take several passes
        from . import _mithril
        return _mithril.to_bfloat16_bits(arr)
    except (ImportError, AttributeError):  # pragma: no cover - a partial build
        pass
    # (np.ascontiguousarray would make a 0-d array 1-d.)
    bits = np.require(arr, np.float32, "C").reshape(-1).view(np.uint32).reshape(arr.shape)
    with np.errstate(over="ignore"):
        rounded = ((bits + np.uint32(0x7FFF) + ((bits >> 16) & np.uint32(1))) >> 16)
    nan = (bits & np.uint32(0x7FFFFFFF)) > np.uint32(0x7F800000)
    rounded = np.where(nan, (bits >> 16) | np.uint32(0x40), rounded)
    return rounded.astype(np.uint16)


def from_bfloat16_bits(bits: np.ndarray) -> np.ndarray:
    """bfloat16 bit patterns as the arrays user_dtype("bfloat16") names."""
    # (0-d arrays cannot change their itemsize through view: go through 1-D.)
    flat = np.ascontiguousarray(bits).reshape(-1)
    if _ml_dtypes is not None:
        return flat.view(_ml_dtypes.bfloat16).reshape(bits.shape)
    return (flat.astype(np.uint32) << 16).view(np.float32).reshape(bits.shape)


def to_storage(value, name: str) -> np.ndarray:
    """`value` as a C-contiguous buffer of storage_dtype(name)."""
    if name == "bfloat16":
        return to_bfloat16_bits(value)
    # np.require keeps 0-d arrays 0-d (ascontiguousarray would not).
    return np.require(value, dtype=storage_dtype(name), requirements="C")


def from_storage(array: np.ndarray, name: str) -> np.ndarray:
    return from_bfloat16_bits(array) if name == "bfloat16" else array

_ALIASES = {"f32": "float32", "f64": "float64", "i32": "int32", "i64": "int64", "i1": "bool",
            "float": "float32", "double": "float64", "int": "int32", "short": "int16",
            "long": "int64", "half": "float16", "bool_": "bool"}


def dtype_name(dtype) -> str:
    """The name of `dtype` ("float32", "int64", "bool", ...), from a Dtype,
    a NumPy dtype or scalar type, Python's bool/int/float, or a name."""
    if isinstance(dtype, Dtype):
        return dtype.name
    if dtype is bool:
        return "bool"
    if dtype is int:
        return "int32"
    if dtype is float:
        return "float32"
    if isinstance(dtype, str):
        name = _ALIASES.get(dtype, dtype)
        if name in Dtype.__members__:
            return name
        raise ValueError(f"unknown dtype {dtype!r} (known: {', '.join(Dtype.__members__)})")
    try:
        name = np.dtype(dtype).name
    except TypeError:
        raise TypeError(f"not a dtype: {dtype!r}") from None
    if name not in Dtype.__members__:
        raise ValueError(f"dtype {name} is not one of Mithril's ({', '.join(Dtype.__members__)})")
    return name


def dtype_name_among(dtype, allowed: tuple, what: str) -> str:
    """dtype_name(dtype), which must be one of `allowed`: a ValueError saying
    `what` must be one of them otherwise (also for what is no dtype)."""
    try:
        name = dtype_name(dtype)
    except (TypeError, ValueError):
        name = None
    if name not in allowed:
        raise ValueError(f"{what} must be {', '.join(allowed[:-1])} or {allowed[-1]}, "
                         f"got {dtype!r}")
    return name


def compiled_dtype_name(dtype, what: str) -> str:
    """dtype_name(dtype), checked to be one compiled code computes in."""
    name = dtype_name(dtype)
    if name not in COMPILED:
        raise ValueError(f"{what}: {name} is not supported by compiled code yet (it computes in "
                         f"{', '.join(COMPILED)})")
    return name
