# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""The compilation controls of ml.compile, checked and resolved to what the
C++ pipeline takes (docs/compilation.md lists each and what it does).

The optimizations themselves, their names and the meaning of the levels are
C++ (mithril::runtime::setOptimizationLevel / setOptimization), shared with
mithril-run's --optimization-level and --disable; this module only checks
the Python arguments and maps the documents' spellings onto them."""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field

from . import _mithril

LEVELS = ("none", "low", "medium", "high")

# jit_options keys that name another backend's JIT (JAX's jax.jit, torch's
# torch.compile). They mean nothing for native code compiled ahead of the
# first call and are accepted with a warning that says so.
_FOREIGN_JIT_OPTIONS = ("static_argnums", "static_argnames", "donate_argnums",
                        "donate_argnames", "backend", "fullgraph", "dynamic")
# torch.compile's modes, as optimization levels.
_JIT_MODES = {"default": "medium", "reduce-overhead": "medium",
              "max-autotune": "high", "max-autotune-no-cudagraphs": "high"}


# target_hardware names of NVIDIA GPUs, as the architectures PTX is
# compiled for.
_GPU_CHIPS = {"v100": "sm_70", "t4": "sm_75", "a100": "sm_80", "a10": "sm_86", "a40": "sm_86",
              "l4": "sm_89", "l40": "sm_89", "h100": "sm_90", "h200": "sm_90"}


@dataclass
class CompileControls:
    """What the controls resolve to. `optimizations` are (name, enabled)
    pairs applied after `level`; `llvm_level` overrides the level's LLVM -O
    (-1: the level's); `threads` overrides the backend's num_threads (None:
    the backend's)."""
    level: str = "medium"
    optimizations: list = field(default_factory=list)
    llvm_level: int = -1
    threads: int | None = None
    static_shapes: bool | None = None
    verbose: bool = False
    chip: str | None = None
    checkpoint_segments: int = 0
    # mithril-mixed-precision: "bf16" or "f16" ("": none); with
    # precision_terminals the terminals take the type too.
    precision: str = ""
    precision_terminals: bool = False
    # cpu_options["target_cpu"]: the x86-64 CPU code is compiled for ("": the host).
    target_cpu: str = ""
    # cpu_options["compile_threads"]: threads that compile the LLVM code
    # (0: one per CPU this process may run on, at most 8).
    compile_threads: int = 0
    # The backend's quantize= ("int8", or "" for none); quantize_observe: a
    # calibration run; activation_ranges: static (lo, hi) pairs from one,
    # flat; activation_scales: static symmetric scales.
    quantize: str = ""
    quantize_observe: bool = False
    activation_scales: list = field(default_factory=list)
    activation_ranges: list = field(default_factory=list)

    def native_kwargs(self) -> dict:
        """The keyword arguments of _mithril.compile these controls set."""
        return {"optimization_level": self.level, "optimizations": list(self.optimizations),
                "llvm_level": self.llvm_level, "checkpoint_segments": self.checkpoint_segments,
                "precision": self.precision, "precision_terminals": self.precision_terminals,
                "target_cpu": self.target_cpu, "compile_threads": self.compile_threads,
                "quantize": self.quantize,
                "quantize_observe": self.quantize_observe,
                "activation_scales": list(self.activation_scales),
                "activation_ranges": list(self.activation_ranges)}


def _check_bool(what: str, value) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{what} must be True or False, got {value!r}")
    return value


# Gradient checkpointing's runs of forward ops when no count is given: the
# guide's example count.
DEFAULT_CHECKPOINT_SEGMENTS = 4
# memory_planning= strategies: "greedy" frees each temporary at its last use
# and hands its block to the next allocation of that size.
_MEMORY_PLANNERS = ("greedy",)


def _memory_controls(controls: CompileControls, gradient_checkpointing, checkpoint_segments,
                     memory_planning, memory_optimization) -> None:
    """gradient_checkpointing=, checkpoint_segments=, memory_planning= and
    memory_optimization= (docs/compilation.md, "Memory")."""
    if memory_optimization is not None:
        # Both of what follows, unless given otherwise.
        if _check_bool("memory_optimization", memory_optimization):
            if gradient_checkpointing is None:
                gradient_checkpointing = True
            if memory_planning is None:
                memory_planning = True
    if gradient_checkpointing is not None:
        _check_bool("gradient_checkpointing", gradient_checkpointing)
    if checkpoint_segments is not None:
        if (isinstance(checkpoint_segments, bool) or not isinstance(checkpoint_segments, int)
                or checkpoint_segments < 1):
            raise ValueError(f"checkpoint_segments must be a positive int, got "
                             f"{checkpoint_segments!r}")
        if not gradient_checkpointing:
            raise ValueError("checkpoint_segments= needs gradient_checkpointing=True")
    if gradient_checkpointing:
        controls.checkpoint_segments = checkpoint_segments or DEFAULT_CHECKPOINT_SEGMENTS
    if memory_planning is not None:
        if isinstance(memory_planning, str):
            if memory_planning not in _MEMORY_PLANNERS + ("none",):
                raise ValueError(f"unknown memory_planning {memory_planning!r} (known: "
                                 f"{', '.join(_MEMORY_PLANNERS)}, none; or True/False)")
            enabled = memory_planning != "none"
        else:
            enabled = _check_bool("memory_planning", memory_planning)
        controls.optimizations.append(("memory_planning", enabled))


def resolve(optimization_level="medium", optimizations: Mapping | None = None,
            jit_options: Mapping | None = None, cpu_options: Mapping | None = None,
            target_hardware: str | None = None, static_shapes: bool | None = None,
            verbose: bool = False, backend=None, gradient_checkpointing: bool | None = None,
            checkpoint_segments: int | None = None, memory_planning=None,
            memory_optimization: bool | None = None) -> CompileControls:
    controls = CompileControls()
    if not isinstance(optimization_level, str) or optimization_level not in LEVELS:
        raise ValueError(f"unknown optimization_level {optimization_level!r} "
                         f"(known: {', '.join(LEVELS)})")
    controls.level = optimization_level
    controls.verbose = _check_bool("verbose", verbose)
    if static_shapes is not None:
        controls.static_shapes = _check_bool("static_shapes", static_shapes)

    if jit_options is not None:
        if not isinstance(jit_options, Mapping):
            raise TypeError(f"jit_options must be a dict, got {type(jit_options).__name__}")
        ignored = []
        for key, value in jit_options.items():
            if key == "opt_level":
                if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 3:
                    raise ValueError(f"jit_options['opt_level'] must be 0, 1, 2 or 3, got "
                                     f"{value!r}")
                controls.llvm_level = value
            elif key == "mode":
                if value not in _JIT_MODES:
                    raise ValueError(f"jit_options['mode'] {value!r} is not one of "
                                     f"{', '.join(_JIT_MODES)}")
                controls.level = _JIT_MODES[value]
            elif key in _FOREIGN_JIT_OPTIONS:
                ignored.append(key)
            else:
                raise ValueError(f"unknown jit_options key {key!r} (known: opt_level, mode; "
                                 f"accepted and ignored: {', '.join(_FOREIGN_JIT_OPTIONS)})")
        if ignored:
            warnings.warn(f"jit_options {ignored} have no effect with MlirBackend: the model is "
                          "compiled to native code before its first call, with every input "
                          "passed by reference", stacklevel=3)

    if optimizations is not None:
        if not isinstance(optimizations, Mapping):
            raise TypeError(f"optimizations must be a dict of name: bool, got "
                            f"{type(optimizations).__name__}")
        known = list(_mithril.OPTIMIZATION_NAMES)
        for name, enabled in optimizations.items():
            if name not in known:
                raise ValueError(f"unknown optimization {name!r} (known: {', '.join(known)})")
            _check_bool(f"optimizations[{name!r}]", enabled)
            controls.optimizations.append((name, enabled))

    _memory_controls(controls, gradient_checkpointing, checkpoint_segments, memory_planning,
                     memory_optimization)

    if cpu_options is not None:
        if not isinstance(cpu_options, Mapping):
            raise TypeError(f"cpu_options must be a dict, got {type(cpu_options).__name__}")
        for key, value in cpu_options.items():
            if key == "num_threads":
                if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                    raise ValueError(f"cpu_options['num_threads'] must be a positive int, got "
                                     f"{value!r}")
                controls.threads = value
            elif key == "vectorize":
                controls.optimizations.append(("vectorization",
                                               _check_bool("cpu_options['vectorize']", value)))
            elif key == "target_cpu":
                if not isinstance(value, str) or not value:
                    raise ValueError("cpu_options['target_cpu'] must name an x86-64 CPU "
                                     f"('znver2', 'skylake-avx512', ...), got {value!r}")
                controls.target_cpu = "" if value in ("host", "native") else value
            elif key == "compile_threads":
                if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                    raise ValueError("cpu_options['compile_threads'] must be an int >= 0 (0: one "
                                     f"per CPU the process may run on), got {value!r}")
                controls.compile_threads = value
            else:
                raise ValueError(f"unknown cpu_options key {key!r} (known: num_threads, "
                                 "vectorize, target_cpu, compile_threads)")

    if target_hardware is not None:
        device = getattr(backend, "device", "cpu")
        if target_hardware in ("cpu", "host"):
            if device != "cpu":
                raise ValueError(f"target_hardware={target_hardware!r} with a backend on "
                                 f"device {device!r}")
        elif target_hardware.startswith("nvidia") or target_hardware.startswith("sm_"):
            if device != "cuda":
                raise ValueError(f"target_hardware={target_hardware!r} needs "
                                 "ml.MlirBackend(device='cuda')")
            chip = _GPU_CHIPS.get(target_hardware.lower().removeprefix("nvidia_"),
                                  target_hardware if target_hardware[3:].isdigit() else None)
            if chip is None:
                raise ValueError(f"unknown GPU {target_hardware!r} (known: "
                                 f"{', '.join('nvidia_' + g for g in _GPU_CHIPS)}, or sm_NN)")
            controls.chip = chip
        elif target_hardware == "tpu":
            raise ValueError("target_hardware 'tpu' is not supported: this backend compiles "
                             "for CPUs (cpu or host) and NVIDIA GPUs (device='cuda'); Mithril "
                             "reaches TPUs through JaxBackend")
        else:
            raise ValueError(f"target_hardware {target_hardware!r} is not supported (cpu or "
                             "host; an NVIDIA GPU with device='cuda')")
    return controls
