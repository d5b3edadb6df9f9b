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

import numpy as np

from .. import models
from ..errors import KeyNotFoundError, MithrilError
from ..framework import BaseModel, Connection, IOKey, Model

# Mithril's constructor arguments that this library spells differently.
_ARG_NAMES = {
    "Sum": {"axis": "axis"}, "Transpose": {"axes": "axes"},
}


class ModelDictError(MithrilError, ValueError):
    """A model dictionary that does not describe a model; the message names
    the place in the dictionary (e.g. `model.submodels.m1.args`)."""


def _expect(condition: bool, path: str, message: str) -> None:
    if not condition:
        raise ModelDictError(f"{path}: {message}")


def _library_model(name: Any, args: dict, path: str) -> BaseModel:
    _expect(isinstance(name, str), f"{path}.name", f"expected a model name, got {name!r}")
    cls = getattr(models, name, None)
    if not (isinstance(cls, type) and issubclass(cls, BaseModel)):
        raise KeyNotFoundError(f"{path}: unknown model '{name}'")
    args = dict(args)
    args.pop("name", None)
    _expect(all(isinstance(k, str) for k in args), f"{path}.args",
            "argument names must be strings")
    try:
        return cls(**args)
    except MithrilError:
        raise
    except (TypeError, ValueError, KeyError, IndexError, AttributeError, ZeroDivisionError,
            OverflowError) as e:
        # The constructor rejected the dictionary's arguments.
        raise ModelDictError(f"{path}: {name}{tuple(args)}: {e}") from None


def _freeze(value: dict, spec: dict, path: str) -> dict:
    # Tuples arrive as lists in JSON; the dict says which arguments are tuples.
    tuples = spec.get("tuples", [])
    _expect(isinstance(tuples, list), f"{path}.tuples", "expected a list of argument names")
    for key in tuples:
        _expect(isinstance(key, str), f"{path}.tuples", f"expected argument names, got {key!r}")
        if key in value and isinstance(value[key], list):
            value[key] = tuple(value[key])
    return value


def dict_to_model(spec: dict | str, _path: str = "model") -> BaseModel:
    """Builds the logical model a Mithril model dictionary describes.

    Raises ModelDictError (a MithrilError) naming the place in the dictionary
    for anything that does not describe a model, KeyNotFoundError for unknown
    model names."""
    path = _path
    if isinstance(spec, str):
        return _library_model(spec, {}, path)
    _expect(isinstance(spec, dict), path, f"expected a model name or a dict, got {type(spec).__name__}")
    name = spec.get("name", "Model")
    raw_args = spec.get("args", {})
    _expect(isinstance(raw_args, dict), f"{path}.args", "expected a dict of arguments")
    args = _freeze(dict(raw_args), spec, path)
    if name != "Model" or "submodels" not in spec:
        model = _library_model(name, args, path)
    else:
        model = Model()
        raw_submodels = spec["submodels"]
        _expect(isinstance(raw_submodels, dict), f"{path}.submodels", "expected a dict of submodels")
        submodels: dict[str, BaseModel] = {
            key: dict_to_model(sub, f"{path}.submodels.{key}") for key, sub in raw_submodels.items()}
        connections = spec.get("connections", {})
        _expect(isinstance(connections, dict), f"{path}.connections", "expected a dict")
        for key, sub in submodels.items():
            kwargs = {}
            conns = connections.get(key, {})
            _expect(isinstance(conns, dict), f"{path}.connections.{key}",
                    "expected a dict from terminal to connection")
            for terminal, value in conns.items():
                kwargs[terminal] = _connection(value, submodels, model,
                                               f"{path}.connections.{key}.{terminal}")
            try:
                model |= sub.connect(**kwargs)
            except MithrilError:
                raise
            except (TypeError, ValueError, KeyError, IndexError, AttributeError) as e:
                raise ModelDictError(f"{path}.connections.{key}: {e}") from None
        exposed_keys = spec.get("exposed_keys", [])
        _expect(isinstance(exposed_keys, list), f"{path}.exposed_keys", "expected a list")
        for exposed in exposed_keys:
            if isinstance(exposed, str) and exposed in model.nets:
                model.nets[exposed].expose = True
    diffs = spec.get("assigned_differentiabilities", [])
    _expect(isinstance(diffs, list), f"{path}.assigned_differentiabilities", "expected a list")
    for entry in diffs:
        _expect(isinstance(entry, (list, tuple)) and len(entry) == 2 and isinstance(entry[0], str),
                f"{path}.assigned_differentiabilities", f"expected [key, bool] pairs, got {entry!r}")
        key, diff = entry
        if isinstance(model, Model) and key in model.nets:
            model.nets[key].differentiable = bool(diff)
    return model


def _connection(value: Any, submodels: dict, parent: Model, path: str) -> Any:
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and "key" in value:
        key = value["key"]
        _expect(isinstance(key, dict), f"{path}.key", "expected a dict")
        joins = []
        connect = key.get("connect", [])
        _expect(isinstance(connect, list), f"{path}.key.connect",
                "expected a list of [submodel, terminal] pairs")
        for pair in connect:
            _expect(isinstance(pair, (list, tuple)) and len(pair) == 2
                    and all(isinstance(p, str) for p in pair),
                    f"{path}.key.connect", f"expected [submodel, terminal], got {pair!r}")
            sub_name, terminal = pair
            _expect(sub_name in submodels, f"{path}.key.connect",
                    f"no submodel '{sub_name}'")
            sub = submodels[sub_name]
            if sub.parent is parent:
                joins.append(Connection(sub, terminal))
            else:
                joins.append(_Pending(sub, terminal))
        pending = [j for j in joins if isinstance(j, _Pending)]
        ready = [j for j in joins if not isinstance(j, _Pending)]
        if pending:
            raise MithrilError(f"{path}: connections to submodels added later are not supported")
        name = key.get("name")
        _expect(name is None or isinstance(name, str), f"{path}.key.name", "expected a string")
        return IOKey(name=name, value=key.get("value"), expose=key.get("expose"),
                     differentiable=key.get("differentiable"), connections=ready)
    if isinstance(value, dict) and set(value) == {"tensor"}:
        # An unnamed tensor constant ({"tensor": 1} where a raw 1 would be a
        # scalar).
        try:
            return np.asarray(value["tensor"])
        except (TypeError, ValueError) as e:
            raise ModelDictError(f"{path}.tensor: not an array ({e})") from None
    _expect(not isinstance(value, dict), path,
            f"expected a key, a tensor or a constant, got a dict with {sorted(value)}")
    return value  # a constant


class _Pending:
    def __init__(self, model, terminal):
        self.model, self.terminal = model, terminal
