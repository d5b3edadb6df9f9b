# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""Turns logical models into mithril IR through the C++ ModelBuilder.

Every composite becomes a `mithril.model` definition and every use of it a
`mithril.instance`, so the hierarchy survives into the IR; primitives become
ops located at their path. Result types are never computed here: the
builder asks the dialect's shape rules, and its errors (with terminal names)
surface as MithrilError.
"""

from __future__ import annotations

import numpy as np

from . import _mithril
from . import static
from .errors import MissingShapeError, MithrilError, ShapeError
from .framework import BaseModel, Model, Net, Primitive, Tensor, TerminalSpec
from .types import FLOATS


def _shape_ints(shape) -> list[int]:
    return [-1 if d is None else int(d) for d in shape]


def _original_local_names(model: Model) -> list[str]:
    """The original's name of each submodel of `model` in its long names:
    the submodel's name, else its class's where it is the only unnamed one
    of its class here, else `Class_i` (i over the unnamed ones of its class
    in insertion order); lowercased."""
    unnamed: dict[str, int] = {}
    for sub, _ in model.submodels:
        if not sub.name:
            unnamed[sub.class_name] = unnamed.get(sub.class_name, 0) + 1
    seen: dict[str, int] = {}
    names = []
    for sub, _ in model.submodels:
        if sub.name:
            names.append(sub.name.lower())
            continue
        cls = sub.class_name
        names.append((cls if unnamed[cls] == 1 else f"{cls}_{seen.get(cls, 0)}").lower())
        seen[cls] = seen.get(cls, 0) + 1
    return names


class Emitter:
    def __init__(self, float_dtype: str, primitives=None) -> None:
        self._top_types: dict = {}
        self.float_dtype = float_dtype
        # The backend's registered C primitives, by formula key (custom.py).
        self.primitives = dict(primitives or {})
        self.module = _mithril.Module()
        self._names: set[str] = set()
        # Per definition, its outputs whose values are known when compiling.
        self._static_outputs: dict = {}
        # The constants (by path) that replaced an input.
        self.used_constants: set[str] = set()
        # For the original's long names (naming.py): each instance path
        # below the top ('block.linear_0.') -> the original's name of it
        # ('block_linear_'), and each unnamed output of the top ('$4') ->
        # the name of the terminal that produces it ('output').
        self.long_paths: dict[str, str] = {}
        self.output_origins: dict[str, str] = {}

    def _definition_name(self, model: BaseModel) -> str:
        base = model.name or model.class_name
        name, i = base, 1
        while name in self._names:
            name, i = f"{base}_{i}", i + 1
        self._names.add(name)
        return name

    def _dtype(self, spec: TerminalSpec) -> str:
        return spec.dtype or self.float_dtype

    def _constant(self, builder, value, spec: TerminalSpec | None, path: str) -> int:
        dtype = spec.dtype if spec is not None and spec.dtype else None
        # A Python number is weakly typed (static.promote); a Tensor keeps
        # its kind (the original's Tensor(0) is an integer tensor).
        weak = static.is_python_scalar(value)
        if isinstance(value, Tensor):
            array = np.asarray(value.value)
            if dtype is None and array.dtype.kind in "iu":
                dtype = "int64"
            value = array
        if isinstance(value, static.DtypeValue):
            array = np.zeros((), dtype=np.int64)
            dtype = "int64"
        else:
            array = np.asarray(value)
        if dtype is None:
            if array.dtype == np.bool_:
                dtype = "bool"
            else:
                dtype = self.float_dtype
        array = np.require(array, dtype=np.dtype(dtype), requirements="C")
        result = builder.add_constant(array, path)
        # Recorded for the models that need values when compiling (sizes,
        # shapes, small index arrays), not for arrays of data or weights.
        if weak or isinstance(value, (tuple, list, static.DtypeValue)) or array.size <= 1024:
            known = value if weak or isinstance(value, (tuple, list, static.DtypeValue)) \
                else array
            static.record(builder, result, known, weak=weak)
        return result

    def emit_top(self, model: BaseModel, shapes: dict, kinds: dict,
                 constants: dict, types: dict | None = None,
                 outputs: list | None = None) -> tuple[str, list[str]]:
        """Emits `model` as the entry. `shapes` fixes input shapes, `kinds`
        overrides input roles, `constants` replaces inputs by values, `types`
        (names from types.dtype_name) sets input terminals' element types: a
        float input of another float type than the model's is converted to
        the model's where it enters (stored in its own type, computed in the
        model's)."""
        self._top_types = dict(types or {})
        if isinstance(model, Primitive):
            wrapper = Model(name=model.name or model.class_name)
            model.parent = None
            wrapper |= model.connect(**{k: k for k in model.input_keys + model.output_keys})
            for key in model.output_keys:
                wrapper.nets[key].expose = True
            model = wrapper
        # `outputs`: only these (and what they need; the inputs nothing
        # they need reads are left out), for the parameters' shapes of a
        # model whose other inputs have no shapes yet (deferred.py).
        return self.emit_definition(model, {}, shapes, kinds, constants, top=True,
                                    wanted=None if outputs is None else set(outputs))

    def emit_definition(self, model: Model, bound_types: dict, shapes: dict, kinds: dict,
                        constants: dict, top: bool = False, path: str = "",
                        prefix: str = "", wanted: set | None = None,
                        bound_static: dict | None = None,
                        long_prefix: str = "") -> tuple[str, list[str]]:
        """`constants` replace inputs, the top's by name and a nested
        model's unbound ones (parameters) by their path from the top
        (`linear_0.weight`, as flattening names them); `prefix` is this
        definition's path."""
        name = self._definition_name(model)
        builder = _mithril.ModelBuilder(self.module, name)
        values: dict[int, int] = {}  # id(net) -> value id
        # What the outputs asked for need: `wanted` names the outputs of a
        # nested model its parent reads (None: all of them). The submodels
        # and inputs nothing asked for need are left out, parameters
        # included, as the original's physical model leaves out keys no
        # output uses (an encoder's unused output layer).
        bound_static = bound_static or {}
        output_nets = [n for n in model._output_nets() if wanted is None or n.name in wanted]
        needed, read = model.walk_back(output_nets)

        for net in model._input_nets():
            spec = model._spec_of(net)
            if id(net) not in read and (not top or wanted is not None or (
                    kinds.get(net.name, spec.kind) == "param" and net.name not in constants
                    and not _known(shapes.get(net.name)) and not _known(spec.shape))):
                # At the top only a parameter nothing gives a shape to: no
                # output reads it, so nothing would.
                continue
            if net.name in constants and (top or net.name not in bound_types):
                values[id(net)] = self._constant(builder, constants[net.name], spec,
                                                 path + net.name)
                self.used_constants.add(prefix + net.name)
                continue
            kind = kinds.get(net.name, spec.kind) if top else spec.kind
            if spec.is_list or isinstance(bound_types.get(net.name), list):
                values[id(net)] = self._list_input(builder, model, net, spec, kind,
                                                   bound_types, shapes, top)
                continue
            if net.name in bound_types:
                shape, dtype = bound_types[net.name]
            else:
                shape = shapes.get(net.name) if top else None
                if shape is None:
                    shape = spec.shape
                if shape is None:
                    message = (f"input '{net.name}'{'' if top else ' of ' + model.class_name}"
                               f" needs a shape: pass shapes={{'{net.name}': [...]}} to compile")
                    if top:
                        raise MissingShapeError(message, net.name)
                    raise ShapeError(message)
                dtype = self._dtype(spec)
            given = self._top_types.get(net.name) if top else None
            if net.name in bound_static:
                # A value the parent knows when compiling (a size, a number).
                value, weak = bound_static[net.name]
                values[id(net)] = builder.add_input(net.name, kind, _shape_ints(shape), dtype)
                static.record(builder, values[id(net)], value, weak=weak)
                continue
            if given is not None and given != dtype:
                value = builder.add_input(net.name, kind, _shape_ints(shape), given)
                if given in FLOATS and dtype in FLOATS:
                    value = builder.add_op("cast", [value], {"element_type": dtype},
                                           net.name)[0]
                values[id(net)] = value
                continue
            values[id(net)] = builder.add_input(net.name, kind, _shape_ints(shape), dtype)

        for net in model.nets.values():
            if net.value is not None and net.producer is None:
                spec = None
                if net.consumers:
                    index, terminal = net.consumers[0]
                    spec = model.submodels[index][0].input_specs.get(terminal)
                values[id(net)] = self._constant(builder, net.value, spec, path + net.name)

        counters: dict[str, int] = {}
        original_locals = _original_local_names(model)
        for index in self._topological_order(model):
            if index not in needed:
                continue
            sub, bindings = model.submodels[index]
            base = sub.name or sub.class_name.lower()
            k = counters.get(base, 0)
            counters[base] = k + 1
            local = base if sub.name else f"{base}_{k}"
            if getattr(sub, "transparent", False):
                local = ""  # its parameters keep the names they have on their own
            reads = (set(sub.input_specs) if isinstance(sub, Primitive)
                     else sub.inputs_read_by(needed[index]))
            operands = {t: values[id(n)] for t, n in bindings.items()
                        if t in sub.input_specs and t in reads and id(n) in values}
            for t, v in operands.items():
                if isinstance(v, list) and not sub.input_specs[t].is_list and not (
                        getattr(sub, "accepts_lists", False) or not isinstance(sub, Primitive)):
                    raise ShapeError(f"{path}{local}: terminal '{t}' of {sub.class_name} takes "
                                     f"a tensor, and '{bindings[t].name}' is a list of "
                                     f"{len(v)} tensors")
            primitive = self.primitives.get(getattr(sub, "formula_key", None))
            if primitive is not None and hasattr(sub, "emit_custom_call"):
                results = sub.emit_custom_call(builder, operands, path + local, primitive)
            elif isinstance(sub, Primitive):
                results = sub.emit(builder, operands, path + local, self.float_dtype)
            else:
                child_types = {t: [builder.type_of(x) for x in v] if isinstance(v, list)
                               else builder.type_of(v) for t, v in operands.items()}
                # Paths inside a definition are local: flattening prefixes
                # them with the instance path.
                # Constants for its parameters, by their path below it (a
                # transparent model adds no path component).
                below = f"{local}." if local else ""
                long_below = f"{original_locals[index]}_" if local else ""
                self.long_paths[prefix + below] = long_prefix + long_below
                child_constants = {k[len(below):]: v for k, v in constants.items()
                                   if "." in k and k.startswith(below)}
                try:
                    child_static = {t: (static.lookup(builder, v), static.is_weak(builder, v))
                                    for t, v in operands.items() if static.known(builder, v)}
                    callee, outputs = self.emit_definition(sub, child_types, {}, {},
                                                           child_constants,
                                                           prefix=prefix + below,
                                                           wanted=needed[index],
                                                           bound_static=child_static,
                                                           long_prefix=long_prefix + long_below)
                except MithrilError as e:
                    # The definition's own paths are local: say which
                    # instance of the user's model the error is in.
                    raise _within(e, f"{path}{local or sub.class_name} ({sub.class_name})") from e
                # A list terminal is one input per element, `name[i]`.
                flat = []
                for t, v in sorted(operands.items()):
                    flat += ([(list_element_name(t, i), x) for i, x in enumerate(v)]
                             if isinstance(v, list) else [(t, v)])
                ids = builder.add_instance(local, callee, flat)
                # Values the definition knows when compiling stay known.
                for out, value_id in zip(outputs, ids):
                    known = self._static_outputs.get(callee, {}).get(out)
                    if known is not None:
                        static.record(builder, value_id, known[0], weak=known[1])
                results = _regroup(outputs, ids)
            for terminal, net in bindings.items():
                if terminal in results:
                    values[id(net)] = results[terminal]

        outputs = []
        for net in output_nets:
            name_out = net.name
            value = values[id(net)]
            if top and name_out.startswith("$") and net.producer is not None:
                self.output_origins[name_out] = net.producer[1]
            if isinstance(value, list):
                # A list (Split's, ToTuple's): one output per element.
                for i, element in enumerate(value):
                    builder.add_output(list_element_name(name_out, i), element)
                    outputs.append(list_element_name(name_out, i))
                continue
            builder.add_output(name_out, value)
            outputs.append(name_out)
            if static.known(builder, value):
                self._static_outputs.setdefault(name, {})[name_out] = (
                    static.lookup(builder, value), static.is_weak(builder, value))
        if not outputs:
            raise MithrilError(f"{model.class_name} has no outputs")
        builder.finish()
        return name, outputs

    def _list_input(self, builder, model, net, spec, kind, bound_types, shapes, top) -> list:
        """The inputs of a list terminal: one per element, `name[i]`; how
        many, and their shapes, from the shapes given (a list of shapes) or
        the instance's operands."""
        if net.name in bound_types:
            bound = bound_types[net.name]
            if not isinstance(bound, list):
                raise ShapeError(f"input '{net.name}' of {model.class_name} is a list of "
                                 "tensors, and a single tensor is connected to it")
            return [builder.add_input(list_element_name(net.name, i), kind, _shape_ints(shape),
                                      dtype) for i, (shape, dtype) in enumerate(bound)]
        given = shapes.get(net.name) if top else None
        if given is None:
            message = (f"input '{net.name}'{'' if top else ' of ' + model.class_name} is a "
                       f"list of tensors: pass shapes={{'{net.name}': [shape, shape, ...]}} "
                       "to compile (or the arrays at the first call)")
            if top:
                raise MissingShapeError(message, net.name)
            raise ShapeError(message)
        if not (isinstance(given, (list, tuple)) and given
                and all(isinstance(s, (list, tuple)) for s in given)):
            raise ShapeError(f"shapes['{net.name}']: '{net.name}' is a list of tensors, so its "
                             f"shape is a non-empty list of shapes, got {given!r}")
        dtype = self._dtype(spec)
        return [builder.add_input(list_element_name(net.name, i), kind, _shape_ints(shape),
                                  dtype) for i, shape in enumerate(given)]

    @staticmethod
    def _topological_order(model: Model) -> list[int]:
        """Submodels in an order where every producer comes before its
        consumers; cyclic connections are an error."""
        n = len(model.submodels)
        deps: list[set[int]] = [set() for _ in range(n)]
        for index, (sub, bindings) in enumerate(model.submodels):
            for terminal, net in bindings.items():
                if terminal in sub.input_specs and net.producer is not None:
                    deps[index].add(net.producer[0])
        order, state = [], [0] * n

        def visit(i: int, stack: list[int]) -> None:
            if state[i] == 2:
                return
            if state[i] == 1:
                cycle = " -> ".join(model.submodels[j][0].class_name for j in stack + [i])
                raise MithrilError(f"cyclic connections: {cycle}")
            state[i] = 1
            for d in sorted(deps[i]):
                visit(d, stack + [i])
            state[i] = 2
            order.append(i)

        for i in range(n):
            visit(i, [])
        return order


def _regroup(outputs: list, ids: list) -> dict:
    """An instance's results by terminal: the elements `name[i]` of a list
    output back into a list."""
    import re
    results: dict = {}
    for name, value in zip(outputs, ids):
        match = re.fullmatch(r"(.*)\[(\d+)\]", name)
        if match:
            results.setdefault(match.group(1), []).append(value)
        else:
            results[name] = value
    return results


def _known(shape) -> bool:
    return shape is not None and all(d is not None for d in shape)


def list_element_name(name: str, index: int) -> str:
    """The terminal of element `index` of the list terminal `name`."""
    return f"{name}[{index}]"


def _within(error: MithrilError, where: str) -> MithrilError:
    """`error` (same class) with its message prefixed by `where`."""
    message = error.args[0] if error.args else str(error)
    try:
        return type(error)(f"{where}: {message}")
    except TypeError:
        return MithrilError(f"{where}: {message}")
