# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""The memory controls on a deep MLP's gradients: the peak bytes of the
temporaries (ml.max_memory_allocated) and the time of a forward and backward
call, for each control, as ratios to memory_planning=False.

    /usr/bin/python3 bench/memory.py [--depth 16 --width 512 --batch 256]
"""

import argparse
import os
import sys
import time

import numpy as np

from hostinfo import host_cpu

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "python"))
import mithril as ml  # noqa: E402
from mithril.models import Linear, Model, Relu  # noqa: E402

CONTROLS = [
    ("memory_planning=False", {"memory_planning": False}),
    ("default (memory planning)", {}),
    ("gradient_checkpointing, 2 segments", {"gradient_checkpointing": True,
                                            "checkpoint_segments": 2}),
    ("gradient_checkpointing, 4 segments", {"gradient_checkpointing": True}),
    ("gradient_checkpointing, 8 segments", {"gradient_checkpointing": True,
                                            "checkpoint_segments": 8}),
]


def mlp(depth: int, width: int) -> Model:
    model = Model()
    model |= Linear(width)(input="input")
    for _ in range(depth - 1):
        model += Relu()
        model += Linear(width)
    model += Relu()(output="output")
    return model


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--depth", type=int, default=16)
    parser.add_argument("--width", type=int, default=512)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args()
    x = np.random.default_rng(0).standard_normal((args.batch, args.width)).astype(np.float32)
    seed = np.ones((args.batch, args.width), np.float32)
    params, reference, rows = None, None, []
    for name, controls in CONTROLS:
        pm = ml.compile(mlp(args.depth, args.width), ml.MlirBackend(num_threads=1),
                        shapes={"input": [args.batch, args.width]}, **controls)
        params = params or pm.randomize_params(seed=0)

        def call():
            return pm.evaluate(params, {"input": x}, output_gradients={"output": seed})[1]

        grads = call()
        ml.reset_peak_memory_stats()
        grads = call()
        peak = ml.max_memory_allocated()
        times = []
        for _ in range(args.repeats):
            start = time.perf_counter()
            call()
            times.append(time.perf_counter() - start)
        same = reference is None or all(np.array_equal(grads[k], reference[k]) for k in grads)
        reference = reference or grads
        rows.append((name, peak, float(np.median(times)), same))
    base_peak, base_time = rows[0][1], rows[0][2]
    print(f"Deep MLP gradients: {args.depth} x Linear({args.width}) + Relu, batch {args.batch}, "
          f"float32, 1 thread; {host_cpu()}, {time.strftime('%Y-%m-%d')}")
    print()
    print("| controls | peak temporaries | vs planning off | time per call | vs planning off "
          "| gradients |")
    print("| --- | --- | --- | --- | --- | --- |")
    for name, peak, t, same in rows:
        print(f"| {name} | {peak / 2**20:.1f} MiB | {peak / base_peak:.2f}x | {t * 1e3:.1f} ms | "
              f"{t / base_time:.2f}x | {'identical' if same else 'DIFFER'} |")


if __name__ == "__main__":
    main()
