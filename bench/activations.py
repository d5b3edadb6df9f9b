#!/usr/bin/python3
# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""Transcendental activations in float32, one thread: ours with the vector
polynomials of mithril-approximate-math (the default), ours with libm's exp
and tanh (optimizations={"approximate_math": False}), torch and numpy, on
the same arrays in one process, interleaved; medians, and each one's time
over ours. The table names the host CPU.

    /usr/bin/python3 bench/activations.py [--rows 256] [--cols 1024] [-o bench/activations.md]
"""

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
import numpy as np  # noqa: E402
import torch  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import mithril as ml  # noqa: E402
from hostinfo import host_description  # noqa: E402
from mithril.models import Gelu, IOKey, Model, Sigmoid, Softmax, Softplus, Tanh  # noqa: E402

torch.set_num_threads(1)

CASES = {
    "sigmoid": (Sigmoid, torch.sigmoid, lambda x: 1 / (1 + np.exp(-x))),
    "tanh": (Tanh, torch.tanh, np.tanh),
    "softmax (rows)": (lambda: Softmax(axis=-1), lambda t: torch.softmax(t, -1),
                       lambda x: np.exp(x - x.max(-1, keepdims=True)) /
                       np.exp(x - x.max(-1, keepdims=True)).sum(-1, keepdims=True)),
    "softplus": (Softplus, torch.nn.functional.softplus, lambda x: np.logaddexp(0, x)),
    "gelu (tanh form)": (lambda: Gelu(approximate=True),
                         lambda t: torch.nn.functional.gelu(t, approximate="tanh"), None),
    "gelu (erf)": (Gelu, torch.nn.functional.gelu, None),
}


def timed(fn, repeats: int) -> float:
    fn()
    start = time.perf_counter()
    for _ in range(repeats):
        fn()
    return (time.perf_counter() - start) / repeats


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=256)
    p.add_argument("--cols", type=int, default=1024)
    p.add_argument("--blocks", type=int, default=7)
    p.add_argument("-o", "--output")
    args = p.parse_args()
    shape = [args.rows, args.cols]
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32) * 3
    tx = torch.from_numpy(x)
    lines = [f"Float32 activations on [{args.rows}, {args.cols}], one thread, "
             f"{host_description()}; medians of {args.blocks} interleaved blocks, in microseconds; "
             "ratios are each one's time over ours (above 1: we are faster).", "",
             "| op | ours | ours, libm | torch | numpy | libm / ours | torch / ours | "
             "numpy / ours |", "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for name, (model_cls, torch_fn, numpy_fn) in CASES.items():
        runs = {}
        for on in (True, False):
            model = Model()
            model |= model_cls()(input="input", output=IOKey("output"))
            pm = ml.compile(model, ml.MlirBackend(num_threads=1), shapes={"input": shape},
                            optimizations={"approximate_math": on}, inference=True)
            runs["ours" if on else "libm"] = lambda pm=pm: pm.evaluate({}, {"input": x})
        runs["torch"] = lambda: torch_fn(tx)
        if numpy_fn is not None:
            runs["numpy"] = lambda: numpy_fn(x)
        ref = torch_fn(tx.double()).numpy()
        err = float(np.abs(runs["ours"]()["output"] - ref).max())
        repeats = max(1, int(0.05 / timed(runs["ours"], 3)))
        samples = {k: [] for k in runs}
        for _ in range(args.blocks):
            for key, fn in runs.items():
                samples[key].append(timed(fn, repeats))
        med = {k: statistics.median(v) * 1e6 for k, v in samples.items()}
        ours = med["ours"]
        numpy_cell = f"{med['numpy']:.0f}" if "numpy" in med else "-"
        numpy_ratio = f"{med['numpy'] / ours:.2f}" if "numpy" in med else "-"
        lines.append(f"| {name} | {ours:.0f} | {med['libm']:.0f} | {med['torch']:.0f} | "
                     f"{numpy_cell} | {med['libm'] / ours:.2f} | {med['torch'] / ours:.2f} | "
                     f"{numpy_ratio} |")
        print(lines[-1], f"(max error vs float64 torch {err:.1e})", flush=True)
    text = "\n".join(lines) + "\n"
    if args.output:
        Path(args.output).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
