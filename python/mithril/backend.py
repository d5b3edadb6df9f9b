# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""Backends: where and in which precision a physical model runs."""

from __future__ import annotations

import re

import numpy as np

from .errors import MithrilError

float32 = np.float32
float64 = np.float64

_FLOAT_NAMES = ("float32", "float64", "float16", "bfloat16")


class MlirBackend:
    """Compiles through mithril-cpu-pipeline and runs native code.

    `dtype` is the floating-point type of every float terminal: float32,
    float64, or float16 / bfloat16 (ml.float16, ml.bfloat16), which compiled
    code stores as such and computes in float32, rounding each op's result
    once; bfloat16 arrays come back as float32 (ml_dtypes.bfloat16 where
    installed). `precision` ("bfloat16" or "float16") is the compute type of
    compile(..., mixed_precision=True): float32 terminals (master weights),
    low-precision values between the ops. `quantize="int8"`: inference with
    the matrix products of weights (Linear layers) and the 1-D and 2-D
    convolutions of weights (but those of windows under 32 inputs: a first
    layer over 1 or 3 channels stays float) in 8-bit integers, weights per output column
    or channel (symmetric) and activations per tensor (unsigned, with a zero
    point), scaled on each call (dynamic quantization); gradients and
    training are refused. `device` is
    "cpu", or "cuda": the model's kernels are compiled to PTX for `chip` (see
    PhysicalModel.ptx) and run on the GPU through libmithril_cuda_runtime;
    without a GPU, evaluate raises MithrilError("no CUDA device: ...").
    `num_threads` is the number of CPU threads large ops are split across
    (None: one per hardware thread; 1: single-threaded code).
    `gpu_tiles_on_host` (device "cpu") tiles matmuls and convolutions as the
    GPU pipeline does, shared-memory tiles in block and thread loops, and runs
    those loops in order on the CPU: the GPU schedule's numbers, gradients
    included, checked without a GPU. `device_mesh=(N,)`: data parallelism
    over N MPI ranks (run the script as `mpirun -n N python3 script.py`):
    every rank passes the global arrays and gets the global outputs and
    gradients, computing on its share of the batch (see docs/distributed.md);
    a mesh of 1 needs no MPI. `device_mesh=(dp, tp)` adds tensor
    parallelism: each group of tp ranks splits Linear layer pairs (columns,
    then rows), over `mpirun -n dp*tp`. `local_shards=True`: each rank
    passes only its own rows of the batch-split inputs (from a loader that
    reads its share) and gets its own rows of the batch-split outputs; sums
    and means over the batch (losses) and gradients are still global."""

    def __init__(self, dtype=float32, device: str = "cpu", seed: int = 0,
                 num_threads: int | None = None, gpu_tiles_on_host: bool = False,
                 chip: str = "sm_90", precision=None, quantize: str | None = None,
                 device_mesh=None, local_shards: bool = False) -> None:
        if num_threads is not None and (isinstance(num_threads, bool) or
                                        not isinstance(num_threads, int) or num_threads < 1):
            raise ValueError(f"num_threads must be a positive int or None, got {num_threads!r}")
        self.num_threads = num_threads
        from .types import dtype_name_among, user_dtype
        name = dtype_name_among(dtype, _FLOAT_NAMES, "MlirBackend dtype")
        if device not in ("cpu", "cuda"):
            raise ValueError(f"unknown device '{device}' (expected 'cpu' or 'cuda')")
        if gpu_tiles_on_host and device != "cpu":
            raise ValueError("gpu_tiles_on_host runs the GPU schedule on device='cpu'")
        # float16 and bfloat16 are stored as such and computed in float32,
        # rounded once per op. `dtype` is the numpy dtype of the arrays the
        # helpers and evaluate return (float32 for bfloat16 without
        # ml_dtypes); `float_name` is the compiled type.
        self.float_name = name
        self.dtype = user_dtype(name)
        if quantize not in (None, "int8"):
            raise ValueError(f"quantize must be 'int8' or None, got {quantize!r}")
        self.quantize = quantize
        # The compute type of compile(mixed_precision=True).
        self.mixed_precision_dtype = None
        if precision is not None:
            self.mixed_precision_dtype = dtype_name_among(precision, ("bfloat16", "float16"),
                                                          "precision")
        self.device = device
        self.gpu_tiles_on_host = bool(gpu_tiles_on_host)
        # sm_80, sm_90, sm_90a, sm_100f, ...: the compiler checks it against
        # the architectures LLVM knows.
        if not (isinstance(chip, str) and re.fullmatch(r"sm_\d+[af]?", chip)):
            raise ValueError(f"chip must name an NVIDIA architecture such as 'sm_90', got {chip!r}")
        self.chip = chip
        self._rng = np.random.default_rng(seed)
        from .distributed import Ranks, parse_mesh
        self.device_mesh = device_mesh
        data, tensor = parse_mesh(device_mesh)
        if data * tensor > 1 and device != "cpu":
            raise ValueError("device_mesh runs on device='cpu'")
        if data * tensor > 1 and quantize:
            raise ValueError("device_mesh splits training and inference batches of float "
                             "models; quantize='int8' is for one process")
        # Starts MPI: a mesh that does not match the run is an error here.
        self._ranks = Ranks(data, tensor) if data * tensor > 1 else None
        self.local_shards = bool(local_shards)
        # formula_key -> the C functions of a user's primitive (custom.py).
        self.primitives: dict = {}

    def register_primitive(self, fn, fn_grad=None, *, name: str | None = None) -> str:
        """Gives this backend a primitive: `fn`, a C function (custom.py:
        a ctypes function of a loaded library, an object with a C entry
        point, or the name of a symbol of the process), which a
        `CustomPrimitiveModel(formula_key=<its name>, ...)` computes, and
        `fn_grad`, its gradient function, without which the primitive is not
        differentiable. Returns the formula key (`name` or the function's).
        The functions are called by compiled code on the CPU."""
        from .custom import CustomPrimitive, c_function
        function = c_function(fn, name, "register_primitive")
        gradient = None
        if fn_grad is not None:
            gradient = c_function(fn_grad, None, "register_primitive(fn_grad=...)")
        if self.device != "cpu":
            raise MithrilError(f"register_primitive: C functions run on device='cpu', and this "
                               f"backend is on {self.device!r}")
        self.primitives[function.name] = CustomPrimitive(function, gradient)
        return function.name

    def _primitive_symbols(self) -> dict[str, int]:
        """The registered C functions' addresses, by name."""
        symbols = {}
        for primitive in self.primitives.values():
            for fn in (primitive.function, primitive.gradient):
                if fn is not None and fn.address is not None:
                    symbols[fn.name] = fn.address
        return symbols

    @property
    def rank(self) -> int:
        """This process's rank in a parallel run (0 without one)."""
        return self._ranks.world_rank if self._ranks else 0

    @property
    def world_size(self) -> int:
        """The number of ranks of a parallel run (1 without one)."""
        return self._ranks.size * self._ranks.tensor_size if self._ranks else 1

    # Mithril's array helpers; they return numpy arrays of the backend dtype.
    def array(self, data, dtype=None) -> np.ndarray:
        """`data` as an array of the backend's precision, keeping its kind
        (integers stay integers, booleans booleans), as the original's."""
        if dtype is None:
            kind = np.asarray(data).dtype.kind
            dtype = (self._int_dtype if kind in "iu" else np.bool_ if kind == "b"
                     else self.dtype)
        return np.ascontiguousarray(np.asarray(data, dtype=dtype))

    def ones(self, *shape, dtype=None) -> np.ndarray:
        return np.ones(_shape(shape), dtype=dtype or self.dtype)

    def zeros(self, *shape, dtype=None) -> np.ndarray:
        return np.zeros(_shape(shape), dtype=dtype or self.dtype)

    def randn(self, *shape, dtype=None) -> np.ndarray:
        return self._rng.standard_normal(_shape(shape)).astype(dtype or self.dtype)

    def rand(self, *shape, dtype=None) -> np.ndarray:
        return self._rng.random(_shape(shape)).astype(dtype or self.dtype)

    def set_seed(self, seed: int) -> None:
        """Seeds randn, rand, randint and rand_uniform."""
        self._rng = np.random.default_rng(seed)

    def randint(self, low: int, high: int, *shape, dtype=None) -> np.ndarray:
        """Integers in [low, high), of the backend's integer width by default."""
        return self._rng.integers(low, high, _shape(shape)).astype(dtype or self._int_dtype)

    def rand_uniform(self, low, high, *shape, dtype=None) -> np.ndarray:
        return self._rng.uniform(low, high, _shape(shape)).astype(dtype or self.dtype)

    def arange(self, *args, dtype=None) -> np.ndarray:
        """numpy's arange; integer bounds give the backend's integers, others
        its floats (the original's rule)."""
        if dtype is None:
            integral = all(isinstance(a, (int, np.integer)) and not isinstance(a, bool)
                           for a in args)
            dtype = self._int_dtype if integral else self.dtype
        return np.arange(*args, dtype=dtype)

    def linspace(self, start, stop, steps: int, dtype=None) -> np.ndarray:
        return np.linspace(start, stop, steps, dtype=dtype or self.dtype)

    def stack(self, arrays, axis: int = 0) -> np.ndarray:
        return np.stack(arrays, axis=axis)

    def cat(self, arrays, axis: int = 0) -> np.ndarray:
        return np.concatenate(arrays, axis=axis)

    concat = cat

    @property
    def _int_dtype(self):
        return np.int64 if self.precision == 64 else np.int32

    @property
    def pi(self) -> float:
        return float(np.pi)

    @property
    def e(self) -> float:
        return float(np.e)

    @property
    def inf(self) -> float:
        return float(np.inf)

    @property
    def precision(self) -> int:
        """Bits of the float type of the terminals (Mithril's backends')."""
        return {"float64": 64, "float32": 32, "float16": 16, "bfloat16": 16}[self.float_name]

    @property
    def emit_float_name(self) -> str:
        """The float type models are built in: float16 and bfloat16 models are
        built in float32 and converted by mithril-mixed-precision."""
        return "float32" if self.float_name in ("float16", "bfloat16") else self.float_name

    def __repr__(self) -> str:
        quantize = f", quantize='{self.quantize}'" if self.quantize else ""
        mesh = f", device_mesh={self.device_mesh!r}" if self.device_mesh is not None else ""
        return f"MlirBackend(dtype={self.float_name}, device='{self.device}'{quantize}{mesh})"


def _shape(shape) -> tuple:
    if len(shape) == 1 and isinstance(shape[0], (list, tuple)):
        return tuple(shape[0])
    return tuple(shape)
