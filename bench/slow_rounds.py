# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""Our float32 product against numpy's OpenBLAS, split by the host's quiet
and slow rounds.

The VMs this project is measured on have periods in which every workload
runs 1.3-2x slower (bench/hostinfo.py's speed probe tells them apart). A
kernel that loses more than OpenBLAS in them loses cells of `make bench` and
of the peer table whenever a cell falls in one. This script runs rounds of
alternating blocks (0.2 s each) of ours and numpy for `--seconds`, times the
speed probe before and after each round, and prints numpy / ours (above 1:
we are faster) over the quiet rounds (probe within 15% of its fastest) and
over the slow ones (above 1.3x), per variant of ours. A variant is a list of
environment settings read when compiling (`NAME=value,NAME=value`; `X=0`:
none).

    PYTHONPATH=build/python_packages OPENBLAS_NUM_THREADS=1 \\
      OPENBLAS_CORETYPE=Haswell taskset -c 0 /usr/bin/python3 \\
      bench/slow_rounds.py --shape 1024x1024x1024 --target-cpu haswell
"""

import argparse
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hostinfo import quiet_limit, speed_probe  # noqa: E402

import mithril as ml  # noqa: E402
from mithril.models import MatrixMultiply, Model  # noqa: E402

BLOCK_S = 0.2
SLOW_FACTOR = 1.3


def compile_variant(setting: str, shape, target_cpu: str, threads: int, dtype: str):
    """Our product compiled with `setting`'s environment (restored after)."""
    rows, depth, columns = shape
    saved = dict(os.environ)
    try:
        for pair in setting.split(","):
            name, value = pair.split("=", 1)
            if name != "X":
                os.environ[name] = value
        model = Model()
        model |= MatrixMultiply().connect(left="a", right="b", output=ml.IOKey("c"))
        backend = ml.MlirBackend(num_threads=threads, dtype=getattr(ml, dtype))
        return ml.compile(model, backend,
                          shapes={"a": [rows, depth], "b": [depth, columns]}, inference=True,
                          cpu_options=None if target_cpu == "host" else {"target_cpu": target_cpu})
    finally:
        os.environ.clear()
        os.environ.update(saved)


def block_median(call) -> float:
    times = []
    start = time.perf_counter()
    while time.perf_counter() - start < BLOCK_S:
        t0 = time.perf_counter()
        call()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shape", default="1024x1024x1024", help="rows x depth x columns")
    parser.add_argument("--target-cpu", default="haswell", help="ours' target CPU, or host")
    parser.add_argument("--seconds", type=float, default=120)
    parser.add_argument("--threads", type=int, default=1,
                        help="ours' threads (set numpy's with OPENBLAS_NUM_THREADS and pin both "
                             "with taskset)")
    parser.add_argument("--dtype", default="float32", choices=["float32", "float64"])
    parser.add_argument("variants", nargs="*", default=["X=0"])
    args = parser.parse_args()
    shape = [int(x) for x in args.shape.split("x")]
    if len(shape) != 3 or min(shape) <= 0:
        raise SystemExit(f"--shape: three positive sizes as RxDxC, not {args.shape!r}")
    rng = np.random.default_rng(0)
    a = rng.standard_normal(shape[:2]).astype(args.dtype)
    b = rng.standard_normal(shape[1:]).astype(args.dtype)
    reference = a.astype(np.float64) @ b.astype(np.float64)
    calls = []
    for setting in args.variants:
        pm = compile_variant(setting, shape, args.target_cpu, args.threads, args.dtype)
        call = (lambda pm: lambda: pm.evaluate({}, {"a": a, "b": b})["c"])(pm)
        error = np.linalg.norm(call() - reference) / np.linalg.norm(reference)
        if not error < 1e-5:
            raise SystemExit(f"{setting}: wrong result, relative error {error:.1e}")
        calls.append(call)
    calls.append(lambda: a @ b)  # numpy, last
    probes, rounds = [], []
    end = time.time() + args.seconds
    while time.time() < end:
        before = speed_probe()
        medians = [block_median(call) for call in calls]
        after = speed_probe()
        probes += [before, after]
        rounds.append((max(before, after), medians))
    quiet = quiet_limit(probes)
    slow = SLOW_FACTOR * min(probes)
    quiet_rounds = [m for p, m in rounds if p <= quiet]
    slow_rounds = [m for p, m in rounds if p > slow]
    print(f"{args.dtype} {args.shape}, ours for {args.target_cpu} on {args.threads} "
          f"thread(s): {len(rounds)} rounds, "
          f"{len(quiet_rounds)} quiet, {len(slow_rounds)} slow")

    def ratio(selected, i):
        if not selected:
            return "-"
        return f"{statistics.median(m[-1] / m[i] for m in selected):.3f}x"

    for i, setting in enumerate(args.variants):
        best = min(m[i] for _, m in rounds)
        print(f"{setting}: best block {best * 1e3:.3f} ms; numpy / ours quiet "
              f"{ratio(quiet_rounds, i)}, slow {ratio(slow_rounds, i)}, "
              f"all {ratio([m for _, m in rounds], i)}")


if __name__ == "__main__":
    main()
