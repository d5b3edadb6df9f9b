# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""Mithril's model dictionaries, both ways: `model_to_dict` writes a logical
model in the original's JSON form, `dict_to_model` reads it back.

A library model is `{"name": class, "args": {...}}`: the constructor
arguments it was given (tuples as lists, named in `tuples`; nested models
as model dictionaries). A plain `Model` adds `submodels` (`m_0`, `m_1`, ...
in the order they were added) and `connections` from each submodel's
terminals to `{"key": {"name": k}}` for a named connection, `{"key":
{"connect": [["m_j", terminal]]}}` for an unnamed one met before, a raw
scalar or `{"tensor": [...]}` for an unnamed constant; an unnamed terminal
met for the first time is left out. `exposed_keys` are its outputs,
`assigned_shapes` and `assigned_differentiabilities` what was set on its
named connections. A TrainModel is `{"is_train_model": true, "model":
..., "losses": [...], "regularizations": [...]}` from the calls that
built it.
"""

from __future__ import annotations

import enum
import re
from typing import Any

import numpy as np

from .. import models
from ..framework import BaseModel, Connection, IOKey, Model
from .dict_to_model import ModelDictError, dict_to_model

__all__ = ["ModelDictError", "dict_to_model", "model_to_dict"]


def model_to_dict(model: BaseModel) -> dict:
    """The dictionary (JSON-ready) that dict_to_model builds `model` from."""
    if not isinstance(model, BaseModel):
        raise TypeError(f"model_to_dict takes a model, got {type(model).__name__}")
    if isinstance(model, models.TrainModel):
        return _train_model_dict(model)
    cls = type(model)
    if cls is not Model and getattr(models, cls.__name__, None) is cls:
        args = {}
        tuples = []
        for key, value in getattr(model, "_factory_args", {}).items():
            if isinstance(value, tuple):
                tuples.append(key)
            args[key] = _json_value(value, f"{cls.__name__}.args.{key}")
        out = {"name": cls.__name__, "args": args}
        if tuples:
            out["tuples"] = tuples
        return out
    if not isinstance(model, Model):
        raise ModelDictError(f"{cls.__name__} is not a model of the library: it has no "
                             "dictionary form")
    return _composite_dict(model)


def _composite_dict(model: Model) -> dict:
    submodels, connections = {}, {}
    # Unnamed internal net -> its terminals in the first submodel that has
    # it: left out there (each is a new connection when read back), and
    # joined by the next submodel's terminal on it.
    first: dict[int, tuple[int, list]] = {}
    for index, (_, bindings) in enumerate(model.submodels):
        for terminal, net in bindings.items():
            if _internal(net):
                at = first.setdefault(id(net), (index, []))
                if at[0] == index:
                    at[1].append([f"m_{index}", terminal])
    named: set[int] = set()
    shapes, differentiabilities = [], []
    for index, (sub, bindings) in enumerate(model.submodels):
        name = f"m_{index}"
        submodels[name] = model_to_dict(sub)
        terminals = {}
        for terminal, net in bindings.items():
            if net.value is not None and (net.auto or net.implicit):
                terminals[terminal] = _constant(net.value, f"{name}.{terminal}")
            elif _internal(net):
                at, where = first[id(net)]
                if at != index:
                    terminals[terminal] = {"key": {"connect": where}}
            else:
                key = {"name": net.name}
                if net.value is not None:
                    key["value"] = _json_value(net.value, f"{name}.{terminal}")
                terminals[terminal] = {"key": key}
                if id(net) not in named:
                    named.add(id(net))
                    if net.shape is not None:
                        shapes.append([net.name, list(net.shape)])
                    if net.differentiable is not None:
                        differentiabilities.append([net.name, bool(net.differentiable)])
        connections[name] = terminals
    return {"name": "Model", "args": {}, "submodels": submodels, "connections": connections,
            "exposed_keys": list(model.output_keys), "assigned_shapes": shapes,
            "assigned_differentiabilities": differentiabilities}


def _internal(net) -> bool:
    """An unnamed connection between submodels (not a constant)."""
    return net.value is None and (net.auto or (net.implicit and net.producer is not None))


def _train_model_dict(model) -> dict:
    def key_of(value, where):
        if isinstance(value, Connection):
            return value.key
        if isinstance(value, re.Pattern):
            return value.pattern
        if isinstance(value, str):
            return value
        raise ModelDictError(f"{where}: a connection by name or Connection, got {value!r}")

    losses = []
    for i, loss in enumerate(model.recorded_losses):
        steps = loss["reduce_steps"]
        losses.append({
            "model": model_to_dict(loss["model"]),
            "reduce_steps": None if steps is None else [model_to_dict(s) for s in steps],
            "key_name": loss["key_name"], "coef": loss["coef"],
            "args": {k: key_of(v, f"losses[{i}].{k}") for k, v in loss["args"].items()}})
    regularizations = []
    for i, reg in enumerate(model.recorded_regularizations):
        args = {k: key_of(v, f"regularizations[{i}].{k}") for k, v in reg["args"].items()}
        entry = {"model": model_to_dict(reg["model"]), "coef": reg["coef"],
                 "reg_key": None if reg["reg_key"] is None
                 else key_of(reg["reg_key"], f"regularizations[{i}].reg_key"),
                 "key_name": reg["key_name"], "args": args}
        if any(isinstance(v, re.Pattern) for v in reg["args"].values()):
            entry["regex"] = True
        regularizations.append(entry)
    return {"is_train_model": True, "model": model_to_dict(model.model), "losses": losses,
            "regularizations": regularizations, "final_loss_combiner": model._combiner}


def _constant(value, where: str) -> Any:
    array = np.asarray(value)
    if array.ndim == 0 and not isinstance(value, np.ndarray):
        return _json_value(value, where)
    return {"tensor": _json_value(array, where)}


def _json_value(value, where: str) -> Any:
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, (list, tuple)):
        return [_json_value(v, where) for v in value]
    if isinstance(value, dict):
        return {str(k): _json_value(v, where) for k, v in value.items()}
    if isinstance(value, BaseModel):
        return model_to_dict(value)
    if isinstance(value, type) and issubclass(value, BaseModel):
        return {"name": value.__name__}
    if isinstance(value, enum.Enum):
        return value.name
    if isinstance(value, type) and issubclass(value, np.generic):
        return np.dtype(value).name
    if isinstance(value, np.dtype):
        return value.name
    raise ModelDictError(f"{where}: {type(value).__name__} {value!r} has no dictionary form")
