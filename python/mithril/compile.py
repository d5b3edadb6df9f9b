# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""ml.compile: a logical model and a backend in, a physical model out."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from .backend import MlirBackend
from .emit import Emitter
from .errors import KeyNotFoundError
from .framework import BaseModel
from .physical import PhysicalModel


def compile(model: BaseModel, backend: MlirBackend, *, shapes: Mapping | None = None,
            constant_keys: Mapping | None = None, data_keys: Iterable[str] | None = None,
            discard_keys: Iterable[str] | None = None, trainable_keys: Iterable[str] | None = None,
            inference: bool = False, jit: bool = True, file_path: str | None = None,
            safe_names: bool = True) -> PhysicalModel:
    """Compiles `model` for `backend`.

    shapes          input (or parameter) shapes; None marks a size left dynamic: the
                    compiled code runs any size of it (gradients and training steps
                    are compiled for each set of sizes they meet)
    constant_keys   inputs fixed at compile time: they become constants
    data_keys       inputs that are data, not trainable parameters
    trainable_keys  inputs that are trainable parameters (gradients are returned)
    discard_keys    outputs to drop, with everything only they need
    inference       no gradients will be asked for
    file_path       write the logical model as mithril IR, for mithril-opt and mithril-run
    jit             accepted for compatibility: the model is always compiled to native code
    """
    if not isinstance(backend, MlirBackend):
        raise TypeError(f"backend must be an ml.MlirBackend, got {type(backend).__name__}")
    if hasattr(model, "finalize"):
        model.finalize()  # TrainModel: build final_cost from the losses
    shapes = {k: list(v) for k, v in (shapes or {}).items()}
    constants = dict(constant_keys or {})
    data_keys = set(data_keys or ())
    trainable_keys = set(trainable_keys or ())
    discard = list(discard_keys or ())
    overlap = data_keys & trainable_keys
    if overlap:
        raise KeyNotFoundError(f"keys both data and trainable: {sorted(overlap)}")

    known = set(model.input_keys)
    for key in data_keys | trainable_keys | set(constants):
        if key not in known:
            raise KeyNotFoundError(f"'{key}' is not an input of the model (inputs: {sorted(known)})")
    # Nested parameters are named by path ('linear_0.weight'), checked once
    # the model is flat; any other key must be an input.
    for key in shapes:
        if "." not in key and key not in known:
            raise KeyNotFoundError(f"shapes: '{key}' is not an input of the model (inputs: "
                                   f"{sorted(known)})")
    for key in discard:
        if key not in model.output_keys:
            raise KeyNotFoundError(
                f"'{key}' is not an output of the model (outputs: {model.output_keys})")

    kinds = {k: "data" for k in data_keys} | {k: "param" for k in trainable_keys}
    # Constants are values, not terminals: their shapes come with them.
    shapes = {k: v for k, v in shapes.items() if k not in constants}
    emitter = Emitter(backend.float_name)
    entry, _ = emitter.emit_top(model, shapes, kinds, constants)
    source = emitter.module.text()
    if file_path is not None:
        with open(file_path, "w") as f:
            f.write(source)
    return PhysicalModel(source, entry, backend, shapes, discard, inference)
