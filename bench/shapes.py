# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""Products of sizes the register tiles do not divide, against numpy's
OpenBLAS, one thread: square sizes that are no power of two, 256 x 512 x N
for narrow and odd N, products whose reduction the vector lanes do not
divide, products of fewer rows than a register tile, and batch products
with odd columns. These were 4-20x slower than their neighbours before the
fifty-third session (a column rest of 28 lanes, a one-column rest on 6-row
tiles, 12-row blocks left unpacked), and products by fewer than 8 columns
1.4-5x and of fewer than 8 rows 3-11x before the fifty-fourth (A read down
its columns; B read 128 bytes a row at a time); the table keeps the class
in sight. Writes bench/shapes.md, or
bench/shapes-avx2.md with --max-isa avx2 (ours compiled for haswell,
OpenBLAS on its Haswell kernels).

    python3 bench/shapes.py [--max-isa avx2] [--quick]
"""

import argparse
import os
import sys
import time


def parse_args():
    parser = argparse.ArgumentParser()
    parser.add_argument("--max-isa", choices=["avx2"],
                        help="ours and OpenBLAS on AVX2 code, into bench/shapes-avx2.md")
    parser.add_argument("--quick", action="store_true", help="fewer shapes")
    parser.add_argument("-o", help="the markdown output")
    return parser.parse_args()


HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from hostinfo import AVX512_HWCAPS, host_description, restart_without_blas_caps  # noqa: E402

# OpenBLAS reads its cap when it loads: the run starts over with it set.
AVX2_ENV = {"OPENBLAS_CORETYPE": "Haswell", "GLIBC_TUNABLES": AVX512_HWCAPS}
if __name__ == "__main__" and parse_args().max_isa == "avx2" and \
        any(os.environ.get(k) != v for k, v in AVX2_ENV.items()):
    os.execve(sys.executable, [sys.executable] + sys.argv, {**os.environ, **AVX2_ENV})
if __name__ == "__main__" and parse_args().max_isa is None:
    restart_without_blas_caps()

import numpy as np  # noqa: E402

import mithril as ml  # noqa: E402
from mithril.models import MatrixMultiply, Model  # noqa: E402

from bench import median_times  # noqa: E402

try:
    from threadpoolctl import threadpool_limits
except ImportError:
    threadpool_limits = None

SQUARES = [1000, 1100, 1500, 2112]
COLUMNS = [1, 3, 7, 9, 12, 17, 20, 28, 33, 47, 65, 100, 129, 257]
BATCHES = [(8, 128, 256, 28), (8, 128, 256, 12), (12, 77, 64, 77)]
# Few columns and a reduction the vector lanes do not divide; fewer rows than
# a register tile (a small batch's x @ w), and a few more (one AVX-512 tile
# of 9 or 10 rows: a 10-class layer swapped, its weight gradient).
ODD_DEPTHS = [(256, 500, 1), (256, 100, 7), (1024, 1000, 1)]
FEW_ROWS = [(1, 1000, 1000), (1, 1024, 1024), (4, 1000, 1000), (7, 512, 784),
            (10, 1000, 1000), (9, 784, 512), (10, 512, 256)]


def shapes(quick):
    """(name, a's shape, b's shape) of every case."""
    out = [(f"sgemm {n}", (n, n), (n, n)) for n in (SQUARES[:2] if quick else SQUARES)]
    out += [(f"256 x 512 x {n}", (256, 512), (512, n)) for n in (COLUMNS[::3] if quick
                                                                 else COLUMNS)]
    out += [(f"{m} x {k} x {n}", (m, k), (k, n))
            for m, k, n in (ODD_DEPTHS[:2] + FEW_ROWS[:2] if quick else ODD_DEPTHS + FEW_ROWS)]
    out += [(f"batch {b} x {m} x {k} x {n}", (b, m, k), (b, k, n)) for b, m, k, n in BATCHES]
    return out


def main():
    args = parse_args()
    target = "haswell" if args.max_isa else None
    if threadpool_limits:
        threadpool_limits(1)
    rng = np.random.default_rng(0)
    rows = []
    for name, a_shape, b_shape in shapes(args.quick):
        a = rng.standard_normal(a_shape).astype(np.float32)
        b = rng.standard_normal(b_shape).astype(np.float32)
        model = Model()
        model |= MatrixMultiply().connect(left="a", right="b", output=ml.IOKey("c"))
        pm = ml.compile(model, ml.MlirBackend(num_threads=1), shapes={"a": a_shape, "b": b_shape},
                        inference=True,
                        cpu_options={"target_cpu": target} if target else None)
        ours = lambda: pm.evaluate({}, {"a": a, "b": b})  # noqa: E731
        reference = a.astype(np.float64) @ b.astype(np.float64)
        err = np.abs(ours()["c"] - reference).max() / np.abs(reference).max()
        if not err < 1e-4:
            sys.exit(f"shapes: {name}: our result is {err:.1e} off numpy's float64 one")
        t_ours, t_numpy = median_times([ours, lambda: a @ b], 5 if args.quick else 15)
        flops = 2 * np.prod(a_shape) * b_shape[-1]
        rows.append((name, t_ours, t_numpy, flops / t_ours / 1e9))
        print(f"{name}: ours {t_ours * 1e3:.3f} ms, numpy {t_numpy * 1e3:.3f} ms, "
              f"{t_numpy / t_ours:.2f}x", flush=True)
    suffix = "-avx2" if args.max_isa else ""
    path = args.o or os.path.join(HERE, f"shapes{suffix}.md")
    lines = [f"# Odd matrix shapes{' (AVX2 code)' if args.max_isa else ''}", "",
             f"Measured by `python3 bench/shapes.py{' --max-isa avx2' if args.max_isa else ''}` "
             f"on {host_description()}, one thread, {time.strftime('%Y-%m-%d %H:%M')}: ours "
             f"(MlirBackend(num_threads=1){', compiled for haswell' if args.max_isa else ''}) "
             "against numpy's OpenBLAS"
             f"{' on its Haswell kernels (OPENBLAS_CORETYPE=Haswell)' if args.max_isa else ''}, "
             "float32, medians of alternating blocks in quiet periods (bench/bench.py's "
             "median_times); a ratio is numpy's time over ours (above 1: we are faster). "
             "Products by fewer than 16 columns read A by rows in vector lanes (a call costs "
             "about 1 us).", "",
             "| case | ours | numpy | numpy / ours | GFLOP/s |", "| --- | --- | --- | --- | --- |"]
    lines += [f"| {name} | {t_ours * 1e3:.3f} ms | {t_numpy * 1e3:.3f} ms | "
              f"{t_numpy / t_ours:.2f}x | {gflops:.0f} |" for name, t_ours, t_numpy, gflops in rows]
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
