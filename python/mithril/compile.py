# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""ml.compile: a logical model and a backend in, a physical model out."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping

import numpy as np

from .backend import MlirBackend
from .emit import Emitter, list_element_name
from .deferred import DeferredPhysicalModel
from .errors import KeyNotFoundError, MissingShapeError, MithrilError, ShapeError
from .framework import BaseModel
from .naming import Names
from .options import resolve as resolve_controls
from . import _mithril
from .physical import PhysicalModel, _shape_spec, _with_shape_tuples, random_parameters
from .types import compiled_dtype_name, dtype_name_among, from_bfloat16_bits


def compile(model: BaseModel, backend: MlirBackend, *, shapes: Mapping | None = None,
            types: Mapping | None = None,
            constant_keys: Mapping | None = None, data_keys: Iterable[str] | None = None,
            discard_keys: Iterable[str] | None = None, trainable_keys: Iterable[str] | None = None,
            inference: bool = False, jit: bool = True, file_path: str | None = None,
            safe_names: bool = True, optimization_level: str = "medium",
            optimizations: Mapping | None = None, verbose: bool = False,
            static_shapes: bool | None = None, jit_options: Mapping | None = None,
            hints: Mapping | None = None, cpu_options: Mapping | None = None,
            target_hardware: str | None = None, tpu_options: Mapping | None = None,
            optimize_for: str | None = None, static_inference: bool | None = None, gradient_checkpointing: bool | None = None,
            checkpoint_segments: int | None = None, memory_planning=None,
            memory_optimization: bool | None = None, custom_passes: Iterable | None = None,
            mixed_precision=None, calibration_data: Iterable | None = None,
            safe_shapes: bool = True, use_short_namings: bool | None = None,
            _defer: bool = True, _outputs: list | None = None,
            _inputs_only: bool = False) -> PhysicalModel:
    """Compiles `model` for `backend`.

    shapes          input (or parameter) shapes; None marks a size left dynamic: the
                    compiled code runs any size of it (gradients and training steps
                    are compiled for each set of sizes they meet). Where nothing gives
                    an input's shape, the model is compiled at its first call, for the
                    shapes of the arrays given (a DeferredPhysicalModel)
    types           {input: dtype} (ml.float16, "int32", np.float64, ...): the input's
                    element type. A float input given another float type than the
                    backend's is stored and passed in that type and converted to the
                    backend's where it enters the model (types={"input": ml.float16}
                    halves the input's memory; the model computes in its precision)
    constant_keys   inputs fixed at compile time: they become constants; nested
                    parameters by path ('linear_0.weight', as randomize_params names
                    them), so a model can be compiled with its trained weights in
                    it (int8 quantization then quantizes them when compiling)
    data_keys       inputs that are data, not trainable parameters
    trainable_keys  inputs that are trainable parameters (gradients are returned)
    discard_keys    outputs to drop, with everything only they need
    inference       no gradients will be asked for
    file_path       by extension: .py a module that loads the compiled model (saved next
                    to it as NAME.mithril), .o a C-callable object file of the forward
                    model and .h its header (as mithril-run --emit=obj/h), any other
                    name the logical model as mithril IR, for mithril-opt and mithril-run;
                    a model compiled at its first call (no shapes) writes it then
    jit             accepted for compatibility: the model is always compiled to native code
    use_short_namings  the names the compiled model answers with (naming.py): None (the
                    default) paths, `linear_0.weight`; True the original Mithril's short
                    names, `weight_0`; False its long names, `linear_0_weight`. Every
                    form's names are taken as inputs and look up the dicts returned
    safe_shapes     accepted as the original's: its per-primitive safety shapes (a loss's
                    input and target share their batch) are always checked here, by the
                    dialect's shape rules, so False loosens nothing

    Compilation controls (docs/compilation.md):
    optimization_level  "none" (no graph optimization, no schedule, LLVM -O0: the same
                    numbers, for debugging), "low", "medium" (default) or "high"
    optimizations   {name: bool} switched after the level: constant_folding,
                    common_subexpression, dead_code_elimination, fusion (operator_fusion),
                    vectorization, memory_planning, approximate_math (float32 exp, tanh,
                    erf and log1p as vector polynomials, on from "medium")
    verbose         print each compile stage with its op counts and time
    static_shapes   True: every size is fixed when the code is compiled (a None size is an
                    error; an input shapes= leaves out is fixed by the first call, as
                    jax.jit does); False: the sizes shapes= does not fix stay dynamic
    jit_options     {"opt_level": 0-3} (LLVM), {"mode": torch.compile's mode}; JAX's and
                    torch's other keys are accepted with a warning that they do nothing
    hints           {"input_batch_size_range": (lo, hi)}: axis 0 of the data inputs stays
                    dynamic and is checked against the range at each call;
                    {"inference_priority": "latency" | "throughput"}: both give the same code
    cpu_options     {"num_threads": n, "vectorize": bool}
    target_hardware "cpu"/"host", or an NVIDIA GPU ("nvidia_a100", "sm_80") with
                    device="cuda": the architecture the kernels are compiled for;
                    "tpu" (and tpu_options, which go with it) is an error: no TPU target
    optimize_for    "latency" | "throughput": both give the same code today
    static_inference  with inference=True: no gradient code is ever compiled (as inference)

    Memory (docs/compilation.md, "Memory"):
    gradient_checkpointing  gradients keep only the forward values at the boundaries of
                    checkpoint_segments (default 4) even runs of the forward ops and compute
                    the others again in the backward pass: less memory, more time
    memory_planning True or "greedy" (the default from optimization_level "low" on):
                    each temporary is freed at its last use and its memory reused; False or
                    "none": temporaries live until the end of the call
    memory_optimization  True: both of the above

    mixed_precision True (the backend's precision=, else bfloat16), or "bfloat16" /
                    "float16": the terminals keep the backend's float32 (parameters are
                    float32 master weights, gradients come back in float32) and the values
                    between the ops take the low-precision type, each op computing in
                    float32 and rounding once (mithril-mixed-precision; the casts are in
                    pm.ir)

    calibration_data  with MlirBackend(quantize="int8"): a few representative inputs, each
                    a dict of every input of the model, parameters included (or a
                    (params, data) pair); the range each quantized product's or
                    convolution's activation spans over them fixes its scale and zero
                    point at compile time (static quantization; values beyond it are
                    clamped), instead of computing them from each call's data

    custom_passes   graph passes run on the model's mithril IR, in order, before the
                    pipeline: a string is an MLIR pass pipeline ("canonicalize,cse",
                    "mithril-flatten", any pass mithril-opt knows); a callable takes the
                    IR as text and returns the new text (None: unchanged). Gradients
                    and training steps are compiled from the result
    """
    # The arguments again, for a model whose shapes only its first call gives.
    call_kwargs = {k: v for k, v in locals().items()
                   if k not in ("model", "backend", "file_path", "_defer", "_outputs",
                                "_inputs_only")}
    if not isinstance(backend, MlirBackend):
        raise TypeError(f"backend must be an ml.MlirBackend, got {type(backend).__name__}")
    for flag, value in (("use_short_namings", use_short_namings), ("safe_shapes", safe_shapes)):
        if value is not None and not isinstance(value, bool):
            raise TypeError(f"{flag} must be True or False, got {value!r}")
    if hasattr(model, "finalize"):
        model.finalize()  # TrainModel: build final_cost from the losses
    # What a Trainer needs to compile the model again with a loss.
    compile_args = {"shapes": shapes, "types": types, "constant_keys": constant_keys,
                    "data_keys": data_keys,
                    "trainable_keys": trainable_keys, "safe_names": safe_names,
                    "optimization_level": optimization_level, "optimizations": optimizations,
                    "jit_options": jit_options, "cpu_options": cpu_options,
                    "target_hardware": target_hardware,
                    "gradient_checkpointing": gradient_checkpointing,
                    "checkpoint_segments": checkpoint_segments,
                    "memory_planning": memory_planning,
                    "memory_optimization": memory_optimization,
                    "custom_passes": custom_passes, "mixed_precision": mixed_precision,
                    "use_short_namings": use_short_namings}
    if tpu_options is not None and target_hardware != "tpu":
        raise ValueError("tpu_options apply to target_hardware='tpu' alone")
    controls = resolve_controls(optimization_level, optimizations, jit_options, cpu_options,
                                target_hardware, static_shapes, verbose, backend,
                                gradient_checkpointing, checkpoint_segments, memory_planning,
                                memory_optimization)
    _precision_controls(controls, backend, mixed_precision)
    batch_range = _check_hints(hints)
    if optimize_for is not None and optimize_for not in ("latency", "throughput"):
        raise ValueError(f"optimize_for must be 'latency' or 'throughput', got {optimize_for!r}")
    if static_inference is not None:
        _check_static_inference(static_inference, inference)
    shapes = {k: list(v) for k, v in (shapes or {}).items()}
    if static_shapes:
        dynamic = [k for k, v in shapes.items() if None in v]
        if dynamic:
            raise ShapeError(f"static_shapes=True, but shapes= leaves sizes of {dynamic} "
                             "dynamic (None)")
    constants = dict(constant_keys or {})
    if getattr(backend, "float_name", None) == "bfloat16":
        # uint16 arrays are bfloat16 bit patterns, as evaluate() takes them:
        # their values, not the integers (a bfloat16 model is built in
        # float32, which holds every bfloat16 value exactly).
        constants = {k: from_bfloat16_bits(v) if isinstance(v, np.ndarray)
                     and v.dtype == np.uint16 else v for k, v in constants.items()}
    data_keys = set(data_keys or ())
    trainable_keys = set(trainable_keys or ())
    discard = list(discard_keys or ())
    overlap = data_keys & trainable_keys
    if overlap:
        raise KeyNotFoundError(f"keys both data and trainable: {sorted(overlap)}")

    known = set(model.input_keys)
    for key in data_keys | trainable_keys | {k for k in constants if "." not in k}:
        if key not in known:
            raise KeyNotFoundError(f"'{key}' is not an input of the model (inputs: {sorted(known)})")
    # Nested parameters are named by path ('linear_0.weight'), checked once
    # the model is flat; any other key must be an input.
    for key in shapes:
        if "." not in key and key not in known:
            raise KeyNotFoundError(f"shapes: '{key}' is not an input of the model (inputs: "
                                   f"{sorted(known)})")
    types = {k: compiled_dtype_name(v, f"types['{k}']") for k, v in (types or {}).items()}
    for key in types:
        if key not in known:
            raise KeyNotFoundError(f"types: '{key}' is not an input terminal of the model "
                                   f"(inputs: {sorted(known)})")
    for key in discard:
        if key not in model.output_keys:
            raise KeyNotFoundError(
                f"'{key}' is not an output of the model (outputs: {model.output_keys})")

    # List terminals (Concat's input): shapes= gives a list of shapes.
    specs = model.input_specs
    lists = {k: len(v) for k, v in shapes.items() if k in specs and specs[k].is_list}
    ranks = getattr(backend, "_ranks", None)
    if lists and ranks is not None:
        raise MithrilError(f"{sorted(lists)}: list-valued inputs are not supported with "
                           "device_mesh")
    doubled_shapes = None
    if ranks is not None and batch_range is None and not backend.local_shards:
        # Data parallelism with the batch given: each rank compiles its own
        # share, static (models may read the batch size from a shape), and
        # the batch's sizes are traced from the model at twice that share.
        batch = {k: v for k, v in shapes.items()
                 if v and "." not in k and k not in trainable_keys and k not in constants}
        if batch and all(v[0] is not None for v in batch.values()):
            first = "input" if "input" in batch else next(iter(batch))
            total = batch[first][0]
            mine = ranks.split(total)[ranks.rank]
            doubled_shapes = {k: list(v) for k, v in shapes.items()}
            for key, shape in batch.items():
                if shape[0] % total:
                    raise ShapeError(f"data parallelism splits the batch (axis 0) of "
                                     f"{sorted(batch)}: '{key}' has {shape[0]} rows, not a "
                                     f"multiple of '{first}''s {total}")
                factor = shape[0] // total
                shape[0] = mine * factor
                doubled_shapes[key][0] = 2 * mine * factor
    if batch_range is not None or (ranks is not None and doubled_shapes is None):
        # Axis 0 of every data input whose shape is given becomes dynamic
        # (data parallelism: each rank runs its share of the batch).
        for key, shape in shapes.items():
            if shape and "." not in key and key not in trainable_keys and key not in lists:
                shape[0] = None

    kinds = {k: "data" for k in data_keys} | {k: "param" for k in trainable_keys}
    # Constants are values, not terminals: their shapes come with them.
    shapes = {k: v for k, v in shapes.items() if k not in constants}
    emitter = Emitter(backend.emit_float_name, getattr(backend, "primitives", None))
    try:
        entry, _ = emitter.emit_top(model, shapes, kinds, constants, types, outputs=_outputs)
    except MissingShapeError as e:
        # Nothing gives an input's shape: compiled at the first call, for
        # the shapes of its arrays (and again for new ones), as jax.jit does.
        # file_path= is written then, when the shapes are known.
        if not _defer:
            raise
        return DeferredPhysicalModel(model, backend, call_kwargs, e, file_path=file_path)
    # A nested parameter fixed by constant_keys ('linear_0.weight') is
    # known once the model is emitted.
    unused = sorted(k for k in constants if "." in k and k not in emitter.used_constants)
    if unused:
        raise KeyNotFoundError(f"constant_keys: {unused} name no parameter of the model "
                               "(nested parameters are named by path, as "
                               "pm.randomize_params() names them)")
    source = emitter.module.text()
    # The compiled model has an input per element of a list: `name[i]`.
    shapes = _expand_lists(shapes, lists)
    if _inputs_only:
        # What shape inference knows of the inputs, without compiling.
        terminals = _with_shape_tuples(_mithril.logical_inputs(
            source, entry, [_shape_spec(k, v) for k, v in shapes.items()]))
        names = Names([t["name"] for t in terminals], use_short_namings, emitter.long_paths,
                      emitter.output_origins)
        return [dict(t, name=names.external(t["name"])) for t in terminals]
    doubled = None
    if doubled_shapes is not None:
        doubled_shapes = {k: v for k, v in doubled_shapes.items() if k not in constants}
        twice = Emitter(backend.emit_float_name, getattr(backend, "primitives", None))
        twice.emit_top(model, doubled_shapes, kinds, constants, types)
        doubled = (twice.module.text(), doubled_shapes, total)
    if custom_passes is not None:
        source = _apply_custom_passes(source, custom_passes)
    if file_path is not None and _file_kind(file_path) == "mlir":
        with open(file_path, "w") as f:
            f.write(source)
    if calibration_data is not None:
        controls.activation_ranges = _calibrate(source, entry, backend, shapes, discard,
                                                controls, calibration_data)
    pm = PhysicalModel(source, entry, backend, shapes, discard, inference, controls,
                       dynamic=(controls.static_shapes is False or batch_range is not None
                                or (ranks is not None and doubled is None)),
                       batch_range=batch_range, _doubled=doubled)
    pm._set_names(use_short_namings, emitter.long_paths, emitter.output_origins)
    pm.logical_model = model
    pm.compile_args = compile_args
    pm.list_inputs = lists
    if file_path is not None and _file_kind(file_path) != "mlir":
        _write_file(pm, str(file_path))
    return pm


def _expand_lists(shapes: dict, lists: dict) -> dict:
    out = {}
    for key, shape in shapes.items():
        if key in lists:
            out.update({list_element_name(key, i): list(s) for i, s in enumerate(shape)})
        else:
            out[key] = shape
    return out


def _calibrate(source, entry, backend, shapes, discard, controls, calibration_data) -> list:
    """Static activation ranges of a quantize="int8" model, flat (lo, hi)
    pairs: its calibration run (mithril-quantize-int8's observe: each
    quantized product's [min x, max x] as an output calibration:<i>)
    evaluated on every calibration input, the smallest minimum and largest
    maximum of each."""
    if controls.quantize != "int8":
        raise ValueError("calibration_data is for quantized models: use "
                         "ml.MlirBackend(quantize='int8')")
    samples = list(calibration_data)
    if not samples:
        raise ValueError("calibration_data is empty: give at least one input dict")
    observe = dataclasses.replace(controls, quantize_observe=True, activation_scales=[],
                                  activation_ranges=[])
    observer = PhysicalModel(source, entry, backend, shapes, discard, True, observe)
    names = sorted((k for k in observer.output_keys if k.startswith("calibration:")),
                   key=lambda k: int(k.split(":", 1)[1]))
    if not names:
        raise ValueError("calibration_data: the model has no matrix product or convolution of a "
                         "weight to quantize")
    inputs = set(observer.input_keys)
    lows, highs = [0.0] * len(names), [0.0] * len(names)
    for i, sample in enumerate(samples):
        if isinstance(sample, tuple) and len(sample) == 2:
            given = {**dict(sample[0] or {}), **dict(sample[1] or {})}
        elif isinstance(sample, Mapping):
            given = dict(sample)
        else:
            raise TypeError(f"calibration_data[{i}] must be a dict of the model's inputs or a "
                            f"(params, data) pair, got {type(sample).__name__}")
        # Keys of any naming form (use_short_namings) name the observer's paths.
        given = {observer._names.path(k) if isinstance(k, str) else k: v
                 for k, v in given.items()}
        missing = sorted(inputs - set(given))
        if missing:
            raise KeyNotFoundError(f"calibration_data[{i}] lacks input(s) {missing}: give every "
                                   "input, parameters included (the scales depend on them)")
        outputs = observer.evaluate({k: v for k, v in given.items() if k in inputs})
        for j, name in enumerate(names):
            lo, hi = (float(v) for v in np.asarray(outputs[name]).reshape(2))
            lows[j], highs[j] = min(lows[j], lo), max(highs[j], hi)
    # Zero is in every range (the zero point is a level), as the pass takes it.
    return [bound for pair in zip(lows, highs) for bound in pair]


def _precision_controls(controls, backend: MlirBackend, mixed_precision) -> None:
    """The backend's dtype and mixed_precision= as mithril-mixed-precision's
    options."""
    controls.quantize = getattr(backend, "quantize", None) or ""
    short = {"bfloat16": "bf16", "float16": "f16"}
    if backend.float_name in short:
        # Built in float32, then every value and terminal converted.
        controls.precision = short[backend.float_name]
        controls.precision_terminals = True
    if mixed_precision is None or mixed_precision is False:
        return
    if mixed_precision is True:
        low = backend.mixed_precision_dtype or "bfloat16"
    else:
        low = dtype_name_among(mixed_precision, ("bfloat16", "float16"),
                               "mixed_precision (True, False or a type)")
    if backend.float_name != "float32":
        raise ValueError(f"mixed_precision keeps float32 terminals: it needs a float32 backend, "
                         f"not {backend.float_name}")
    controls.precision = short[low]
    controls.precision_terminals = False


def _file_kind(path) -> str:
    """What file_path= writes, by its extension: "py" (a module that loads
    the compiled model), "o" (an object file), "h" (its C header), or
    "mlir" (the logical model's IR, for any other name)."""
    suffix = str(path).rsplit(".", 1)[-1].lower() if "." in str(path) else ""
    return suffix if suffix in ("py", "o", "h") else "mlir"


_MODULE = '''"""The compiled model @{entry}, generated by mithril.compile(file_path=...).

    import {module}
    outputs = {module}.model.evaluate({module}.params, {{"input": ...}})
    output = {module}.model(x)

`model` is the physical model loaded from {saved} (its compiled code: nothing
is compiled at import on this CPU), and `params` its saved parameters (None
if there were none to save).
"""

import os as _os

import mithril as _ml
from mithril.framework.physical import PhysicalModel as _PhysicalModel

model = _PhysicalModel.load(_os.path.join(_os.path.dirname(_os.path.abspath(__file__)),
                                          {saved!r}),
                            _ml.MlirBackend(dtype=_ml.{dtype}))
params = model.params
evaluate = model.evaluate
'''


def _write_file(pm, path: str) -> None:
    import os
    kind = _file_kind(path)
    if kind == "py":
        saved = os.path.splitext(os.path.basename(path))[0] + ".mithril"
        pm.save(os.path.join(os.path.dirname(os.path.abspath(path)), saved))
        module = os.path.splitext(os.path.basename(path))[0]
        with open(path, "w") as f:
            f.write(_MODULE.format(entry=pm.entry, module=module, saved=saved,
                                   dtype=pm.backend.float_name))
        return
    # The forward model as a C-callable object or its header (mithril-run
    # --emit=obj / --emit=h): the shapes compiled in, inputs then outputs.
    data = _mithril.emit(pm.source, kind if kind == "h" else "obj", "llvm", pm.entry,
                         pm._shape_specs, "cpu", "sm_90", pm._threads)
    with open(path, "wb") as f:
        f.write(data)


def _check_hints(hints) -> tuple | None:
    """The batch size range of `hints`, checked (None if not given)."""
    if hints is None:
        return None
    if not isinstance(hints, Mapping):
        raise TypeError(f"hints must be a dict, got {type(hints).__name__}")
    batch_range = None
    for key, value in hints.items():
        if key == "input_batch_size_range":
            if (not isinstance(value, (tuple, list)) or len(value) != 2 or
                    not all(isinstance(v, int) and not isinstance(v, bool) for v in value) or
                    not 1 <= value[0] <= value[1]):
                raise ValueError("hints['input_batch_size_range'] must be (lo, hi) with "
                                 f"1 <= lo <= hi, got {value!r}")
            batch_range = (int(value[0]), int(value[1]))
        elif key == "inference_priority":
            if value not in ("latency", "throughput"):
                raise ValueError("hints['inference_priority'] must be 'latency' or "
                                 f"'throughput', got {value!r}")
        else:
            raise ValueError(f"unknown hints key {key!r} (known: input_batch_size_range, "
                             "inference_priority)")
    return batch_range


def _check_static_inference(static_inference, inference) -> None:
    if not isinstance(static_inference, bool):
        raise TypeError(f"static_inference must be True or False, got {static_inference!r}")
    if static_inference and not inference:
        raise ValueError("static_inference=True needs inference=True")


def _apply_custom_passes(source: str, passes: Iterable) -> str:
    """compile(custom_passes=): each pass in turn on the IR text."""
    from . import _mithril
    if isinstance(passes, (str, bytes)) or callable(passes):
        passes = [passes]
    for index, custom in enumerate(passes):
        if isinstance(custom, str):
            source = _mithril.run_passes(source, custom, f"<custom_passes[{index}]>")
            continue
        if not callable(custom):
            raise TypeError(f"custom_passes[{index}] must be a pass pipeline string or a "
                            f"callable taking and returning the IR text, got "
                            f"{type(custom).__name__}")
        name = getattr(custom, "__name__", repr(custom))
        result = custom(source)
        if result is None:
            continue
        if not isinstance(result, str):
            raise TypeError(f"custom pass {name} returned {type(result).__name__}, not the IR "
                            "text (a str) or None")
        # Checked now, so that an error names the pass that made it.
        try:
            _mithril.run_passes(result, "", f"<output of custom pass {name}>")
        except Exception as e:
            raise type(e)(f"custom pass {name} returned IR that does not verify: {e}") from None
        source = result
    return source
