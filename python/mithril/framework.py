# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""Logical models: primitives and composites joined at named terminals.

A composite `Model` holds submodels and the *connections* (nets) between
their terminals. `|=` adds a model, binding the terminals named in
`connect(...)`; `+=` also feeds the new model's canonical input from the
current canonical output. Nothing here knows about shapes or op semantics:
models are turned into mithril IR (see `emit.py`) and the compiler's shape
rules decide.
"""

from __future__ import annotations

from collections.abc import Mapping
import copy
import dataclasses
import difflib
import functools
import inspect
import itertools
import numbers
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from . import static
from .errors import KeyNotFoundError, MithrilError
from .expressions import Expr, ExprOps

_uid = itertools.count()


@dataclass
class TerminalSpec:
    """An input terminal of a model: its role and what is known of it.

    `kind` is "data", "param" (trainable, differentiable) or "const";
    `shape` is None (rank unknown) or a tuple of ints and None (unknown
    sizes); `dtype` is None for the backend's float type, or "int64"/"bool"."""

    kind: str = "data"
    shape: tuple | None = None
    dtype: str | None = None
    # A list of tensors (the original's Concat input): `shape` is then a
    # tuple of shapes, fixed when the model is compiled.
    is_list: bool = False


class _ToBeDetermined:
    """Mithril's TBD: a value left unset (IOKey(value=TBD) is IOKey())."""

    def __repr__(self) -> str:
        return "TBD"

    def __reduce__(self):
        return "TBD"


TBD = _ToBeDetermined()


class Tensor:
    """The original's Tensor: a tensor value for a connection (a constant
    such as `Tensor(0.0)` or `Tensor([1, 2])`, which keeps its kind: an
    integer Tensor is an integer tensor, unlike a plain Python number, which
    takes the type of what it meets), or, as `Tensor[float]`, the type of a
    terminal (`IOKey(type=Tensor[float])`). `Tensor()` is an unset value."""

    def __init__(self, value: Any = None, type=None, shape=None,
                 differentiable: bool | None = None) -> None:
        self.value = None if value is TBD else value
        self.type = type
        self.shape = None if shape is None else tuple(shape)
        self.differentiable = differentiable

    def __class_getitem__(cls, item):
        return cls

    def __repr__(self) -> str:
        return f"Tensor({self.value!r})"


class IOKey(ExprOps):
    """Names, exposes, shapes or fixes the value of a terminal connection."""

    def __init__(self, name: str | None = None, value: Any = None, shape=None, type=None,
                 expose: bool | None = None, differentiable: bool | None = None,
                 connections=None) -> None:
        self.name = name
        if isinstance(value, Tensor) and value.value is None:
            value = None  # Tensor(): a tensor, not yet a value
        self.value = None if value is TBD else value
        # The shape template given; `.shape` is the original's expression of
        # the connection's shape (`x.shape[1]`), as on any connection.
        self.shape_template = tuple(shape) if shape is not None else None
        self.type = type
        self.expose = expose
        self.differentiable = differentiable
        self.connections = list(connections or [])
        # Set by readers of model dicts: the name alone does not expose it.
        self.latent = False

    def __repr__(self) -> str:
        return f"IOKey({self.name!r})"


def _template_shape(template) -> tuple | None:
    """A shape template as what is known of the shape: ints, None for a
    symbol ("N") or None; a variadic entry (("V", ...)) leaves the rank open."""
    if any(isinstance(d, (tuple, list)) or d is Ellipsis for d in template):
        return None
    return tuple(None if d is None or isinstance(d, str) else int(d) for d in template)


class _NotGiven:
    def __repr__(self) -> str:
        return "NOT_GIVEN"


NOT_GIVEN = _NotGiven()


@dataclass(eq=False)
class Net:
    """A connection inside a composite model: at most one producer, any
    number of consumers."""

    name: str
    auto: bool = False
    producer: tuple | None = None  # (submodel index, output terminal)
    consumers: list = field(default_factory=list)  # [(submodel index, input terminal)]
    expose: bool | None = None
    value: Any = None
    shape: tuple | None = None
    differentiable: bool | None = None
    # Named after the terminal it was made for, not by the user: once it has
    # a producer (joined to an output), the name is free for a new input.
    implicit: bool = False
    # An input that is a list of tensors (IOKey(value=(Tensor(), ...))).
    is_list: bool = False


def _fresh_copy(model: "BaseModel") -> "BaseModel":
    """A deep copy of `model` outside any model, whose models (it and those
    inside it) are new instances."""
    parent = model.parent
    model.parent = None
    try:
        clone = copy.deepcopy(model)
    finally:
        model.parent = parent
    pending = [clone]
    while pending:
        m = pending.pop()
        m._uid = next(_uid)
        pending += [sub for sub, _ in getattr(m, "submodels", [])]
    return clone


class Connection(ExprOps):
    """A handle on a terminal: `model.input`, `linear.output`."""

    def __init__(self, model: "BaseModel", key: str) -> None:
        self.model = model
        self.key = key

    def __repr__(self) -> str:
        return f"Connection({self.model.class_name}.{self.key})"

    def _owner(self):
        """The composite that holds this connection's net, and the net."""
        model = self.model
        if isinstance(model, Model) and self.key in model.nets:
            return model, model.nets[self.key]
        if model.parent is None:
            raise MithrilError(f"{self!r}: the model is not part of a composite model yet")
        return model.parent, model.parent._net_of_connection(self)

    def set_shapes(self, shape) -> None:
        owner, net = self._owner()
        owner.set_shapes({net.name: shape})

    def set_value(self, value) -> None:
        owner, net = self._owner()
        owner.set_values({net.name: value})

    def set_differentiability(self, flag: bool = True) -> None:
        owner, net = self._owner()
        owner.set_differentiability({net.name: flag})


@dataclass(eq=False)
class ExtendInfo(ExprOps):
    """A model with the connections of its terminals: for `|=` and `+=`, or,
    used as a connection, the model's output (the original's call result).
    Unpacking gives each output: `logits, probs = LogisticRegression()(...)`."""
    model: "BaseModel"
    connections: dict

    def __getitem__(self, index):
        # A list output (Split's): one of its outputs; else tensor indexing.
        listed = getattr(self.model, "list_outputs", None)
        if listed is not None and isinstance(index, numbers.Integral) \
                and not isinstance(index, bool):
            return _OutputOf(self, listed[index])
        return ExprOps.__getitem__(self, index)

    def __iter__(self):
        outputs = self.model.output_keys
        if len(outputs) < 2:
            raise TypeError(f"{self.model.class_name} has one output: use the call's result "
                            "as the connection")
        for key in outputs:
            yield _OutputOf(self, key)


class CanonicalKey(str):
    """`model.canonical_input` / `model.canonical_output`: the terminal's
    name, which is also the original's connection of it. Given to another
    model's connect() in the composite that holds `model` (the original's
    `block += downsample(input=model_input)`, `Add()(left=down.canonical_output,
    ...)`), it is that terminal, whatever its name there."""

    def __new__(cls, key: str, model: "BaseModel"):
        self = super().__new__(cls, key)
        self.connection = Connection(model, key)
        return self

    def __reduce__(self):
        # Copies and pickles are the name alone.
        return (str, (str(self),))


class _OutputOf(ExprOps):
    """One named output of a model call (an ExtendInfo)."""

    def __init__(self, call: ExtendInfo, key: str) -> None:
        self.call, self.key = call, key


@functools.cache
def _constructor_signature(cls: type) -> inspect.Signature:
    return inspect.signature(cls.__init__)


def _annotated_as(annotation) -> set[str]:
    """The names in a simple annotation ("int | None" gives {"int", "None"})."""
    if isinstance(annotation, str):
        return {part.strip() for part in annotation.split("|")}
    if annotation in (int, bool):
        return {annotation.__name__}
    return set()


def _check_int_and_bool_arguments(cls: type, bound: inspect.BoundArguments) -> None:
    """An argument annotated int (or int | None) must not be a bool, one
    annotated bool must be a bool: `Linear(True)` and `use_bias=10` are
    mistakes that int() and bool() would silently accept."""
    params = _constructor_signature(cls).parameters
    for key, value in bound.arguments.items():
        if params[key].kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
            continue
        names = _annotated_as(params[key].annotation)
        if value is None and "None" in names:
            continue
        if names and names <= {"int", "None"} and "int" in names:
            if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
                raise TypeError(f"{cls.__name__}() argument '{key}' must be an int, "
                                f"not {type(value).__name__}")
        elif names and names <= {"bool", "None"} and "bool" in names:
            if not isinstance(value, (bool, np.bool_)):
                raise TypeError(f"{cls.__name__}() argument '{key}' must be a bool, "
                                f"not {type(value).__name__}")


def _is_constant_value(value) -> bool:
    return isinstance(value, (numbers.Number, np.ndarray, np.generic, Tensor))


class _ModelClass(type):
    """Checks a model's constructor arguments, naming the model, and takes
    keywords that name input terminals as their constant values, as Mithril
    does (`Add(right=2.0)`, `Linear(3, weight=w)`)."""

    def __call__(cls, *args, **kwargs):
        signature = _constructor_signature(cls)
        params = signature.parameters
        terminal_values, keywords = {}, set()
        if not any(p.kind is p.VAR_KEYWORD for p in params.values()):
            keywords = {name for name, p in params.items() if name != "self"
                        and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
            terminal_values = {k: kwargs.pop(k) for k in list(kwargs) if k not in keywords}
        try:
            bound = signature.bind(None, *args, **kwargs)
        except TypeError as e:
            raise TypeError(f"{cls.__name__}() {e}") from None
        # User models keep Python's rule: annotations are not checked.
        if cls.__init__.__module__.startswith(__package__ + "."):
            _check_int_and_bool_arguments(cls, bound)
        model = super().__call__(*args, **kwargs)
        # What model_to_dict writes as the model's `args`: the arguments
        # given (defaults left out), terminal values included.
        given = {}
        for key, value in bound.arguments.items():
            kind = params[key].kind
            if kind is inspect.Parameter.VAR_KEYWORD:
                given.update(value)
            elif kind is inspect.Parameter.VAR_POSITIONAL:
                given[key] = list(value)
            elif key not in ("self", "name"):
                given[key] = value
        model._factory_args = {**given, **terminal_values}
        try:
            for key, value in terminal_values.items():
                model._take_terminal_value(key, value, keywords)
        except TypeError:
            # The new model is dropped: the models it took in (a TrainModel's)
            # can be used again.
            for sub, _ in getattr(model, "submodels", ()):
                if sub.parent is model:
                    sub.parent = None
            raise
        return model


class BaseModel(metaclass=_ModelClass):
    """What primitives and composites share: terminals and composition."""

    def __init__(self, name: str | None = None) -> None:
        self.name = name
        self.parent: Model | None = None
        self._uid = next(_uid)
        # State keys (the original's bind_state_keys): input terminal ->
        # (output terminal, initial value). A compiled model takes the state
        # in evaluate(..., state=) and gives the next one back.
        self.state_pairs: dict[str, tuple[str, Any]] = {}

    def bind_state_keys(self, input, output, initial_value=NOT_GIVEN) -> None:
        """The original's bind_state_keys: the output terminal `output` is the
        next value of the input terminal `input` (a recurrent state: a random
        key, running statistics), starting from `initial_value`. Unconnected,
        the pair goes up to the model this one is added to, and a compiled
        model takes the state in evaluate(..., state=pm.initial_state_dict)
        and returns the next one."""
        def name_of(key):
            return key if isinstance(key, str) else getattr(key, "name", None) or getattr(
                key, "key", None)
        source, target = name_of(input), name_of(output)
        if source not in self.input_keys:
            raise KeyNotFoundError(f"bind_state_keys: '{source}' is not an input of "
                                   f"{self.class_name} (inputs: {self.input_keys})")
        if target not in self.output_keys:
            raise KeyNotFoundError(f"bind_state_keys: '{target}' is not an output of "
                                   f"{self.class_name} (outputs: {self.output_keys})")
        if initial_value is NOT_GIVEN:
            raise MithrilError(f"bind_state_keys: state '{source}' needs an initial_value "
                               "(evaluate starts from it)")
        self.state_pairs[source] = (target, initial_value)

    def compile(self, backend, **kwargs):
        """ml.compile(self, backend, **kwargs): the physical model."""
        from .compile import compile as compile_model
        return compile_model(self, backend, **kwargs)

    # Terminals -----------------------------------------------------------
    @property
    def class_name(self) -> str:
        return type(self).__name__

    @property
    def input_specs(self) -> dict[str, TerminalSpec]:
        raise NotImplementedError

    @property
    def input_keys(self) -> list[str]:
        return list(self.input_specs)

    @property
    def output_keys(self) -> list[str]:
        raise NotImplementedError

    def inputs_read_by(self, outputs) -> set[str]:
        """The input terminals that any of the output terminals `outputs`
        depend on (a primitive's outputs read all of its inputs)."""
        return set(self.input_keys) if outputs else set()

    @property
    def canonical_input(self) -> str | None:
        raise NotImplementedError

    @property
    def canonical_output(self) -> str | None:
        raise NotImplementedError

    def __getattr__(self, key: str) -> Connection:
        # Terminals are reachable as attributes (`linear.output`).
        if key.startswith("_") or key in ("name", "parent"):
            raise AttributeError(key)
        try:
            keys = self.input_keys + self.output_keys
        except Exception:  # during construction
            raise AttributeError(key) from None
        if key in keys:
            return Connection(self, key)
        # Every named connection of a composite, internal ones included, as
        # in the original (`block.sigmoid` once something reads it).
        nets = self.__dict__.get("nets")
        if nets is not None and key in nets and not nets[key].auto:
            return Connection(self, key)
        raise AttributeError(f"{self.class_name} has no terminal or attribute '{key}'")

    def _take_terminal_value(self, key: str, value, arguments: set[str]) -> None:
        """A constructor keyword that is not an argument: the constant value
        of the input terminal `key`, or a mistake."""
        where = f"{self.class_name}()"
        if key in self.output_keys:
            raise TypeError(f"{where} argument '{key}' is an output terminal: it cannot "
                            "take a value")
        if key not in self.input_keys:
            message = f"{where} got an unexpected keyword argument '{key}'"
            close = difflib.get_close_matches(key, sorted(arguments | set(self.input_keys)), n=1)
            if close:
                message += f"; did you mean '{close[0]}'?"
            raise TypeError(message)
        if value is None:
            return  # as in connect(): not given
        if not _is_constant_value(value):
            if isinstance(value, str):
                hint = f"use .connect({key}={value!r}) to name connections"
            elif isinstance(value, (list, tuple)):
                hint = "give a constant as np.array(...)"
            else:
                hint = f"pass connections through .connect({key}=...)"
            raise TypeError(f"{where} argument '{key}' is an input terminal: the constructor "
                            f"takes only its constant value (a number or a numpy array), not "
                            f"{type(value).__name__}; {hint}")
        self._set_terminal_value(key, value)

    def _set_terminal_value(self, key: str, value) -> None:
        raise NotImplementedError

    # Composition ---------------------------------------------------------
    # The terminals positional connect() arguments bind to, in order (the
    # original's per-class order); None: keywords only.
    _connect_order: tuple[str, ...] | None = None

    def connect(self, *args, **connections) -> ExtendInfo:
        """Names the connections of this model's terminals, for `|=` and `+=`.
        Positional arguments bind in the original's order: a primitive's
        inputs then its outputs (`Add().connect("a", "b", "c")`), Linear's
        input, weight, output."""
        if args:
            order = self._positional_connect_order()
            if order is None:
                raise TypeError(f"{self.class_name}.connect() takes keyword arguments only "
                                f"(terminals: {self.input_keys + self.output_keys})")
            if len(args) > len(order):
                raise TypeError(f"{self.class_name}.connect() takes at most {len(order)} "
                                f"positional arguments ({', '.join(order)}), got {len(args)}")
            for key, value in zip(order, args):
                if key in connections:
                    raise TypeError(f"{self.class_name}.connect() got multiple values for "
                                    f"terminal '{key}'")
                connections[key] = value
        return ExtendInfo(self, connections)

    def _positional_connect_order(self) -> tuple[str, ...] | None:
        return self._connect_order

    __call__ = connect


# Elementwise ops whose operands take one element type (static.promote): the
# original's numbers and tensors of different types meet there.
_PROMOTED = {"add", "subtract", "multiply", "divide", "floor_divide", "power", "minimum",
             "maximum", "equal", "not_equal", "less", "less_equal", "greater", "greater_equal"}


def _promoted(builder, op: str, values: list, float_dtype: str, path: str) -> list:
    if op == "where" and len(values) == 3:
        return values[:1] + static.promote(builder, values[1:], float_dtype, path)
    if op not in _PROMOTED or len(values) != 2 or any(isinstance(v, list) for v in values):
        return values
    values = static.promote(builder, values, float_dtype, path)
    if op == "divide" and static.is_integer_type(builder.type_of(values[0])[1]):
        # The original's Divide is true division: integers give floats.
        values = [static.promote_to(builder, v, float_dtype, path) for v in values]
    return values


class Primitive(BaseModel):
    """A model that is one mithril op. Subclasses give the op, the input
    terminals in operand order, and attributes."""

    op: str = ""
    inputs: tuple[str, ...] = ("input",)
    outputs: tuple[str, ...] = ("output",)

    def __init__(self, name: str | None = None) -> None:
        super().__init__(name)
        # Input terminals given a constant value by the constructor.
        self.terminal_values: dict[str, Any] = {}
        self.attrs: dict[str, Any] = {}
        self._specs = {k: TerminalSpec() for k in self.inputs}

    def _set_attrs(self, **attrs) -> None:
        """The op's attributes; one that is None is left to the op's default."""
        self.attrs = {k: v for k, v in attrs.items() if v is not None}

    @property
    def input_specs(self) -> dict[str, TerminalSpec]:
        """Every input terminal, valued or not (the op takes them all)."""
        return self._specs

    @property
    def input_keys(self) -> list[str]:
        """The input terminals still to connect: those without a value."""
        return [k for k in self._specs if k not in self.terminal_values]

    def _positional_connect_order(self) -> tuple[str, ...] | None:
        if self._connect_order is not None:
            return self._connect_order
        return tuple(self.input_keys) + tuple(self.output_keys)

    def _set_terminal_value(self, key: str, value) -> None:
        self.terminal_values[key] = value

    @property
    def output_keys(self) -> list[str]:
        return list(self.outputs)

    @property
    def canonical_input(self) -> str | None:
        unvalued = self.input_keys
        return CanonicalKey(unvalued[0], self) if unvalued else None

    @property
    def canonical_output(self) -> str | None:
        return CanonicalKey(self.outputs[0], self)

    def emit(self, builder, operands: dict[str, int], path: str,
             float_dtype: str = "float32") -> dict[str, int]:
        """Adds this primitive to `builder`; returns the output value ids.
        `float_dtype` is the backend's float type."""
        values = [operands[k] for k in self.inputs if k in operands]
        attrs = {k: (float_dtype if v == "float_like" else v) for k, v in self.attrs.items()}
        values = _promoted(builder, self.op, values, float_dtype, path)
        results = builder.add_op(self.op, values, attrs, path)
        static.fold(builder, self.op, attrs, values, results)
        return dict(zip(self.outputs, results))

    def __repr__(self) -> str:
        return f"{self.class_name}()"


class Model(BaseModel):
    """A composite model. `enforce_jit` is the original's argument, accepted
    for its code (Flux's `Model(enforce_jit=False)`): every model here is
    compiled."""

    def __init__(self, name: str | None = None, *, enforce_jit: bool = True) -> None:
        super().__init__(name)
        self.submodels: list[tuple[BaseModel, dict[str, Net]]] = []
        self.nets: dict[str, Net] = {}
        self._being_produced: set[int] = set()
        self._cin: Net | None = None
        self._cout: Net | None = None
        self._auto = itertools.count()

    # Terminals of the composite -----------------------------------------
    def _input_nets(self) -> list[Net]:
        return [n for n in self.nets.values()
                if n.producer is None and n.value is None and (n.consumers or n.expose)]

    def _output_nets(self) -> list[Net]:
        produced = [n for n in self.nets.values() if n.producer is not None]
        exposed = [n for n in produced
                   if n.expose or (n.expose is None and not n.auto and not n.consumers)]
        if not exposed and self._cout is not None and self._cout.producer is not None:
            exposed = [self._cout]
        return exposed

    @property
    def input_specs(self) -> dict[str, TerminalSpec]:
        specs = {}
        for net in self._input_nets():
            specs[net.name] = self._spec_of(net)
        return specs

    def _spec_of(self, net: Net) -> TerminalSpec:
        kind, shape, dtype, is_list = "data", net.shape, None, net.is_list
        for index, terminal in net.consumers:
            sub_spec = self.submodels[index][0].input_specs.get(terminal)
            if sub_spec is None:
                continue
            is_list = is_list or sub_spec.is_list
            if sub_spec.kind == "param":
                kind = "param"
            if shape is None and sub_spec.shape is not None:
                shape = sub_spec.shape
            if dtype is None and sub_spec.dtype is not None:
                dtype = sub_spec.dtype
        if net.differentiable:
            kind = "param"
        elif net.differentiable is False and kind == "param":
            kind = "data"
        return TerminalSpec(kind, shape, dtype, is_list)

    @property
    def output_keys(self) -> list[str]:
        return [n.name for n in self._output_nets()]

    def walk_back(self, output_nets: list) -> tuple[dict, set]:
        """Backwards from `output_nets`, through each submodel only as far as
        the output terminals asked of it read: those terminals, by submodel
        index, and the ids of the nets reached."""
        wanted: dict[int, set] = {}
        pending, seen = list(output_nets), set()
        while pending:
            net = pending.pop()
            if id(net) in seen:
                continue
            seen.add(id(net))
            if net.producer is None:
                continue
            index, terminal = net.producer
            asked = wanted.setdefault(index, set())
            if terminal in asked:
                continue
            asked.add(terminal)
            sub, nets = self.submodels[index]
            for key in sub.inputs_read_by({terminal}):
                if key in nets:
                    pending.append(nets[key])
        return wanted, seen

    def inputs_read_by(self, outputs) -> set[str]:
        if "emit" in vars(type(self)):
            return super().inputs_read_by(outputs)  # lowered as a whole
        _, seen = self.walk_back([self.nets[k] for k in outputs if k in self.nets])
        return {n.name for n in self._input_nets() if id(n) in seen}

    def _set_terminal_value(self, key: str, value) -> None:
        # A valued net is a constant, no longer an input (see _input_nets).
        net = self.nets[key]
        net.value = value
        if self._cin is net:
            self._cin = None

    @property
    def canonical_input(self) -> str | None:
        return CanonicalKey(self._cin.name, self) if self._cin is not None else None

    @property
    def canonical_output(self) -> str | None:
        return CanonicalKey(self._cout.name, self) if self._cout is not None else None

    @property
    def cin(self) -> Connection:
        return Connection(self, self.canonical_input)

    # The original's configuration methods ---------------------------------
    def _net_for(self, key) -> Net:
        """The net a name, Connection or IOKey refers to."""
        if isinstance(key, Net):
            return key
        if isinstance(key, Connection):
            return self._net_of_connection(key)
        name = key.name if isinstance(key, IOKey) else key
        if not isinstance(name, str) or name not in self.nets:
            raise KeyNotFoundError(f"{self.class_name} has no connection {key!r} (its "
                                   f"connections: {sorted(self.nets)})")
        return self.nets[name]

    @staticmethod
    def _config(config, kwargs: dict, what: str) -> list:
        if config is not None and not isinstance(config, Mapping):
            raise TypeError(f"{what}(config) takes a dict of connection: value")
        return list((config or {}).items()) + list(kwargs.items())

    def expose_keys(self, *keys, **renamed) -> None:
        """Makes connections outputs of this model; a keyword names the
        output (`expose_keys(predictions=cnn.cout)`)."""
        for key in keys:
            self._net_for(key).expose = True
        for name, key in renamed.items():
            net = self._net_for(key)
            if net.name != name:
                self._rename(net, name)
            net.expose = True

    def set_cin(self, *keys, safe: bool = True) -> None:
        """The canonical input (the first of `keys`): `+=` connects to it."""
        if not keys:
            raise TypeError("set_cin() needs a connection")
        net = self._net_for(keys[0])
        if safe and (net.producer is not None or net.value is not None):
            raise MithrilError(f"set_cin: '{net.name}' is not an unvalued input")
        self._cin = net

    def set_cout(self, *keys, safe: bool = True) -> None:
        """The canonical output (the first of `keys`): `+=` continues from it."""
        if not keys:
            raise TypeError("set_cout() needs a connection")
        net = self._net_for(keys[0])
        if safe and net.value is not None:
            raise MithrilError(f"set_cout: '{net.name}' has a value")
        self._cout = net

    def set_shapes(self, config=None, /, **shapes) -> None:
        """Shapes of connections: ints, None or a symbol (a str, "N") for a
        size left to inference; a shape with "..." is left unknown."""
        for key, shape in self._config(config, shapes, "set_shapes"):
            net = self._net_for(key)
            if shape is None or any(isinstance(d, str) and d.startswith("...") for d in shape):
                continue
            net.shape = tuple(None if isinstance(d, str) or d is None else int(d)
                              for d in shape)

    def set_differentiability(self, config=None, /, **flags) -> None:
        """True: a trainable input (gradients are returned); False: data."""
        for key, flag in self._config(config, flags, "set_differentiability"):
            if not isinstance(flag, bool):
                raise TypeError(f"set_differentiability: {key!r} must be True or False")
            self._net_for(key).differentiable = flag

    def set_values(self, config=None, /, **values) -> None:
        """Constant values of input connections."""
        for key, value in self._config(config, values, "set_values"):
            net = self._net_for(key)
            if net.producer is not None:
                raise ValueError(f"set_values: '{net.name}' is not an input")
            net.value = np.asarray(value) if isinstance(value, (list, tuple)) else value
            if self._cin is net:
                self._cin = None

    def rename_key(self, key, new_name: str) -> None:
        self._rename(self._net_for(key), new_name)

    @property
    def cout(self) -> Connection:
        return Connection(self, self.canonical_output)

    # Composition ---------------------------------------------------------
    def __ior__(self, info: ExtendInfo | BaseModel) -> "Model":
        if isinstance(info, BaseModel):
            info = info.connect()
        self._extend(info.model, dict(info.connections))
        return self

    __or__ = __ior__

    def __iadd__(self, info: ExtendInfo | BaseModel) -> "Model":
        if isinstance(info, BaseModel):
            info = info.connect()
        model, connections = info.model, dict(info.connections)
        if self.submodels:
            cin = model.canonical_input
            # A model with two canonical inputs (Add's left and right): the
            # one the connect() call leaves free.
            free = [k for k in getattr(model, "canonical_inputs", ())
                    if k not in connections and k in model.input_keys]
            if cin in connections and free:
                cin = free[0]
            if cin is None:
                raise KeyNotFoundError(
                    f"{model.class_name} has no canonical input to connect; use |= instead")
            if cin not in connections:
                if self._cout is None:
                    raise KeyNotFoundError("this model has no canonical output to connect from")
                connections[cin] = self._cout
        self._extend(model, connections)
        return self

    __add__ = __iadd__

    def _new_net(self, name: str | None, auto: bool = False) -> Net:
        if name is None:
            name = f"${next(self._auto)}"
            auto = True
        net = Net(name=name, auto=auto)
        self.nets[name] = net
        return net

    def _unique(self, base: str) -> str:
        if base not in self.nets:
            return base
        for i in itertools.count(1):
            if f"{base}_{i}" not in self.nets:
                return f"{base}_{i}"
        raise AssertionError("unreachable")

    def _resolve(self, value, model: BaseModel, terminal: str, is_output: bool) -> Net | None:
        """The net a terminal connection refers to; None leaves it unbound."""
        if value is NOT_GIVEN or value is None:
            return None
        if isinstance(value, Net):
            return value
        if not is_output:
            from .models.scalars import needs_static_value, static_expression
            if needs_static_value(value):
                value = static_expression(value)
        if isinstance(value, CanonicalKey) and value.connection.model is not self:
            try:
                return self._net_of_connection(value.connection)
            except KeyError:
                pass  # not a terminal here: the name, as before
        if isinstance(value, str):
            if value == "":
                return None
            return self._named(value) or self._new_net(value)
        if isinstance(value, Connection):
            return self._net_of_connection(value)
        if isinstance(value, (Expr, ExtendInfo, _OutputOf)):
            if is_output:
                raise MithrilError(f"output terminal '{terminal}' of {model.class_name} cannot "
                                   "be bound to an expression")
            return self._materialize(value)
        if isinstance(value, IOKey):
            net = self._named(value.name) if value.name is not None else None
            for other in value.connections:
                other_net = (self._net_of_connection(other) if isinstance(other, Connection)
                             else self.nets.get(other))
                if other_net is None:
                    raise KeyNotFoundError(f"connection '{other}' does not exist in this model")
                if net is None:
                    net = other_net
                elif other_net is not net:
                    self._merge(net, other_net)
            if net is None:
                net = self._new_net(value.name)
            elif value.name is not None and net.name != value.name:
                self._rename(net, value.name)
            if value.expose is not None:
                net.expose = value.expose
            elif not value.connections and value.name is not None and not value.latent:
                net.expose = True
            if value.shape_template is not None:
                net.shape = _template_shape(value.shape_template)
            if isinstance(value.value, (tuple, list)) and value.value and all(
                    isinstance(v, Tensor) and v.value is None for v in value.value):
                # The original's tuple of Tensor() placeholders: a list of
                # tensors given at run time (as Concat's input).
                net.is_list = True
            elif value.value is not None:
                net.value = value.value
            if value.differentiable is not None:
                net.differentiable = value.differentiable
            return net
        # A constant value.
        if is_output:
            raise MithrilError(f"output terminal '{terminal}' of {model.class_name} "
                               "cannot be bound to a value")
        net = self._new_net(None)
        net.value = value
        return net

    def _named(self, name: str) -> Net | None:
        """The net a user's name refers to. A name the model gave an unbound
        input (Add's `left` when Add came in unconnected) is the user's to
        use while it is an input (the guide's residual block adds the
        block's `input` that way). Once that input is joined to an output,
        now or before, it is an internal connection: as in the original, the
        user's name is a new one, and the old net moves aside (`left_1`)."""
        net = self.nets.get(name)
        if net is not None and net.implicit and (
                net.producer is not None or id(net) in getattr(self, "_being_produced", ())):
            moved = self._unique(name)  # `left_1`: `name` is still taken
            del self.nets[name]
            net.name = moved
            self.nets[moved] = net
            return None
        return net

    def _net_of_connection(self, conn: Connection) -> Net:
        if conn.model is self:
            net = self.nets.get(conn.key)
            if net is None:
                raise KeyNotFoundError(f"this model has no terminal '{conn.key}'")
            return net
        for sub, bindings in self.submodels:
            if sub is conn.model:
                return bindings[conn.key]
        raise KeyNotFoundError(f"{conn!r} does not belong to this model")

    def _rename(self, net: Net, name: str) -> None:
        if name in self.nets and self.nets[name] is not net:
            raise MithrilError(f"a connection named '{name}' already exists")
        del self.nets[net.name]
        net.name, net.auto, net.implicit = name, False, False
        self.nets[name] = net

    def _merge(self, keep: Net, other: Net) -> None:
        """Joins two nets into one (IOKey connections)."""
        if keep.producer is not None and other.producer is not None:
            raise MithrilError(f"connections '{keep.name}' and '{other.name}' both have a producer")
        keep.producer = keep.producer or other.producer
        keep.consumers += other.consumers
        for _, bindings in self.submodels:
            for t, n in bindings.items():
                if n is other:
                    bindings[t] = keep
        del self.nets[other.name]

    def _extend(self, model: BaseModel, connections: dict) -> None:
        """Adds `model`; if that fails, this model is left as it was (a
        half-made connection would break every later use of it). A model that
        is already part of one (the user guide adds its residual block twice)
        is added as a fresh copy, with its own parameters."""
        if model.parent is not None and model is not self:
            original, model = model, _fresh_copy(model)
            connections = {k: Connection(model, v.key)
                           if isinstance(v, Connection) and v.model is original else v
                           for k, v in connections.items()}
        nets = dict(self.nets)
        fields = {id(n): dataclasses.replace(n, consumers=list(n.consumers))
                  for n in self.nets.values()}
        submodels = [(m, dict(b)) for m, b in self.submodels]
        canonical = (self._cin, self._cout)
        expressions = dict(self.__dict__.get("_expr_nets", {}))
        try:
            self._extend_unchecked(model, connections)
            self._being_produced = set()
        except BaseException:
            self._being_produced = set()
            self._expr_nets = expressions
            self.nets = nets
            for net in nets.values():
                saved = fields[id(net)]
                for f in dataclasses.fields(Net):
                    setattr(net, f.name, getattr(saved, f.name))
            self.submodels = submodels
            self._cin, self._cout = canonical
            if model.parent is self:
                model.parent = None
            raise

    def _materialize(self, value) -> Net:
        """The net of a connection expression, a model call (ExtendInfo) or
        one output of a call: the models it needs are added to this
        composite, once per expression object."""
        cache = self.__dict__.setdefault("_expr_nets", {})
        hit = cache.get(id(value))
        if hit is not None and hit[0] is value:
            return hit[1]
        if isinstance(value, _OutputOf):
            self._materialize(value.call)
            bindings = cache[id(value.call)][2]
            if value.key not in bindings:
                raise KeyNotFoundError(f"{value.call.model.class_name} has no output "
                                       f"'{value.key}'")
            net, bindings = bindings[value.key], None
        elif isinstance(value, ExtendInfo):
            self._extend(value.model, dict(value.connections))
            bindings = self.submodels[-1][1]
            cout = self.submodels[-1][0].canonical_output
            if cout is None or cout not in bindings:
                raise MithrilError(f"{value.model.class_name} has no canonical output to use "
                                   "as a connection")
            net = bindings[cout]
        else:
            self._extend(value.make(), dict(value.operands))
            bindings = self.submodels[-1][1]
            net = bindings[value.output]
            if value.shape_template is not None:
                from .models.scalars import ShapeCheck
                self._extend(ShapeCheck(value.shape_template), {"input": net})
                net = self.submodels[-1][1]["output"]
        cache[id(value)] = (value, net, bindings)
        return net

    @classmethod
    def create(cls, *outputs, name: str | None = None, **named_outputs) -> "Model":
        """A model of everything the given expressions or calls need: keywords
        become outputs of that name, positional ones outputs with generated
        names; the first is the canonical output."""
        model = cls(name) if cls is Model else Model(name)
        first, order = None, []
        for key, value in list(named_outputs.items()) + [(None, v) for v in outputs]:
            net = model._resolve(value, model, key or "output", False)
            if net is None:
                raise TypeError(f"Model.create: {key or 'a positional output'} is not a "
                                "connection")
            if key is not None and net.name != key:
                model._rename(net, key)
            net.expose = True
            first = first or net
            order.append(net)
        # The outputs in the order given (as unpacking a call of the model
        # takes them: `hidden, height, width = patch_embeddings(...)`).
        for net in order:
            model.nets[net.name] = model.nets.pop(net.name)
        model._cout = first
        inputs = model._input_nets()
        model._cin = inputs[0] if inputs else None
        return model

    def _extend_unchecked(self, model: BaseModel, connections: dict) -> None:
        if model is self:
            raise MithrilError("a model cannot contain itself")
        # Expressions add their models first, so that this one's index below
        # is its own.
        # A model given as a connection is its call: its output. A size read
        # from a shape is a constant of the backend's float type.
        from .models.scalars import needs_static_value, static_expression
        connections = {k: v.connect() if isinstance(v, BaseModel) else
                       static_expression(v) if needs_static_value(v) else v
                       for k, v in connections.items()}
        for key, value in connections.items():
            if isinstance(value, (Expr, ExtendInfo, _OutputOf)) and key in model.output_keys:
                raise MithrilError(f"output terminal '{key}' of {model.class_name} cannot be "
                                   "bound to an expression")
        connections = {k: self._materialize(v) if isinstance(v, (Expr, ExtendInfo, _OutputOf))
                       else v for k, v in connections.items()}
        if model.parent is not None:
            raise MithrilError(
                f"{model.class_name} is already part of a model; create a new instance")
        inputs, outputs = model.input_keys, model.output_keys
        valued = model.terminal_values if isinstance(model, Primitive) else {}
        for key in connections:
            if key in valued:
                raise MithrilError(f"input '{key}' of {model.class_name} already has a value, "
                                   "given to its constructor")
            if key not in inputs and key not in outputs:
                raise KeyNotFoundError(
                    f"'{key}' is not a terminal of {model.class_name} "
                    f"(its inputs are {inputs}, its outputs {outputs})")
        connections = self._same_name_in_and_out(model, connections)
        # Nets this model's outputs join (IOKey connections): a name its
        # inputs give is not one of them (see _named).
        self._being_produced = {
            id(self._net_of_connection(c)) for t in outputs
            for c in getattr(connections.get(t), "connections", ()) if isinstance(c, Connection)}
        index = len(self.submodels)
        bindings: dict[str, Net] = {}
        for terminal in model.input_specs:
            given = valued[terminal] if terminal in valued else connections.get(terminal, NOT_GIVEN)
            net = self._resolve(given, model, terminal, False)
            if net is None:
                spec = model.input_specs[terminal]
                if isinstance(model, Model) and spec.kind != "data":
                    continue  # owned by the instance; flattening names it by path
                net = self._new_net(self._unique(terminal))
                net.implicit = True
            net.consumers.append((index, terminal))
            bindings[terminal] = net
        for terminal in outputs:
            net = self._resolve(connections.get(terminal, NOT_GIVEN), model, terminal, True)
            if net is None:
                net = self._new_net(None)
            if net.producer is not None:
                raise MithrilError(f"connection '{net.name}' already has a producer")
            net.producer = (index, terminal)
            bindings[terminal] = net
        self.submodels.append((model, bindings))
        model.parent = self
        self._lift_state(model, bindings)
        if index == 0 and model.canonical_input in bindings:
            self._cin = bindings[model.canonical_input]
        if model.canonical_output in bindings:
            self._cout = bindings[model.canonical_output]

    def _lift_state(self, model: BaseModel, bindings: dict) -> None:
        """A state pair of `model` whose ends are both left unconnected
        becomes one of this model: its input is one of ours already, and its
        output an output named as the submodel names it."""
        for source, (target, initial) in getattr(model, "state_pairs", {}).items():
            state, nxt = bindings.get(source), bindings.get(target)
            if state is None or nxt is None or not state.implicit or \
                    len(state.consumers) != 1 or nxt.consumers:
                continue  # connected by the user: the state is theirs
            if nxt.auto:  # named as the submodel names it
                del self.nets[nxt.name]
                nxt.name, nxt.auto, nxt.expose = self._unique(target), False, True
                self.nets[nxt.name] = nxt
            self.state_pairs[state.name] = (nxt.name, initial)

    def _same_name_in_and_out(self, model: BaseModel, connections: dict) -> dict:
        """An input and an output given one name: allowed for an in-place
        activation, whose output takes the name over (the value it named
        becomes an unnamed internal connection); an error otherwise."""
        def name_of(value):
            if isinstance(value, str):
                return value or None
            if isinstance(value, IOKey) and not value.connections:
                return value.name
            if isinstance(value, Net):
                return value.name
            return None

        outputs = {name_of(connections.get(t)): t for t in model.output_keys}
        outputs.pop(None, None)
        for terminal in model.input_keys:
            name = name_of(connections.get(terminal))
            if name is None or name not in outputs:
                continue
            cls = model.class_name
            if not getattr(model, "in_place", False):
                raise MithrilError(
                    f"{cls}: input '{terminal}' and output '{outputs[name]}' are both "
                    f"connected to '{name}', and a connection has one producer: use another "
                    f"name" + (f", or {cls}(in_place=True) to make '{name}' its result"
                               if hasattr(model, "in_place") else ""))
            net = self.nets.get(name)
            if net is None or net.producer is None:
                raise MithrilError(
                    f"{cls}(in_place=True): '{name}' is not computed in this model: an "
                    f"in-place op takes over the name of a value an earlier model computed "
                    f"(connect '{name}' to a model's output first)")
            # The old value keeps its consumers under a fresh internal name.
            del self.nets[name]
            net.name, net.auto, net.implicit, net.expose = f"${next(self._auto)}", True, False, None
            self.nets[net.name] = net
            if self._cout is net:
                self._cout = None
            connections = {**connections, terminal: net}
        return connections

    def __repr__(self) -> str:
        return f"{self.class_name}({len(self.submodels)} submodels)"
