# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""Reads Mithril's model dictionaries (the JSON form of logical models).

A dictionary names a library model with its constructor `args`, or a
composite `Model` with `submodels` and their `connections`. Connection values
are terminal names, or `{"key": {...}}` with a `name`, `value`, `expose`,
`differentiable` and `connect` (a list of [submodel, terminal] pairs to join).
"""

from __future__ import annotations

from typing import Any

from .. import models
from ..errors import KeyNotFoundError, MithrilError
from ..framework import BaseModel, Connection, IOKey, Model

# Mithril's constructor arguments that this library spells differently.
_ARG_NAMES = {
    "Sum": {"axis": "axis"}, "Transpose": {"axes": "axes"},
}


def _library_model(name: str, args: dict) -> BaseModel:
    cls = getattr(models, name, None)
    if not (isinstance(cls, type) and issubclass(cls, BaseModel)):
        raise KeyNotFoundError(f"unknown model '{name}'")
    args = dict(args)
    for key in ("name",):
        args.pop(key, None)
    try:
        return cls(**args)
    except TypeError as e:
        raise MithrilError(f"{name}{tuple(args)}: {e}") from None


def _freeze(value: Any, spec: dict) -> Any:
    # Tuples arrive as lists in JSON; the dict says which arguments are tuples.
    for key in spec.get("tuples", []):
        if key in value and isinstance(value[key], list):
            value[key] = tuple(value[key])
    return value


def dict_to_model(spec: dict | str) -> BaseModel:
    """Builds the logical model a Mithril model dictionary describes."""
    if isinstance(spec, str):
        return _library_model(spec, {})
    name = spec.get("name", "Model")
    args = _freeze(dict(spec.get("args", {})), spec)
    if name != "Model" or "submodels" not in spec:
        model = _library_model(name, args)
    else:
        model = Model()
        submodels: dict[str, BaseModel] = {
            key: dict_to_model(sub) for key, sub in spec["submodels"].items()}
        connections = spec.get("connections", {})
        for key, sub in submodels.items():
            kwargs = {}
            for terminal, value in connections.get(key, {}).items():
                kwargs[terminal] = _connection(value, submodels, model)
            model |= sub.connect(**kwargs)
        for exposed in spec.get("exposed_keys", []):
            if exposed in model.nets:
                model.nets[exposed].expose = True
    for key, diff in spec.get("assigned_differentiabilities", []):
        if isinstance(model, Model) and key in model.nets:
            model.nets[key].differentiable = diff
    return model


def _connection(value: Any, submodels: dict, parent: Model) -> Any:
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and "key" in value:
        key = value["key"]
        joins = []
        for sub_name, terminal in key.get("connect", []):
            sub = submodels[sub_name]
            if sub.parent is parent:
                joins.append(Connection(sub, terminal))
            else:
                joins.append(_Pending(sub, terminal))
        pending = [j for j in joins if isinstance(j, _Pending)]
        ready = [j for j in joins if not isinstance(j, _Pending)]
        if pending:
            raise MithrilError("connections to submodels added later are not supported")
        return IOKey(name=key.get("name"), value=key.get("value"), expose=key.get("expose"),
                     differentiable=key.get("differentiable"), connections=ready)
    return value  # a constant


class _Pending:
    def __init__(self, model, terminal):
        self.model, self.terminal = model, terminal
