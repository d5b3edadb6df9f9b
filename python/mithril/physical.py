# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""Physical models: compiled native code behind Mithril's evaluate API."""

from __future__ import annotations

import functools
from collections.abc import Mapping

import numpy as np

from . import _mithril, profiling
from .emit import list_element_name
from .errors import KeyNotFoundError, MithrilError, ShapeError
from .naming import Names
from .options import CompileControls
from .types import BFLOAT16, FLOATS, from_bfloat16_bits, from_storage, to_storage, user_dtype

_SAVE_FORMAT = "mithril-physical-model"
_NO_ARRAYS: Mapping = {}

_NP_DTYPES = {"float32": np.float32, "float64": np.float64, "int32": np.int32,
              "int64": np.int64, "int8": np.int8, "int16": np.int16, "bool": np.bool_,
              "float16": np.float16, "bfloat16": np.uint16}  # the buffers' types: bfloat16 as bits


def _shape_spec(name: str, shape) -> str:
    dims = "x".join("?" if d is None else str(int(d)) for d in shape)
    return f"{name}:{dims if dims else 'scalar'}"


def _fits(shape: tuple, declared) -> bool:
    """Does an array shape match a terminal's, where None is any size?"""
    return len(shape) == len(declared) and all(
        d is None or d == s for s, d in zip(shape, declared))


def _with_shape_tuples(terminals: list) -> list:
    """Terminals with their static shape as a tuple under "_shape" (None
    where a size is dynamic: such arrays take the checked path)."""
    for t in terminals:
        shape = t["shape"]
        t["_shape"] = None if None in shape else tuple(shape)
    return terminals


def random_parameters(terminals: list, seed: int | None = None) -> dict[str, np.ndarray]:
    """Values of the "param" terminals (dicts with name, kind, shape, dtype),
    uniform in +-1/sqrt(fan_in) as torch initializes Linear and convolution
    layers."""
    rng = np.random.default_rng(seed)
    params = {}
    for t in terminals:
        if t["kind"] != "param":
            continue
        shape = tuple(t["shape"])
        if None in shape:
            raise MithrilError(f"parameter '{t['name']}' has shape {list(shape)}: give its "
                               "size in shapes=... to randomize it")
        fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else max(shape[0] if shape else 1, 1)
        bound = 1.0 / np.sqrt(max(fan_in, 1))
        values = rng.uniform(-bound, bound, shape)
        params[t["name"]] = from_storage(to_storage(values, t["dtype"]), t["dtype"])
    return params


def constant_dependents(model, constants, outputs) -> tuple[set, set]:
    """What `constants` (top-level input names fixed at compile time) decide
    in `model`: the outputs among `outputs` that depend on constants alone
    (the same at every call), and the constants the other outputs still
    read. A graph walk only: no op's semantics."""
    constants = set(constants)
    fixed = {o for o in outputs if model.inputs_read_by([o]) <= constants}
    held = constants & model.inputs_read_by([o for o in outputs if o not in fixed])
    return fixed, held


def _recyclable(array, *groups) -> bool:
    """Whether a replaced parameter or state array may be the spare buffer a
    later step writes an update into: an array of its own memory, writeable
    and C-contiguous, held in `groups` (the spares, parameters and state)
    only in its own slot, and sharing memory with none of the others (one
    array passed for two parameters, or views of one, would otherwise take
    two updates' writes)."""
    if (not isinstance(array, np.ndarray) or array.base is not None
            or not array.flags.writeable or not array.flags.c_contiguous):
        return False
    held = [other for group in groups for other in group if isinstance(other, np.ndarray)]
    return (sum(other is array for other in held) <= 1
            and not any(other is not array and np.may_share_memory(array, other)
                        for other in held))


def _compiled(model) -> tuple:
    """A compiled model with its inputs, outputs and optimizer state inputs,
    read from C++ once. An output that may overwrite an input (in_place_of)
    gets that input's position as "_in_place_input"; each output its storage
    dtype and shape tuple, and what a training step does with it ("_role":
    the state or parameter it updates, or the result it is), worked out here
    rather than at every step (a step's Python runs with the caches the
    compiled step swept: a small model's steps felt each lookup)."""
    inputs, outputs = _with_shape_tuples(model.inputs), _with_shape_tuples(model.outputs)
    positions = {t["name"]: i for i, t in enumerate(inputs)}
    for t in outputs:
        if t.get("in_place_of") in positions:
            t["_in_place_input"] = positions[t["in_place_of"]]
        t["_storage"] = np.dtype(_NP_DTYPES[t["dtype"]])
        name = t["name"]
        t["_role"] = (("state", name[4:]) if name.startswith("new:state:") else
                      ("param", name[4:]) if name.startswith("new:") else ("result", name))
    states = [t for t in inputs if t["name"].startswith("state:")]
    return model, inputs, outputs, states


# An output whose size depends on the data (Unique's) comes with its size as
# the output "<name>:size" (mithril-expose-sizes); evaluate returns its first
# <name>:size elements and not the size.
_SIZE = ":size"


def _trim_sized(outputs: dict) -> None:
    for key in [k for k in outputs if k.endswith(_SIZE)]:
        size = int(outputs.pop(key))
        name = key[:-len(_SIZE)]
        if name in outputs:
            outputs[name] = outputs[name][:size]


def _converted(value, dtype: str, what: str) -> np.ndarray:
    """`value` in the storage of a terminal of type `dtype`: numbers convert
    as numpy converts them, unless that loses something (complex values into
    a real type, fractions into an integer type), and what is not a number
    is an error naming the terminal, as the guide's "Type mismatch"."""
    source = getattr(value, "dtype", None)
    kind = getattr(source, "kind", None)
    if kind is None and not hasattr(value, "detach"):
        kind = np.asarray(value).dtype.kind
    if kind == "c" and not dtype.startswith("complex"):
        raise MithrilError(f"Type mismatch: {what} expects {dtype}, got complex values "
                           f"({source or 'complex'}): take .real or abs() first")
    try:
        array = to_storage(value, dtype)
    except (TypeError, ValueError) as e:
        raise MithrilError(f"Type mismatch: {what} expects {dtype}, got "
                           f"{source or type(value).__name__}: {e}") from None
    if kind == "f" and dtype.startswith(("int", "uint")):  # not bfloat16's uint16 storage
        original = np.asarray(value)
        if not np.array_equal(original, array):
            raise MithrilError(f"Type mismatch: {what} expects {dtype}, got {original.dtype} "
                               "values that are not whole numbers")
    return array


class PhysicalModel:
    def __init__(self, source: str, entry: str, backend, shapes: dict, discard: list,
                 inference: bool, controls: CompileControls | None = None,
                 dynamic: bool = False, batch_range: tuple | None = None,
                 _forward=None, _doubled=None) -> None:
        self.source = source
        self.entry = entry
        self.backend = backend
        self.inference = inference
        self._controls = controls or CompileControls()
        self._native = dict(self._controls.native_kwargs())
        # verbose=True shows the compile's stages: compiled, not taken from the
        # persistent compile cache.
        self._native["cache"] = not self._controls.verbose
        # The C functions of the users' primitives (custom.py).
        symbols = backend._primitive_symbols() if hasattr(backend, "_primitive_symbols") else {}
        if symbols:
            self._native["external_symbols"] = symbols
        ranks = getattr(backend, "_ranks", None)
        if ranks is not None and ranks.tensor_size > 1:
            self._native["tensor_parallel"] = ranks.tensor_size
        self._chip = self._controls.chip or backend.chip
        self._batch_range = batch_range
        self._shapes = dict(shapes)
        self._shape_specs = [_shape_spec(k, v) for k, v in shapes.items()]
        self._discard = discard
        # List terminals (name -> element count); their elements are inputs
        # `name[i]` (set by compile).
        self.list_inputs: dict[str, int] = {}
        self._ptx = None
        self._cuda_forward = None
        self._profiled_forward = None
        if backend.device == "cuda":
            # The kernels for NVIDIA GPUs, written without a GPU.
            self._ptx = _mithril.emit(source, "ptx", "llvm", entry, self._shape_specs, "cuda",
                                      self._chip).decode()
        self._threads = self._controls.threads or backend.num_threads or 0
        # A size given as None stays dynamic: the forward code runs any size
        # of it; gradient and training code, which autodiff compiles for
        # static shapes, is compiled per set of sizes it meets.
        self._dynamic = dynamic or any(d is None for v in shapes.values() for d in v)
        # A model compiled for training may never run its forward code
        # (train_step has its own, and a training script may not call
        # evaluate): it is compiled on first use, and only the terminals
        # (flatten, shapes, autodiff and the lowering to linalg: every error
        # a model's definition can have) now. Compile to the first train_step, one thread of a Zen 4:
        # MLP 1.18 -> 0.90 s, CNN 1.03 -> 0.75 s.
        lazy = (_forward is None and not inference and not self._controls.verbose
                and backend.device != "cuda" and getattr(backend, "_ranks", None) is None)
        self._forward_model = _forward if _forward is not None or lazy else self._compile_forward()
        if self._controls.verbose:
            self.print_stages()
        interface = self._forward_model or self._compile_forward(interface_only=True)
        self._discarded = list(interface.discarded)
        self._inputs = _with_shape_tuples(interface.inputs)
        self._outputs = interface.outputs
        self._set_names()
        # evaluate's common call (_make_fast_plan), made at the first.
        self._fast_plan = None
        # Data parallelism: how the outputs of each rank's share of the
        # batch make the global ones (mithril-batch-sharding).
        self._dp = None
        if getattr(backend, "_ranks", None) is not None:
            from .distributed import DataParallelPlan
            # `_doubled`: the model for twice this rank's batch (a static
            # compile), else the batch sizes are dynamic.
            doubled_source, doubled_specs = "", []
            if _doubled is not None:
                doubled_source = _doubled[0]
                doubled_specs = [_shape_spec(k, v) for k, v in _doubled[1].items()]
            batched, outputs = _mithril.batch_sharding(source, entry, self._shape_specs, discard,
                                                       [], f"<model {entry}>", doubled_source,
                                                       doubled_specs)
            self._dp = DataParallelPlan(backend._ranks, batched, outputs,
                                        local_shards=getattr(backend, "local_shards", False),
                                        batch=_doubled[2] if _doubled is not None else None)
        # Gradient and training models: (compiled model, its inputs, its
        # outputs), the terminals read from C++ once.
        self._gradient_models: dict[tuple, tuple] = {}

    def _compile_forward(self, interface_only: bool = False):
        return _mithril.compile(
            self.source, self.entry, self._shape_specs, self._discard, f"<model {self.entry}>",
            threads=self._threads, dynamic_shapes=self._dynamic,
            gpu_tiles_on_host=self.backend.gpu_tiles_on_host, interface_only=interface_only,
            **self._native)

    @property
    def _forward(self):
        """The compiled forward code (compiled here on first use where
        __init__ deferred it)."""
        if self._forward_model is None:
            self._forward_model = self._compile_forward()
        return self._forward_model

    # Terminals -----------------------------------------------------------
    # The compiled code's terminals are named by paths (`linear_0.weight`);
    # the model answers with the names compile's use_short_namings chose
    # (naming.py) and takes every form's.
    def _set_names(self, use_short_namings: bool | None = None, long_paths=None,
                   output_origins=None) -> None:
        self._names = Names(self._input_paths + self._output_paths + list(self._discarded),
                            use_short_namings, long_paths, output_origins)
        self._fast_plan = None

    @property
    def _input_paths(self) -> list[str]:
        return [t["name"] for t in self._inputs]

    @property
    def _output_paths(self) -> list[str]:
        return [t["name"] for t in self._outputs]

    @property
    def _trainable_paths(self) -> list[str]:
        return [t["name"] for t in self._inputs if t["kind"] == "param"]

    @property
    def _data_paths(self) -> list[str]:
        return [t["name"] for t in self._inputs if t["kind"] != "param"]

    @property
    def input_keys(self) -> list[str]:
        return self._names.outward_list(self._input_paths)

    @property
    def output_keys(self) -> list[str]:
        return self._names.outward_list([p for p in self._output_paths if not p.endswith(_SIZE)])

    @property
    def discarded_keys(self) -> list[str]:
        """The terminals `discard_keys` took away: those outputs and the
        inputs that only they read (which the compiled model neither takes
        nor needs)."""
        return self._names.outward_list(self._discarded)

    @property
    def trainable_keys(self) -> list[str]:
        return self._names.outward_list(self._trainable_paths)

    @property
    def data_keys(self) -> list[str]:
        return self._names.outward_list(self._data_paths)

    @property
    def shapes(self) -> dict[str, tuple]:
        return self._names.outward({t["name"]: tuple(t["shape"])
                                    for t in self._inputs + self._outputs})

    @property
    def static_keys(self) -> list[str]:
        """The terminals whose values do not come from the trainable
        parameters: the data inputs, the constants (`constant_keys`) the
        compiled code still reads, and the outputs that depend on constants
        alone. The original's `data_store.all_static_keys`."""
        model = getattr(self, "logical_model", None)
        constants = [k for k in (getattr(self, "compile_args", {}).get("constant_keys") or {})
                     if "." not in k]
        if model is None:
            return sorted(self.data_keys)
        fixed, held = constant_dependents(model, constants, self._output_paths)
        return sorted(self._names.outward_list(set(self._data_paths) | fixed | held))

    # Parameters ----------------------------------------------------------
    def randomize_params(self, seed: int | None = None) -> dict[str, np.ndarray]:
        """Trainable parameters, uniform in +-1/sqrt(fan_in) as torch initializes
        Linear and convolution layers."""
        terminals = []
        for t in self._inputs:
            if self._dp is not None and t.get("tensor_split", -1) >= 0:
                # The global parameter, whose slices the tensor group holds.
                t = dict(t, shape=tuple(d * self._dp.ranks.tensor_size
                                        if i == t["tensor_split"] else d
                                        for i, d in enumerate(t["shape"])))
            terminals.append(t)
        return self._names.outward(random_parameters(terminals, seed))

    # Evaluation ----------------------------------------------------------
    def _arrays(self, terminals: list, given: Mapping, what: str) -> list[np.ndarray]:
        arrays = []
        for t in terminals:
            if t["name"] not in given:
                raise KeyNotFoundError(f"missing {what} '{t['name']}' "
                                       f"({t['dtype']} {list(t['shape'])})")
            value = given[t["name"]]
            # The common case costs a few attribute reads: small models run
            # in microseconds, and the native call checks again anyway.
            if (type(value) is np.ndarray and value.dtype == _NP_DTYPES[t["dtype"]]
                    and t["dtype"] != "bfloat16"
                    and value.flags.c_contiguous and value.shape == t.get("_shape")):
                arrays.append(value)
                continue
            array = _converted(value, t["dtype"], f"{what} '{t['name']}'")
            if not _fits(array.shape, t["shape"]):
                raise MithrilError(f"{what} '{t['name']}': expected shape {list(t['shape'])}, "
                                   f"got {list(array.shape)}")
            arrays.append(array)
        return arrays

    @property
    def ptx(self) -> str | None:
        """The model's GPU kernels as PTX, for device='cuda'."""
        return self._ptx

    # State ---------------------------------------------------------------
    @functools.cached_property
    def _state_pairs(self) -> dict:
        """State input -> (its next value's output, initial value), for the
        pairs the compiled model still has (bind_state_keys). Read on every
        evaluate: computed once, at the first (compile has set logical_model
        by then)."""
        model = getattr(self, "logical_model", None)
        pairs = getattr(model, "state_pairs", {}) if model is not None else {}
        inputs, outputs = set(self._input_paths), set(self._output_paths)
        return {k: v for k, v in pairs.items() if k in inputs and v[0] in outputs}

    @property
    def state_keys(self) -> list[str]:
        """The state inputs (a Randn's key, a training BatchNorm2D's running
        statistics): evaluate takes them in `state=` and returns the next."""
        return list(self._state_pairs)

    @property
    def initial_state_dict(self) -> dict[str, np.ndarray]:
        """The state evaluate starts from: each state key's initial value."""
        return {k: np.array(initial) for k, (_, initial) in self._state_pairs.items()}

    def evaluate(self, params: Mapping | None = None, data: Mapping | None = None,
                 output_gradients: Mapping | None = None, *, state: Mapping | None = None):
        """Runs the model. Returns the outputs, or (outputs, gradients) when
        `output_gradients` seeds the outputs' gradients: a dict {output:
        cotangent}, or True, the original's unit cotangent: 1 on final_cost
        where the model has it (a TrainModel), else ones on every float
        output. A model with state keys takes the state in `state=` (start
        from pm.initial_state_dict) and returns the next state last:
        (outputs, new_state) or (outputs, gradients, new_state); without
        `state=` it starts from the initial state and returns no state.

        Inputs may be named in any form (naming.py: `linear_0.weight` or
        the original's `weight_0`); the dicts returned take every form too."""
        if output_gradients is None and state is None:
            fast = self._fast_plan
            if fast is None:
                fast = self._fast_plan = self._make_fast_plan()
            if fast and not profiling._active:
                native = fast[4]  # a frame less than through _evaluate_fast
                if native is not None:
                    result = native(params, data)
                    if result is not None:
                        return result
                result = self._evaluate_fast(fast, params, data)
                if result is not None:
                    return result
        names = self._names
        result = self._evaluate_paths(names.inward(params, "parameter"),
                                      names.inward(data), output_gradients
                                      if not isinstance(output_gradients, Mapping)
                                      else names.inward(output_gradients, "output gradient"),
                                      None if state is None else names.inward(state, "state"))
        _trim_sized(result[0] if isinstance(result, tuple) else result)
        if isinstance(result, tuple):
            return tuple(names.outward(r) for r in result)
        return names.outward(result)

    def _make_fast_plan(self) -> tuple | bool:
        """What the common call needs (a static model on the CPU, its inputs
        given as arrays of their compiled types and shapes under the model's
        names): (inputs as (name, dtype, shape), outputs as (shape, dtype),
        output names, the returned dict's type, the same call as one native
        step or None where a terminal is bfloat16); False where a model needs
        the general path. A small model's call is a few microseconds, and
        this path saves most of the Python in it (one AMD EPYC Zen 4 core, avx512f: 6.2 ->
        3 us for a one-op model). bfloat16 terminals take it too: inputs given
        as their bit patterns (uint16) or as ml_dtypes.bfloat16, outputs
        returned as from_bfloat16_bits makes them (the bf16 CNN at batch 16:
        ~60 us of Python a call less)."""
        if (self.backend.device != "cpu" or self._dynamic or self._dp is not None
                or any(t["name"].endswith(_SIZE) for t in self._outputs)
                or self._batch_range is not None or self.list_inputs or self._state_pairs):
            return False
        inputs = tuple((self._names.external(t["name"]), np.dtype(_NP_DTYPES[t["dtype"]]),
                        tuple(t["shape"]), t["dtype"] == "bfloat16") for t in self._inputs)
        outputs = tuple((tuple(t["shape"]), np.dtype(_NP_DTYPES[t["dtype"]]),
                         t["dtype"] == "bfloat16") for t in self._outputs)
        names = self._names.outward_list(self._output_paths)
        # The call as one native step where no terminal is bfloat16 (those
        # convert in Python): after a model that streams more than the caches
        # hold, this path's Python ran cold, 33 us a call (_mithril.CommonCall).
        native = None
        if not any(bf16 for *_, bf16 in inputs + outputs):
            native = self._forward.common_call(
                [(name, dtype, list(shape)) for name, dtype, shape, _ in inputs],
                [(list(shape), dtype) for shape, dtype, _ in outputs], list(names),
                self._names.dict_type)
        return (inputs, outputs, names, self._names.dict_type, native)

    def _evaluate_fast(self, fast: tuple, params, data):
        """evaluate's common call, or None where it is not one (the general
        path then runs, and reports what is wrong)."""
        inputs, outputs, names, dict_type, _ = fast
        params = params if params is not None else _NO_ARRAYS
        data = data if data is not None else _NO_ARRAYS
        # (A NameDict from randomize_params: its lookups, which also take
        # aliases, are Python's; a plain copy is cheaper.)
        if type(params) is not dict:
            params = dict(params)
        if type(data) is not dict:
            data = dict(data)
        if len(params) + len(data) != len(inputs):
            return None
        arrays = []
        for name, dtype, shape, bf16 in inputs:
            value = data.get(name)
            if value is None:
                value = params.get(name)
                if value is None:
                    return None
            elif name in params:
                return None
            if type(value) is not np.ndarray or value.shape != shape:
                return None
            if value.dtype != dtype:
                # bfloat16 bits as ml_dtypes holds them (other types convert
                # on the general path).
                if not (bf16 and BFLOAT16 is not None and value.dtype == BFLOAT16 and shape):
                    return None
                value = value.view(dtype)
            if not value.flags.c_contiguous:
                return None
            arrays.append(value)
        results = [np.empty(shape, dtype) for shape, dtype, _ in outputs]
        self._forward.run(arrays, results)
        return dict_type(zip(names, (from_bfloat16_bits(r) if bf16 else r
                                     for r, (_, _, bf16) in zip(results, outputs))))

    def _evaluate_paths(self, params: dict, data: dict, output_gradients, state):
        given = dict(params)
        for key, value in data.items():
            if key in given:
                raise KeyNotFoundError(f"'{key}' is given both as a parameter and as data")
            given[key] = value
        pairs = self._state_pairs
        if state is not None and not pairs:
            raise KeyNotFoundError("state= given, but the model has no state keys")
        if pairs:
            current = self.initial_state_dict if state is None else dict(state)
            passed = sorted(set(pairs) & set(given))
            if passed:
                raise KeyNotFoundError(f"{passed} are state keys of the model: give them in "
                                       "state= (from pm.initial_state_dict), not as inputs")
            unknown = sorted(set(current) - set(pairs))
            if unknown:
                raise KeyNotFoundError(f"state: {unknown} are not state keys of the model "
                                       f"(its state keys: {sorted(pairs)})")
            for key, (_, initial) in pairs.items():
                given[key] = current.get(key, np.array(initial))
            result = self._evaluate_lists(given, output_gradients)
            outputs = result[0] if isinstance(result, tuple) else result
            new_state = {key: outputs.pop(target) for key, (target, _) in pairs.items()
                         if target in outputs}
            if state is None:
                return result
            return (*result, new_state) if isinstance(result, tuple) else (outputs, new_state)
        return self._evaluate_lists(given, output_gradients)

    def _evaluate_lists(self, given: dict, output_gradients):
        if self.list_inputs:
            given = self._split_lists(given)
            result = self._evaluate_given(given, output_gradients)
            if isinstance(result, tuple):
                return result[0], self._join_lists(result[1])
            return result
        return self._evaluate_given(given, output_gradients)

    def _split_lists(self, given: dict) -> dict:
        """A list terminal's arrays, one input each (`name[i]`)."""
        out = {}
        for key, value in given.items():
            count = self.list_inputs.get(key)
            if count is None:
                out[key] = value
                continue
            if not isinstance(value, (list, tuple)) or len(value) != count:
                raise ShapeError(f"input '{key}' is a list of {count} tensors (the model was "
                                 f"compiled for {count}), got "
                                 f"{len(value) if isinstance(value, (list, tuple)) else type(value).__name__}")
            out.update({list_element_name(key, i): v for i, v in enumerate(value)})
        return out

    def _join_lists(self, grads: dict) -> dict:
        """Gradients of a list terminal's elements, as one list."""
        out = dict(grads)
        for key, count in self.list_inputs.items():
            names = [list_element_name(key, i) for i in range(count)]
            if all(n in out for n in names):
                out[key] = [out.pop(n) for n in names]
        return out

    def _evaluate_given(self, given: dict, output_gradients):
        # A parameter only a discarded output needed may still be given
        # (parameters drawn for the whole model): it is not read.
        discarded = set(self._discarded)
        given = {k: v for k, v in given.items() if k not in discarded}
        known = set(self._input_paths)
        unknown = [k for k in given if k not in known]
        if unknown:
            raise KeyNotFoundError(f"unknown input(s) {unknown}; the model's inputs are "
                                   f"{self.input_keys}")
        if self._batch_range is not None:
            self._check_batch(given)
        if self._dp is not None:
            return self._evaluate_data_parallel(given, output_gradients)
        if output_gradients is True:
            output_gradients = self._unit_seeds(given)
        elif output_gradients is False:
            output_gradients = None
        if output_gradients is not None:
            return self._evaluate_with_gradients(given, output_gradients)
        return self._evaluate_outputs(given)

    def _evaluate_outputs(self, given: Mapping) -> dict:
        inputs = self._arrays(self._inputs, given, "input")
        shapes = ([tuple(t["shape"]) for t in self._outputs] if not self._dynamic else
                  self._forward.output_shapes([list(a.shape) for a in inputs]))
        outputs = [np.empty(shape, dtype=_NP_DTYPES[t["dtype"]])
                   for t, shape in zip(self._outputs, shapes)]
        self._device_forward().run(inputs, outputs)
        return {t["name"]: from_storage(o, t["dtype"]) for t, o in zip(self._outputs, outputs)}

    def _evaluate_data_parallel(self, given: Mapping, output_gradients):
        """evaluate on this rank's share of the batch, the outputs put back
        together and the gradients summed over the ranks (by the compiled
        code) as one process's run over the whole batch gives them."""
        local, weight = self._dp.shard(dict(given))
        local = self._dp.local_parameters(local, self._inputs)
        if output_gradients is None or output_gradients is False:
            return self._dp.combine(self._evaluate_outputs(local), weight)
        if output_gradients is True:
            seeds = self._dp.local_seeds(self._unit_seeds(local), weight, sliced=True)
        else:
            self._check_seeded_outputs(output_gradients)
            seeds = self._dp.local_seeds(output_gradients, weight, sliced=False)
        values, grads = self._evaluate_with_gradients(local, seeds)
        return (self._dp.combine(values, weight),
                self._dp.global_parameters(grads, self._inputs))

    def _check_seeded_outputs(self, output_gradients: Mapping) -> None:
        unknown = [k for k in output_gradients if k not in self._output_paths]
        if unknown:
            raise KeyNotFoundError(f"output_gradients names unknown output(s) {unknown}; "
                                   f"the outputs are {self.output_keys}")

    def _unit_seeds(self, given: Mapping) -> dict:
        """output_gradients=True: the unit cotangents."""
        # The next state is no result to differentiate.
        states = {target for target, _ in self._state_pairs.values()}
        floats = [t for t in self._outputs if t["dtype"] in FLOATS and t["name"] not in states]
        if any(t["name"] == "final_cost" for t in floats):
            floats = [t for t in floats if t["name"] == "final_cost"]
        if not floats:
            raise MithrilError("output_gradients=True: the model has no float output to "
                               "differentiate")
        if self._dynamic:
            inputs = self._arrays(self._inputs, given, "input")
            shapes = self._forward.output_shapes([list(a.shape) for a in inputs])
            by_name = {t["name"]: s for t, s in zip(self._outputs, shapes)}
        else:
            by_name = {t["name"]: tuple(t["shape"]) for t in self._outputs}
        return {t["name"]: np.ones(by_name[t["name"]], dtype=user_dtype(t["dtype"]))
                for t in floats}

    def __call__(self, *args, **kwargs):
        """Runs the model as a function: `pm(x)` feeds the only data input (or
        "input"), `pm(params, data)` is evaluate(params, data), `pm(input=x,
        ...)` names the inputs. Parameters not given come from
        randomize_params(), drawn once and kept. Returns the only output's
        array, or the dict of outputs."""
        if len(args) == 2 and not kwargs:
            return self.evaluate(*args)
        if len(args) > 1 or (args and kwargs):
            raise TypeError("call a physical model as pm(x), pm(params, data) or "
                            "pm(name=array, ...)")
        data = dict(kwargs)
        if args:
            if isinstance(args[0], Mapping):
                data = dict(args[0])
            else:
                names = self.data_keys
                target = "input" if "input" in names else (names[0] if len(names) == 1 else None)
                if target is None:
                    raise TypeError(f"pm(x) needs a model with one data input (or one named "
                                    f"'input'); this one has {names}: name them")
                data = {target: args[0]}
        data = {self._names.canonical(k) if isinstance(k, str) else k: v
                for k, v in data.items()}
        trainable = self.trainable_keys
        params = {k: v for k, v in data.items() if k in trainable}
        data = {k: v for k, v in data.items() if k not in params}
        missing = [k for k in trainable if k not in params]
        if missing:
            if getattr(self, "_call_params", None) is None:
                self._call_params = self.randomize_params(seed=0)
            params.update({k: self._call_params[k] for k in missing})
        outputs = self.evaluate(params, data)
        return next(iter(outputs.values())) if len(outputs) == 1 else outputs

    def batch_inference(self, batches, progress: bool | None = None) -> list:
        """pm(batch) for every batch of an iterable (arrays, or dicts of named
        inputs), with a progress bar on a terminal. Returns the results in
        order. With a fixed batch size compiled in, a batch of another size
        is an error naming it: compile with None for the batch size (or
        hints={"input_batch_size_range": ...}) to take any."""
        import sys
        import time
        show = sys.stderr.isatty() if progress is None else bool(progress)
        total = len(batches) if hasattr(batches, "__len__") else None
        results, start = [], time.time()
        for i, batch in enumerate(batches, 1):
            results.append(self(batch))
            if show:
                done = f"{i}/{total}" if total else f"{i}"
                print(f"\rbatch_inference {done} {time.time() - start:6.1f}s", end="",
                      file=sys.stderr, flush=True)
        if show:
            print(file=sys.stderr)
        return results

    def _check_batch(self, given: Mapping) -> None:
        lo, hi = self._batch_range
        for t in self._inputs:
            if t["kind"] != "param" and t["shape"] and t["shape"][0] is None and \
                    t["name"] in given:
                n = np.shape(given[t["name"]])[0] if np.ndim(given[t["name"]]) else None
                if n is not None and not lo <= n <= hi:
                    raise ShapeError(f"input '{t['name']}': batch size {n} is outside "
                                     f"hints['input_batch_size_range'] ({lo}, {hi})")

    def _device_forward(self):
        """The forward model compiled for the backend's device. For "cuda" it
        is compiled at the first run, which fails with "no CUDA device" where
        there is none (self._forward, for the CPU, gives the terminals)."""
        if self.backend.device == "cpu":
            if profiling.active():
                if self._profiled_forward is None:
                    self._profiled_forward = _mithril.compile(
                        self.source, self.entry, self._shape_specs, self._discard,
                        f"<model {self.entry}>", threads=self._threads,
                        dynamic_shapes=self._dynamic,
                        gpu_tiles_on_host=self.backend.gpu_tiles_on_host, profile=True,
                        **self._native)
                return self._profiled_forward
            return self._forward
        if self._cuda_forward is None:
            self._cuda_forward = _mithril.compile(self.source, self.entry, self._shape_specs,
                                                  self._discard, f"<model {self.entry}>",
                                                  target="cuda", chip=self._chip,
                                                  **self._native)
        return self._cuda_forward

    def _static_specs(self, given: Mapping) -> list[str]:
        """Shape specs for autodiff: the sizes left dynamic taken from the
        arrays given."""
        if not self._dynamic:
            return self._shape_specs
        shapes = dict(self._shapes)
        for t in self._inputs:
            if None in t["shape"] and t["name"] in given:
                shapes[t["name"]] = np.shape(given[t["name"]])
        return [_shape_spec(k, v) for k, v in shapes.items()]

    def _gradient_model(self, seeds: tuple, given: Mapping):
        """The model that also returns gradients, compiled once per set of
        seeded outputs (and of sizes, for dynamic shapes)."""
        specs = self._static_specs(given)
        profile = profiling.active() and self.backend.device == "cpu"
        key = (seeds, tuple(specs), profile)
        compiled = self._gradient_models.get(key)
        if compiled is None:
            if not self._trainable_paths:
                raise MithrilError("the model has no trainable inputs to differentiate")
            model = _mithril.compile(self.source, self.entry, specs, self._discard,
                                     f"<model {self.entry}>", True, self._trainable_paths,
                                     list(seeds), threads=self._threads,
                                     gpu_tiles_on_host=self.backend.gpu_tiles_on_host,
                                     target=self.backend.device, chip=self._chip,
                                     profile=profile, all_reduce_gradients=self._dp is not None,
                                     **self._native)
            compiled = self._gradient_models[key] = _compiled(model)
        return compiled

    def _evaluate_with_gradients(self, given, output_gradients):
        if self.inference:
            raise MithrilError("the model was compiled with inference=True: no gradients")
        if getattr(self.backend, "quantize", None):
            raise MithrilError(f"the model is quantized (quantize='{self.backend.quantize}'), "
                               "for inference: gradients need a float backend")
        self._check_seeded_outputs(output_gradients)
        seeds = tuple(k for k in self._output_paths if k in output_gradients)
        model, model_inputs, model_outputs, _ = self._gradient_model(seeds, given)
        feeds = dict(given)
        for key in seeds:
            feeds[f"grad:{key}"] = output_gradients[key]
        inputs = self._arrays(model_inputs, feeds, "input")
        outputs = [np.empty(tuple(t["shape"]), dtype=_NP_DTYPES[t["dtype"]])
                   for t in model_outputs]
        model.run(inputs, outputs)
        values, grads = {}, {}
        for t, o in zip(model_outputs, outputs):
            o = from_storage(o, t["dtype"])
            if t["name"].startswith("grad:"):
                grads[t["name"][5:]] = o
            else:
                values[t["name"]] = o
        return values, grads

    def evaluate_gradients(self, params, data=None, output_gradients=None):
        _, grads = self.evaluate(params, data, output_gradients or {})
        return grads

    # Training ------------------------------------------------------------
    def train_step(self, params: dict, data: Mapping | None, optimizer,
                   loss: str = "final_cost") -> dict[str, np.ndarray]:
        """One optimization step on `loss` (a scalar output): forward,
        backward and `optimizer`'s update in one compiled call. `params` and
        the optimizer's state are updated in place; returns the outputs.
        `params` may name the parameters in any form (naming.py); they are
        updated under the names given."""
        names = self._names
        if names.identity and params.keys() <= names.primary.keys():
            results = self._train_step_paths(params, names.inward(data), optimizer,
                                             names.path(loss))
            return names.outward(results)
        paths = names.inward(params, "parameter")
        results = self._train_step_paths(paths, names.inward(data), optimizer, names.path(loss))
        for key in params:
            params[key] = paths[names.path(key)]
        return names.outward(results)

    def _overlapping_inputs(self, inputs: list, positions: list[int]) -> set[int]:
        """Those of `positions` (inputs that an update may overwrite) whose
        arrays overlap another of them: two updates would write one array.
        (An overlap with any other input the native run handles: it writes
        the output apart and copies it in after.) The parameters and state
        are the same arrays step after step (updated in place): the answer
        is kept with them, and they are kept alive, so that their ids stay
        theirs."""
        arrays = [inputs[i] for i in positions]
        # The positions too: each compiled step has its own.
        key = (tuple(positions), tuple(map(id, arrays)))
        cached = getattr(self, "_overlap_cache", None)
        if cached is not None and cached[0] == key:
            return cached[2]
        spans = sorted((a.__array_interface__["data"][0], a.nbytes, i)
                       for i, a in zip(positions, arrays) if a.nbytes)
        overlapping, reach, widest = set(), 0, None
        for start, size, i in spans:
            # Overlapping any earlier span means overlapping the one that
            # reaches furthest.
            if start < reach:
                overlapping.update((i, widest))
            if start + size > reach:
                reach, widest = start + size, i
        self._overlap_cache = (key, arrays, overlapping)
        return overlapping

    def _train_step_paths(self, params: dict, data: Mapping | None, optimizer,
                          loss: str) -> dict[str, np.ndarray]:
        if self.inference:
            raise MithrilError("the model was compiled with inference=True: it cannot train")
        if getattr(self.backend, "quantize", None):
            raise MithrilError(f"the model is quantized (quantize='{self.backend.quantize}'), "
                               "for inference: training needs a float backend")
        if loss not in self._output_paths:
            raise KeyNotFoundError(f"no output '{loss}' to minimize (outputs: {self.output_keys})")
        weight = None
        if self._dp is not None:
            # This rank's share of the batch, and of the loss's seed.
            data, weight = self._dp.shard(dict(data or {}))
        specs = (self._static_specs({**params, **(data or {})}) if self._dynamic
                 else self._shape_specs)
        profile = profiling.active() and self.backend.device == "cpu"
        # float16 gradients underflow: the loss is scaled (optimizer.loss_scale).
        scaled = self._controls.precision == "f16"
        key = ("train", loss, profile) + optimizer.key() + tuple(specs)
        compiled = self._gradient_models.get(key)
        if compiled is None:
            model = _mithril.compile(self.source, self.entry, specs, self._discard,
                                     f"<model {self.entry}>", True, self._trainable_paths, [loss],
                                     optimizer.algorithm, optimizer.momentum,
                                     optimizer.weight_decay, threads=self._threads,
                                     gpu_tiles_on_host=self.backend.gpu_tiles_on_host,
                                     target=self.backend.device, chip=self._chip,
                                     profile=profile, all_reduce_gradients=self._dp is not None,
                                     loss_scaling=scaled, **self._native)
            compiled = self._gradient_models[key] = _compiled(model)
        model, model_inputs, model_outputs, states = compiled
        optimizer.steps += 1
        dtype = user_dtype(self._outputs[0]["dtype"]) if self._outputs else np.float32
        for t in states:
            if t["name"] not in optimizer.state:
                optimizer.state[t["name"]] = np.zeros(tuple(t["shape"]), user_dtype(t["dtype"]))
        feeds = dict(params)
        if self._dp is not None:
            feeds = self._dp.local_parameters(feeds, self._inputs)
        feeds.update(data or {})
        feeds.update(optimizer.state)
        seed = np.array(optimizer.loss_scale if scaled else 1.0, dtype)
        if self._dp is not None:
            seed = self._dp.local_seeds({loss: seed}, weight, sliced=True)[loss]
        feeds[f"grad:{loss}"] = seed
        if scaled:
            feeds["optimizer.loss_scale"] = np.array(optimizer.loss_scale, dtype)
        feeds["optimizer.lr"] = np.array(optimizer.lr, dtype)
        feeds["optimizer.step"] = np.array(optimizer.steps, dtype)
        inputs = self._arrays(model_inputs, feeds, "input")
        # Updated parameters and state overwrite the current ones where the
        # compiler proved it may (in_place_of: the update reads each element
        # before it writes it, and nothing reads it after), as torch's
        # optimizers update in place: a third buffer's memory traffic saved.
        # The others go to spare buffers, which then swap with the current
        # ones: no allocation after the first step. (The native run copies
        # through a buffer of its own wherever an output would share
        # memory with another input or output.)
        outputs = []
        spare = optimizer._spare
        # An array passed for two inputs (tied weights) is no one update's
        # to overwrite: both read it, and each has a result of its own.
        tied = self._overlapping_inputs(
            inputs, [t["_in_place_input"] for t in model_outputs if "_in_place_input" in t])
        for t in model_outputs:
            storage, shape = t["_storage"], t["_shape"]
            source = t.get("_in_place_input")
            if source is not None and source not in tied:
                buf = inputs[source]
                if (buf.flags.writeable and buf.flags.c_contiguous and buf.dtype == storage
                        and buf.shape == shape):
                    spare.pop(t["name"], None)
                    outputs.append(buf)
                    continue
            buf = spare.get(t["name"])
            if (buf is None or buf.shape != shape or buf.dtype != storage
                    or not buf.flags.writeable):
                buf = np.empty(shape, dtype=storage)
            outputs.append(buf)
        model.run(inputs, outputs)
        if self._dp is not None and self._dp.ranks.tensor_size > 1:
            # The tensor group's slices of the updated parameters, gathered.
            updated = self._dp.global_parameters(
                {t["name"]: o for t, o in zip(model_outputs, outputs)
                 if t["name"].startswith("new:") and not t["name"].startswith("new:state:")},
                self._inputs, prefix="new:")
            outputs = [updated.get(t["name"], o) for t, o in zip(model_outputs, outputs)]
        results = {}
        for t, out in zip(model_outputs, outputs):
            # bfloat16 buffers hold bit patterns: parameters, state and
            # outputs go back as the arrays evaluate returns (new ones).
            out = from_storage(out, t["dtype"])
            role, target = t["_role"]
            if role == "result":
                results[target] = out
                continue
            held = optimizer.state if role == "state" else params
            current = held.get(target)
            if current is not out:
                if _recyclable(current, spare.values(), params.values(),
                               optimizer.state.values()):
                    spare[t["name"]] = current
                else:
                    spare.pop(t["name"], None)
            held[target] = out
        if scaled:
            optimizer._scaled_step_done(bool(results.pop("optimizer.finite")))
        if self._dp is not None:
            results = self._dp.combine(results, weight)
        return results

    # Saving and loading --------------------------------------------------
    def save(self, path, params: Mapping | None = None) -> None:
        """Saves the physical model to `path` (one zip file): the forward
        model's compiled object code, its terminals, the logical model (for
        gradients and training steps, compiled when first asked for) and
        `params` (default: the parameters pm(x) drew or a Trainer left, if
        any). PhysicalModel.load runs it without compiling again."""
        import io
        import json
        import zipfile
        if self.backend.device != "cpu":
            raise MithrilError("save: only models compiled for device='cpu' keep object code")
        if self._dp is not None:
            # One file, written by rank 0: the model as one process compiles
            # it (each rank's code is for its share), with the global
            # parameters every rank holds.
            if self.backend.rank == 0:
                self._single_process_model().save(
                    path, params if params is not None else getattr(self, "_call_params", None))
            return
        c = self._controls
        meta = {"format": _SAVE_FORMAT, "version": 1, "entry": self.entry,
                "shapes": {k: list(v) for k, v in self._shapes.items()},
                "discard": list(self._discard), "inference": self.inference,
                "list_inputs": self.list_inputs,
                "dtype": self.backend.float_name, "threads": self._threads,
                "dynamic": self._dynamic, "batch_range": self._batch_range,
                "controls": {"level": c.level, "optimizations": c.optimizations,
                             "llvm_level": c.llvm_level, "threads": c.threads},
                "cpu": _mithril.host_cpu(), "names": self._names.to_json()}
        params = params if params is not None else getattr(self, "_call_params", None)
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
            z.writestr("meta.json", json.dumps(meta, indent=1))
            z.writestr("source.mlir", self.source)
            z.writestr("logical.mlir", self._forward.logical_ir)
            z.writestr("model.o", self._forward.object_code)
            if params:
                buffer = io.BytesIO()
                np.savez(buffer, **{k: np.asarray(v) for k, v in params.items()})
                z.writestr("params.npz", buffer.getvalue())

    def _single_process_model(self) -> "PhysicalModel":
        """This model compiled for one process (no device_mesh)."""
        from .backend import MlirBackend
        from .compile import compile as compile_model
        logical = getattr(self, "logical_model", None)
        if logical is None:
            raise MithrilError("save: a model compiled on a device_mesh is saved from its logical "
                               "model, which this physical model lacks (compile it with ml.compile)")
        b = self.backend
        single = MlirBackend(dtype=b.float_name, num_threads=b.num_threads,
                             precision=b.mixed_precision_dtype)
        args = dict(self.compile_args)
        args.setdefault("discard_keys", list(self._discard))
        args.setdefault("inference", self.inference)
        return compile_model(logical, single, **args)

    @classmethod
    def load(cls, path, backend) -> "PhysicalModel":
        """The physical model `save` wrote, for `backend` (its dtype must be
        the saved one). The forward code is the saved object code, loaded
        without compiling; on a host whose CPU lacks features that code was
        compiled for, the model is compiled again, with a warning. The
        saved parameters, if any, are `pm.params` and what pm(x) uses."""
        import json
        import warnings
        import zipfile
        try:
            with zipfile.ZipFile(path) as z:
                meta = json.loads(z.read("meta.json"))
                if meta.get("format") != _SAVE_FORMAT:
                    raise MithrilError(f"{path}: not a saved mithril physical model")
                files = {name: z.read(name) for name in z.namelist()}
        except (OSError, zipfile.BadZipFile, KeyError, ValueError) as e:
            raise MithrilError(f"{path}: not a saved mithril physical model ({e})") from None
        if backend.float_name != meta["dtype"] or backend.device != "cpu":
            raise MithrilError(f"{path}: the model was compiled for {meta['dtype']} on the CPU; "
                               f"the backend is {backend!r}")
        controls = CompileControls(level=meta["controls"]["level"],
                                   optimizations=[tuple(o) for o in
                                                  meta["controls"]["optimizations"]],
                                   llvm_level=meta["controls"]["llvm_level"],
                                   threads=meta["controls"]["threads"])
        source = files["source.mlir"].decode()
        forward = None
        try:
            forward = _mithril.load(files["model.o"], files["logical.mlir"].decode(), meta["cpu"],
                                    meta["entry"], meta["threads"], meta["dynamic"], str(path),
                                    backend._primitive_symbols())
        except MithrilError as e:
            warnings.warn(f"{path}: {e}; compiling it again", stacklevel=2)
        pm = cls(source, meta["entry"], backend, {k: v for k, v in meta["shapes"].items()},
                 meta["discard"], meta["inference"], controls, dynamic=meta["dynamic"],
                 batch_range=tuple(meta["batch_range"]) if meta["batch_range"] else None,
                 _forward=forward)
        pm.list_inputs = dict(meta.get("list_inputs", {}))
        pm._names = Names.from_json(meta.get("names"), pm._input_paths + pm._output_paths
                                    + list(pm._discarded))
        pm._fast_plan = None
        pm.params = None
        if "params.npz" in files:
            import io
            with np.load(io.BytesIO(files["params.npz"])) as saved:
                pm.params = pm._names.outward(pm._names.inward({k: saved[k]
                                                                for k in saved.files}))
            pm._call_params = pm.params
        return pm

    # Introspection -------------------------------------------------------
    def get_shapes(self) -> dict[str, list]:
        """Every input and output terminal's shape (None for a dynamic size)."""
        return self._names.outward({t["name"]: list(t["shape"])
                                    for t in self._inputs + self._outputs})

    def get_types(self) -> dict[str, type]:
        """Every input and output terminal's element type, as a numpy type
        (ml.float32 is np.float32)."""
        return self._names.outward({t["name"]: user_dtype(t["dtype"]).type
                                    for t in self._inputs + self._outputs})

    @property
    def stages(self) -> list[tuple]:
        """The forward model's compile phases: (name, seconds, ops before, ops
        after), the op counts -1 for phases that are not pipeline stages."""
        return list(self._forward.stages)

    def print_stages(self) -> str:
        """Prints (and returns) the compile phases with their op counts and times."""
        lines = [f"Compiled @{self.entry} (optimization_level={self._controls.level})"]
        total = 0.0
        for name, seconds, before, after in self.stages:
            total += seconds
            ops = f"{before:6d} -> {after:6d} ops" if before >= 0 else " " * 20
            lines.append(f"  {name:<18} {ops}  {seconds * 1e3:9.2f} ms")
        lines.append(f"  {'total':<18} {' ' * 20}  {total * 1e3:9.2f} ms")
        text = "\n".join(lines)
        if getattr(self.backend, "rank", 0) == 0:
            print(text)
        return text

    def summary(self) -> str:
        """Prints (and returns) a table of the flattened model."""
        rows = self._forward.summary
        header = ("op", "name", "operands", "result")
        table = [header] + [tuple(r) for r in rows]
        widths = [max(len(str(r[i])) for r in table) for i in range(4)]
        lines = [f"Model @{self.entry}: {len(rows)} ops"]
        sep = "-+-".join("-" * w for w in widths)
        for i, r in enumerate(table):
            lines.append(" | ".join(str(c).ljust(w) for c, w in zip(r, widths)))
            if i == 0:
                lines.append(sep)
        lines.append("")
        lines.append("Inputs:")
        total = 0
        for t in self._inputs:
            count = int(np.prod(t["shape"])) if t["shape"] else 1
            if t["kind"] == "param":
                total += count
            lines.append(f"  {t['kind']:<5} {self._names.external(t['name'])}: {t['dtype']} "
                         f"{list(t['shape'])}"
                         + (f"  ({count} parameters)" if t["kind"] == "param" else ""))
        lines.append("Outputs:")
        for t in self._outputs:
            lines.append(f"  {self._names.external(t['name'])}: {t['dtype']} {list(t['shape'])}")
        lines.append(f"Trainable parameters: {total}")
        if self._dp is not None:
            lines.append(self._dp.describe())
        text = "\n".join(lines)
        if getattr(self.backend, "rank", 0) == 0:
            print(text)
        return text

    @property
    def ir(self) -> str:
        """The flattened, shape-inferred logical model."""
        return self._forward.logical_ir
