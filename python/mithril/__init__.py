# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""Mithril's model API on an MLIR compiler.

    import mithril as ml
    from mithril.models import Linear, Relu, Model

    model = Model()
    model |= Linear(dimension=32)
    model += Relu()
    pm = ml.compile(model, ml.MlirBackend(dtype=ml.float64), shapes={"input": [4, 8]})
    outputs = pm.evaluate(pm.randomize_params(), {"input": ...})
"""

from .errors import KeyNotFoundError, MithrilError, OutOfMemoryError, ShapeError
from .framework import IOKey, Connection, Model, BaseModel, TBD, Tensor
from .framework import Model as LogicalModel  # the documents' name for a model
import numpy as _np

from .backend import MlirBackend, float32, float64
from . import types
from .types import Dtype

# The original's top-level dtypes and aliases (mithril.types explains why
# they are NumPy's types).
bool = _np.bool_
float16, int16, int32, int64 = _np.float16, _np.int16, _np.int32, _np.int64
int8, uint8 = _np.int8, _np.uint8
bfloat16 = Dtype.bfloat16
float, double, int, short, long, half = (  # noqa: A001
    float32, float64, int32, int16, int64, float16)
from .compile import compile
from .physical import PhysicalModel
from .optimizers import SGD, Adam, Optimizer
from .profiling import profile
from .memory import max_memory_allocated, memory_allocated, reset_peak_memory_stats
from .training import BCEWithLogitsLoss, CrossEntropyLoss, Loss, MSELoss, Trainer

# NumPy gives array data 16-byte alignment; the compiled kernels' 512-bit
# loads want 64 (a misaligned weight splits a cache line every load: the MLP
# 784-512-512-10 at batch 16 took 0.22 ms instead of 0.17 on one Intel Xeon
# core with avx512f and AMX). Arrays NumPy allocates after this import (in
# this context) are 64-byte aligned, unless MITHRIL_NUMPY_ALIGN=0;
# docs/performance.md "Aligned arrays".
import os as _os
if _os.environ.get("MITHRIL_NUMPY_ALIGN", "1").lower() not in ("0", "off", "false"):
    from . import _mithril as _extension
    _extension.align_numpy_allocations()

# The documents import PhysicalModel from mithril.framework.physical.
import sys as _sys
from . import physical as _physical
_sys.modules[__name__ + ".framework.physical"] = _physical
from . import framework as _framework
_framework.physical = _physical

__all__ = [
    "BaseModel", "Connection", "IOKey", "KeyNotFoundError", "LogicalModel", "MithrilError", "MlirBackend",
    "Model", "Optimizer", "OutOfMemoryError", "PhysicalModel", "SGD", "Adam", "ShapeError",
    "compile", "float32", "Trainer", "Loss", "profile", "CrossEntropyLoss", "MSELoss", "BCEWithLogitsLoss",
    "float64", "TBD", "Tensor", "float16", "bfloat16", "int8", "uint8", "int16", "int32", "int64", "Dtype", "types",
    "memory_allocated", "max_memory_allocated", "reset_peak_memory_stats", "get_include",
]
__version__ = "0.1.0"


def get_include() -> str:
    """The directory of the C headers users' code includes
    (`mithril/Runtime/CustomCall.h` for custom primitives): the package's
    own copy when installed with pip, else the source tree's."""
    from pathlib import Path
    here = Path(__file__).resolve().parent
    for candidate in (here / "include", here.parents[1] / "include",
                      here.parents[2] / "include"):
        if (candidate / "mithril" / "Runtime" / "CustomCall.h").exists():
            return str(candidate)
    raise MithrilError("the mithril C headers are not installed with this package")

