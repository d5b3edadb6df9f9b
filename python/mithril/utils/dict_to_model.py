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
    # Nested models (Layer's activation, MLP's activations) are model dicts.
    for key, value in args.items():
        if _is_model_dict(value):
            args[key] = dict_to_model(value, f"{path}.args.{key}")
        elif isinstance(value, list) and value and all(_is_model_dict(v) for v in value):
            args[key] = [dict_to_model(v, f"{path}.args.{key}[{i}]") for i, v in enumerate(value)]
    try:
        return cls(**args)
    except MithrilError:
        raise
    except (TypeError, ValueError, KeyError, IndexError, AttributeError, ZeroDivisionError,
            OverflowError) as e:
        # The constructor rejected the dictionary's arguments.
        raise ModelDictError(f"{path}: {name}{tuple(args)}: {e}") from None


def _is_model_dict(value) -> bool:
    return isinstance(value, dict) and isinstance(value.get("name"), str) and (
        set(value) <= {"name", "args", "tuples", "enums", "types", "submodels", "connections",
                       "exposed_keys", "assigned_shapes", "assigned_types",
                       "assigned_differentiabilities", "assigned_constraints",
                       "assigned_cins", "assigned_couts", "unnamed_keys"})


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
    if spec.get("is_train_model"):
        return _train_model(spec, path)
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
        shapes = spec.get("assigned_shapes", [])
        _expect(isinstance(shapes, list), f"{path}.assigned_shapes", "expected a list")
        for entry in shapes:
            # [key, shape]; the original's (submodel, index) keys name no
            # connection here and are skipped.
            _expect(isinstance(entry, (list, tuple)) and len(entry) == 2,
                    f"{path}.assigned_shapes", f"expected [key, shape] pairs, got {entry!r}")
            key, shape = entry
            if isinstance(key, str) and key in model.nets:
                _expect(isinstance(shape, list) and all(
                    d is None or isinstance(d, (int, str)) and not isinstance(d, bool)
                    for d in shape), f"{path}.assigned_shapes",
                    f"expected a list of sizes for '{key}', got {shape!r}")
                model.nets[key].shape = tuple(shape)
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
        io_key = IOKey(name=name, value=key.get("value"), expose=key.get("expose"),
                       differentiable=key.get("differentiable"), connections=ready)
        # A name is not an output by itself: `exposed_keys` and "expose" say
        # which are (a named connection nothing reads still is, as here).
        io_key.latent = True
        return io_key
    if isinstance(value, dict) and set(value) == {"tensor"}:
        # An unnamed tensor constant ({"tensor": 1} where a raw 1 would be a
        # scalar).
        try:
            return np.asarray(value["tensor"])
        except (TypeError, ValueError) as e:
            raise ModelDictError(f"{path}.tensor: not an array ({e})") from None
    if isinstance(value, dict):
        raise ModelDictError(f"{path}: expected a key, a tensor or a constant, got a dict "
                             f"with {sorted(value)}")
    return value  # a constant


def _train_model(spec: dict, path: str) -> BaseModel:
    """The original's TrainModel dict: the model, then its add_loss and
    add_regularization calls."""
    import re

    _expect("model" in spec, path, "a TrainModel dict needs its 'model'")
    train = models.TrainModel(dict_to_model(spec["model"], f"{path}.model"))
    losses = spec.get("losses", [])
    _expect(isinstance(losses, list), f"{path}.losses", "expected a list")
    for i, loss in enumerate(losses):
        where = f"{path}.losses[{i}]"
        _expect(isinstance(loss, dict) and "model" in loss, where, "expected a dict with 'model'")
        steps = loss.get("reduce_steps")
        _expect(steps is None or isinstance(steps, list), f"{where}.reduce_steps",
                "expected a list of models")
        steps = None if steps is None else [
            dict_to_model(st, f"{where}.reduce_steps[{j}]") for j, st in enumerate(steps)]
        args = loss.get("args", {})
        _expect(isinstance(args, dict), f"{where}.args", "expected a dict")
        train.add_loss(dict_to_model(loss["model"], f"{where}.model"), reduce_steps=steps,
                       key_name=loss.get("key_name"), coef=loss.get("coef"), **args)
    regularizations = spec.get("regularizations", [])
    _expect(isinstance(regularizations, list), f"{path}.regularizations", "expected a list")
    for i, reg in enumerate(regularizations):
        where = f"{path}.regularizations[{i}]"
        _expect(isinstance(reg, dict) and "model" in reg and "coef" in reg, where,
                "expected a dict with 'model' and 'coef'")
        args = dict(reg.get("args", {}))
        if reg.get("regex"):
            args = {k: re.compile(v) if k == "input" else v for k, v in args.items()}
        train.add_regularization(dict_to_model(reg["model"], f"{where}.model"), reg["coef"],
                                 reg_key=reg.get("reg_key"), key_name=reg.get("key_name"),
                                 **args)
    if spec.get("final_loss_combiner"):
        train.set_loss_combiner(spec["final_loss_combiner"])
    return train


class _Pending:
    def __init__(self, model, terminal):
        self.model, self.terminal = model, terminal
