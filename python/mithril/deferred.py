# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""A physical model compiled at its first call.

`ml.compile(model, backend)` with an input whose shape nothing gives (no
`shapes=` entry, no shape in the model) cannot compile yet: native code is
compiled for ranks and sizes. It returns a DeferredPhysicalModel instead,
which compiles at each call for the shapes of the arrays given (once per set
of shapes, as jax.jit traces per shape), with the compile arguments given to
ml.compile; a `file_path=` is written by each of those compiles. Until the
first call, what depends on shapes (terminal shapes, summaries) is a
MithrilError that says so; parameters are drawn before it where the graph
gives their shapes.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from .errors import KeyNotFoundError, MissingShapeError, MithrilError


class DeferredPhysicalModel:
    def __init__(self, model, backend, compile_kwargs: dict, missing,
                 file_path=None) -> None:
        self.logical_model = model
        # compile's file_path=, written by each compile (the last one's stays).
        self.file_path = file_path
        self.backend = backend
        self.compile_args = dict(compile_kwargs)
        self.inference = bool(compile_kwargs.get("inference"))
        self._missing = missing.terminal
        self._compiled: dict = {}
        self._last = None
        self._call_params = None
        self._param_names: set = set()

    def __repr__(self) -> str:
        return (f"DeferredPhysicalModel({self.logical_model.class_name}: compiled at the "
                f"first call; {len(self._compiled)} compiled so far)")

    def _not_yet(self, what: str) -> MithrilError:
        return MithrilError(
            f"{what} needs the model's shapes, and nothing gives the shape of input "
            f"'{self._missing}': call the model first (it is compiled for the shapes of the "
            f"arrays given), or compile with shapes={{'{self._missing}': [...]}}")

    def compiled_for(self, arrays: Mapping):
        """The physical model compiled for the shapes of `arrays` (name ->
        array), compiled now if it is the first call with them."""
        from .compile import compile as compile_model
        # Keyed by the data's shapes: the parameters' follow from them.
        specs = self.logical_model.input_specs
        # A list terminal's arrays give a list of shapes.
        shapes = {k: tuple(tuple(np.shape(x)) for x in v)
                  if k in specs and specs[k].is_list and isinstance(v, (list, tuple))
                  else tuple(np.shape(v))
                  for k, v in arrays.items() if k not in self._param_names}
        key = tuple(sorted(shapes.items()))
        pm = self._compiled.get(key)
        if pm is None:
            given = dict(self.compile_args.get("shapes") or {})
            given.update({k: [list(x) for x in v] if v and isinstance(v[0], tuple) else list(v)
                          for k, v in shapes.items()})
            try:
                pm = compile_model(self.logical_model, self.backend, _defer=False,
                                   file_path=self.file_path,
                                   **dict(self.compile_args, shapes=given))
            except MissingShapeError as e:
                raise KeyNotFoundError(
                    f"missing input '{e.terminal}': the model is compiled at its first call, "
                    "for the shapes of the arrays given, and none gives this one's") from None
            self._compiled[key] = pm
            self._param_names.update(pm._names.every_name(pm._trainable_paths))
        self._last = pm
        return pm

    def evaluate(self, params: Mapping | None = None, data: Mapping | None = None,
                 output_gradients: Mapping | None = None, *, state: Mapping | None = None):
        pm = self.compiled_for({**(params or {}), **(data or {})})
        return pm.evaluate(params, data, output_gradients, state=state)

    def evaluate_gradients(self, params, data=None, output_gradients=None):
        _, grads = self.evaluate(params, data, output_gradients or {})
        return grads

    def train_step(self, params: dict, data: Mapping | None, optimizer, loss="final_cost"):
        pm = self.compiled_for({**params, **(data or {})})
        return pm.train_step(params, data, optimizer, loss)

    def __call__(self, *args, **kwargs):
        """pm(x) as PhysicalModel.__call__: x goes to the model's canonical
        input (or "input"); parameters not given are drawn once, at the first
        call, and kept."""
        if len(args) == 1 and not kwargs and not isinstance(args[0], Mapping):
            name = self.logical_model.canonical_input or "input"
            kwargs = {name if isinstance(name, str) else name.key: args[0]}
            args = ()
        if args:
            data = dict(args[0]) if len(args) == 1 else {**args[0], **args[1]}
        else:
            data = dict(kwargs)
        pm = self.compiled_for(data)
        if self._call_params is None:
            self._call_params = pm.randomize_params(seed=0)
        return pm({**self._call_params, **data})

    def batch_inference(self, batches, progress: bool | None = None) -> list:
        return [self(batch) for batch in batches]

    def randomize_params(self, seed: int | None = None):
        if self._last is None:
            # Before the first call, as the original's examples do right
            # after compiling (CNN: compile with data_keys, then
            # randomize_params): the parameters' shapes from the outputs that
            # need no input without a shape (its predictions, not a loss
            # reading a target), compiled for that alone.
            probe = self._probe()
            if probe is not None:
                return probe.randomize_params(seed)
            terminals = self._parameters_from_the_graph()
            if terminals is None:
                raise self._not_yet("randomize_params()")
            from .physical import random_parameters
            return random_parameters(terminals, seed)
        return self._last.randomize_params(seed)

    def _parameters_from_the_graph(self) -> list | None:
        """The input terminals when shape inference alone gives every
        parameter its shape (torch-style layers that name their channels:
        Conv2d(3, 64, 3), Linear(128, 10)): the model emitted with every input
        without a shape given unknown sizes, a rank from 1 to 6 tried for
        each, flattened and shape-inferred, not compiled. None if no rank
        gives every parameter a shape."""
        from .compile import compile as compile_model
        args = dict(self.compile_args, inference=True, static_shapes=False)
        args.pop("discard_keys", None)
        given = dict(args.pop("shapes", None) or {})
        for rank in range(1, 7):
            unknown = {self._missing: [None] * rank}
            while True:
                try:
                    terminals = compile_model(self.logical_model, self.backend, _defer=False,
                                              _inputs_only=True, shapes={**given, **unknown},
                                              **args)
                except MissingShapeError as e:
                    if e.terminal in unknown:
                        break
                    unknown[e.terminal] = [None] * rank
                    continue
                except MithrilError:
                    break
                params = [t for t in terminals if t["kind"] == "param"]
                if params and all(None not in t["shape"] for t in params):
                    self._param_names.update(t["name"] for t in params)
                    return terminals
                break
        return None

    def _probe(self):
        from .compile import compile as compile_model
        model = self.logical_model
        missing = {self._missing}
        # Sizes still unknown (a batch) stay dynamic: only parameters' shapes
        # are read from it.
        args = dict(self.compile_args, inference=True, static_shapes=False)
        args.pop("discard_keys", None)
        while True:
            outputs = [k for k in model.output_keys if not model.inputs_read_by([k]) & missing]
            if not outputs:
                return None
            try:
                pm = compile_model(model, self.backend, _defer=False, _outputs=outputs, **args)
            except MissingShapeError as e:
                if e.terminal in missing:
                    return None
                missing.add(e.terminal)
                continue
            except MithrilError:
                return None
            params = set(pm.trainable_keys)
            self._param_names.update(pm._names.every_name(pm._trainable_paths))
            return pm

    # What the graph alone says, before any call. Once compiled, the
    # compiled model's (nested parameters included).
    @property
    def output_keys(self) -> list[str]:
        if self._last is not None:
            return self._last.output_keys
        return self._kept_outputs()

    def _kept_outputs(self) -> list[str]:
        """The logical model's outputs (by its names) that are not discarded."""
        discard = set(self.compile_args.get("discard_keys") or ())
        return [k for k in self.logical_model.output_keys if k not in discard]

    @property
    def discarded_keys(self) -> list[str]:
        """The discarded outputs and the model's inputs only they read."""
        if self._last is not None:
            return self._last.discarded_keys
        model = self.logical_model
        discard = [k for k in model.output_keys
                   if k in set(self.compile_args.get("discard_keys") or ())]
        if not discard:
            return []
        read = model.inputs_read_by(self._kept_outputs())
        return discard + [k for k in model.input_keys if k not in read]

    @property
    def data_keys(self) -> list[str]:
        """The inputs the kept outputs read that are neither parameters nor
        constants (by the model's terminal kinds and the compile's
        data_keys / trainable_keys)."""
        if self._last is not None:
            return self._last.data_keys
        model, args = self.logical_model, self.compile_args
        constants = set(args.get("constant_keys") or ())
        data, trainable = set(args.get("data_keys") or ()), set(args.get("trainable_keys") or ())
        read = model.inputs_read_by(self._kept_outputs())
        specs = model.input_specs
        return [k for k in model.input_keys
                if k in read and k not in constants and k not in trainable
                and (k in data or specs[k].kind != "param")]

    @property
    def static_keys(self) -> list[str]:
        """As PhysicalModel.static_keys, from the graph before the first
        call."""
        if self._last is not None:
            return self._last.static_keys
        from .physical import constant_dependents
        constants = [k for k in (self.compile_args.get("constant_keys") or {}) if "." not in k]
        fixed, held = constant_dependents(self.logical_model, constants, self._kept_outputs())
        return sorted(set(self.data_keys) | fixed | held)

    def __getattr__(self, name: str):
        # Terminals, shapes, summaries: those of the model compiled last.
        if name.startswith("_"):
            raise AttributeError(name)
        if self._last is None:
            raise self._not_yet(name)
        return getattr(self._last, name)
