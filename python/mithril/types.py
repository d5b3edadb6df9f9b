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

# What compiled code computes in today; the others are issue 19 (low
# precision) or have no use yet.
COMPILED = ("float32", "float64", "int32", "int64", "bool")

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


def compiled_dtype_name(dtype, what: str) -> str:
    """dtype_name(dtype), checked to be one compiled code computes in."""
    name = dtype_name(dtype)
    if name not in COMPILED:
        raise ValueError(f"{what}: {name} is not supported by compiled code yet (it computes in "
                         f"{', '.join(COMPILED)}; float16 and bfloat16 are issue 19)")
    return name
