# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""Our code for each ISA against OpenBLAS's kernels for the same ISA, on the
host at hand: sgemm 1024 and 2048 (dgemm with --dtype float64), on one thread
(and more with --threads).

Our AVX2 code (`cpu_options={"target_cpu": "haswell"}`: 6 x 16 register
tiles in ymm) runs on any AVX2 host, and OpenBLAS's dynamic-arch builds pick
their Haswell kernels with OPENBLAS_CORETYPE=Haswell, so both ISAs are
measured on one machine. Where the host runs 256-bit FMAs at its 512-bit rate
(AMD Zen 4 double-pumps zmm; Intel AVX-512 cores do not), the AVX2 rows
compare the kernels on equal terms.

    /usr/bin/python3 bench/isa.py [--numpy-python PY] [--rounds 3] [--threads 1,2]
                                  [--dtype float32] [-o FILE]

`--numpy-python` names the interpreter whose numpy links a dynamic-arch
OpenBLAS (the peers' venv's scipy-openblas, say; Debian's numpy uses whatever
libblas.so.3 points to, which may be the reference BLAS). Each measurement
runs in a fresh process pinned to the first N cores (N threads: ours'
num_threads, OpenBLAS's OPENBLAS_NUM_THREADS); the rounds alternate the
candidates and the table gives the best round's median call."""

import argparse
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from hostinfo import host_description  # noqa: E402

SIZES = (1024, 2048)
# (label, our target_cpu or None for numpy, OPENBLAS_CORETYPE)
CANDIDATES = (
    ("ours, host code", "", None),
    ("ours, AVX2 code (haswell)", "haswell", None),
    ("OpenBLAS, its choice", None, ""),
    ("OpenBLAS, Haswell kernels (AVX2)", None, "Haswell"),
)


def measure(kind: str, n: int, calls: int, threads: int, dtype: str) -> None:
    """In a launched process: the median seconds of one n x n product."""
    import numpy as np
    rng = np.random.default_rng(n)
    a = rng.standard_normal((n, n)).astype(dtype)
    b = rng.standard_normal((n, n)).astype(dtype)
    if kind == "numpy":
        run = lambda: a @ b  # noqa: E731
    else:
        import mithril as ml
        from mithril.models import MatrixMultiply, Model
        model = Model()
        model |= MatrixMultiply().connect(left="a", right="b", output=ml.IOKey("c"))
        options = {"target_cpu": kind} if kind != "host" else None
        backend = ml.MlirBackend(num_threads=threads,
                                 dtype=ml.float64 if dtype == "float64" else ml.float32)
        pm = ml.compile(model, backend,
                        shapes={"a": [n, n], "b": [n, n]},
                        inference=True, cpu_options=options)
        run = lambda: pm.evaluate({}, {"a": a, "b": b})["c"]  # noqa: E731
    reference = a.astype(np.float64) @ b.astype(np.float64)
    error = np.linalg.norm(run() - reference) / np.linalg.norm(reference)
    if not error < 1e-5:
        raise SystemExit(f"wrong result: relative error {error:.1e}")
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    times.sort()
    print(times[len(times) // 2])


def launch(python: str, kind: str, n: int, coretype, calls: int, threads: int,
           dtype: str) -> float:
    env = dict(os.environ, OPENBLAS_NUM_THREADS=str(threads), OMP_NUM_THREADS=str(threads))
    env.pop("OPENBLAS_CORETYPE", None)
    if coretype:
        env["OPENBLAS_CORETYPE"] = coretype
    cores = ",".join(str(c) for c in range(threads))
    cmd = ["taskset", "-c", cores, python, os.path.abspath(__file__), "--measure", kind,
           "--size", str(n), "--calls", str(calls), "--threads", str(threads), "--dtype", dtype]
    out = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True).stdout
    return float(out.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--numpy-python", default=sys.executable)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", default="1",
                        help="comma-separated thread counts, one table each (default 1)")
    parser.add_argument("--dtype", default="float32", choices=("float32", "float64"),
                        help="sgemm (float32, the default) or dgemm (float64)")
    parser.add_argument("-o", "--output")
    parser.add_argument("--measure", help=argparse.SUPPRESS)
    parser.add_argument("--size", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--calls", type=int, default=10, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        return measure(args.measure, args.size, args.calls, int(args.threads), args.dtype)
    gemm = "sgemm" if args.dtype == "float32" else "dgemm"
    thread_counts = [int(t) for t in args.threads.split(",")]
    if any(t < 1 or t > (os.cpu_count() or 1) for t in thread_counts):
        sys.exit(f"bench/isa.py: --threads {args.threads}: each count must be 1 to "
                 f"{os.cpu_count()} (this host's CPUs)")
    best = {}
    for _ in range(args.rounds):
        for threads in thread_counts:
            for n in SIZES:
                calls = max(3, 20 * 1024 // n)
                for label, target, coretype in CANDIDATES:
                    if target is None:
                        t = launch(args.numpy_python, "numpy", n, coretype, calls, threads,
                                   args.dtype)
                    else:
                        t = launch(sys.executable, target or "host", n, None, calls, threads,
                                   args.dtype)
                    key = (label, n, threads)
                    best[key] = min(best.get(key, float("inf")), t)
    lines = ["# Our code per ISA against OpenBLAS's kernels for it", "",
             f"Measured by `bench/isa.py` on {host_description()}, "
             f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; the best of "
             f"{args.rounds} alternating rounds of each launch's median call; numpy from "
             f"`{args.numpy_python}`."]
    for threads in thread_counts:
        cores = "core 0" if threads == 1 else f"cores 0-{threads - 1}"
        lines += ["", f"{threads} thread{'s' if threads > 1 else ''} (taskset on {cores}):", "",
                  "| candidate | " + " | ".join(f"{gemm} {n} (ms, GFLOP/s)" for n in SIZES) + " |",
                  "| --- | " + " | ".join("---" for _ in SIZES) + " |"]
        for label, _, _ in CANDIDATES:
            cells = [f"{best[label, n, threads] * 1e3:.2f}, "
                     f"{2 * n ** 3 / best[label, n, threads] / 1e9:.1f}" for n in SIZES]
            lines.append(f"| {label} | " + " | ".join(cells) + " |")
        lines.append("")
        for n in SIZES:
            host = best["OpenBLAS, its choice", n, threads] / best["ours, host code", n, threads]
            avx2 = (best["OpenBLAS, Haswell kernels (AVX2)", n, threads]
                    / best["ours, AVX2 code (haswell)", n, threads])
            lines.append(f"{gemm} {n}, {threads} thread{'s' if threads > 1 else ''}: our host code "
                         f"at {host:.2f}x of OpenBLAS's own choice, our AVX2 code at {avx2:.2f}x "
                         "of its Haswell kernels (above 1: faster).")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.output:
        with open(args.output, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
