# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""Users' primitives: C functions compiled code calls (mithril.custom_call).

`backend.register_primitive(fn, fn_grad=None)` is the original Mithril's way
to give a backend a new primitive, whose model is a
`CustomPrimitiveModel(formula_key=<fn's name>, ...)`. Compiled code cannot
call a Python function, so here `fn` is a C function: a function of a loaded
shared library (`ctypes.CDLL("./libmyops.so").my_op`), anything with a C
entry point (a numba `cfunc`: `.address`), or a symbol name that the process
already has (a library loaded with `ctypes.RTLD_GLOBAL`). The calling
convention (include/mithril/Runtime/CustomCall.h):

    typedef struct { void *data; int64_t rank; const int64_t *sizes; } MithrilTensor;
    void my_op(const MithrilTensor *tensors, int64_t count);
    void my_op_grad(const MithrilTensor *tensors, int64_t count, int64_t index);

`my_op` gets the inputs in the order of the model's keys, then the output to
write. `my_op_grad` gets the inputs, the output, the output's gradient, and
last the gradient of input `index` to write. Every tensor is dense and
row-major, of the element type of the model (float32 for MlirBackend()).

The shape rule comes from the IOKeys (docs/custom-primitives.md).
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass

from .errors import MithrilError


@dataclass(frozen=True)
class CFunction:
    name: str
    # Its address in this process; None: a symbol the process has.
    address: int | None


@dataclass(frozen=True)
class CustomPrimitive:
    function: CFunction
    gradient: CFunction | None


def c_function(fn, name: str | None, what: str) -> CFunction:
    """The C function `fn` stands for (see the module docstring)."""
    if isinstance(fn, str):
        return CFunction(_identifier(name or fn, what), None)
    if isinstance(fn, ctypes._CFuncPtr):  # a function of a ctypes library
        address = ctypes.cast(fn, ctypes.c_void_p).value
        return CFunction(_identifier(name or fn.__name__, what), address)
    address = getattr(fn, "address", None)  # numba's cfunc, cffi-style wrappers
    if isinstance(address, int) and address:
        given = name or getattr(fn, "__name__", None)
        if not given:
            raise MithrilError(f"{what}: give the primitive's name with name=")
        return CFunction(_identifier(given, what), address)
    if isinstance(fn, int) and not isinstance(fn, bool):
        if not name:
            raise MithrilError(f"{what}: a bare address needs name=")
        return CFunction(_identifier(name, what), fn)
    raise TypeError(
        f"{what} takes a C function: a function of a ctypes library "
        "(ctypes.CDLL('./libmyops.so').my_op), an object with a C entry point (.address, as "
        "numba's cfunc), or the name of a symbol of the process; compiled code cannot call a "
        f"Python {type(fn).__name__}. See docs/custom-primitives.md")


def _identifier(name: str, what: str) -> str:
    if not (isinstance(name, str) and name and (name[0].isalpha() or name[0] == "_")
            and all(c.isalnum() or c == "_" for c in name) and name.isascii()):
        raise MithrilError(f"{what}: {name!r} is not a C function name")
    return name


def result_shape_attributes(formula_key: str, inputs: tuple, templates: dict,
                            output_template) -> dict:
    """The custom call's shape rule from the IOKeys' shape templates: the
    output's dimensions are inputs' dimensions (by symbol) or sizes."""
    if output_template is None:
        if not inputs:
            raise MithrilError(f"CustomPrimitiveModel('{formula_key}'): with no input, give the "
                               "output's shape (output=IOKey(shape=[...]))")
        return {"shape_of": 0}
    output_template = tuple(output_template)
    for index, key in enumerate(inputs):
        if templates.get(key) is not None and tuple(templates[key]) == output_template:
            return {"shape_of": index}
    pairs: list[int] = []
    for position, dim in enumerate(output_template):
        if isinstance(dim, int) and not isinstance(dim, bool):
            if dim < 0:
                raise MithrilError(f"CustomPrimitiveModel('{formula_key}'): output dimension "
                                   f"{position} has the negative size {dim}")
            pairs += [-1, dim]
            continue
        found = None
        for index, key in enumerate(inputs):
            template = templates.get(key)
            if template is None or any(d is ... or isinstance(d, tuple) for d in template):
                continue
            if dim in template:
                found = (index, list(template).index(dim))
                break
        if found is None:
            raise MithrilError(
                f"CustomPrimitiveModel('{formula_key}'): output dimension {position} ({dim!r}) is "
                "no input's dimension: name it in an input's IOKey(shape=[...]) or give a size")
        pairs += list(found)
    return {"result_shape": pairs}
