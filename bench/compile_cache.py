#!/usr/bin/python3
# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""Compile time cold and warm: each case's compile up to its first result (from
building the model, after the imports, as bench/peers.py counts it) in a
fresh process, first with an empty persistent compile cache, then in a second
process with the cache the first one filled (as JAX's and torch inductor's
caches serve a second run). One thread; the table names the host CPU.

    /usr/bin/python3 bench/compile_cache.py [--runs 3] [-o bench/compile_cache.md]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CASES = {
    "mlp16": "MLP 784-512-512-10 inference, batch 16",
    "mlptrain64": "MLP 784-512-512-10 training step (SGD), batch 64",
    "cnn16": "bench CNN forward, batch 16",
    "cnntrain16": "bench CNN training step (SGD), batch 16",
}

WORKER = r"""
import sys, time
import numpy as np
import mithril as ml
from mithril import models
sys.path.insert(0, sys.argv[2])
import bench
start = time.perf_counter()  # after the imports, as bench/peers.py counts
case = sys.argv[1]
backend = ml.MlirBackend(num_threads=1)
rng = np.random.default_rng(0)
cnn = case.startswith("cnn")
net = bench.cnn() if cnn else bench.mlp()
batch = 16 if case in ("mlp16", "cnn16", "cnntrain16") else 64
shape = [batch, 1, 28, 28] if cnn else [batch, 784]
x = rng.standard_normal(shape).astype(np.float32)
if "train" in case:
    train = models.TrainModel(net)
    train.add_loss(models.CrossEntropy(), reduce_steps=[models.Mean()], input="logits",
                   target="target")
    pm = ml.compile(train, backend, shapes={"input": shape, "target": [batch]})
    params = pm.randomize_params(seed=0)
    data = {"input": x, "target": rng.integers(0, 10, batch)}
    pm.train_step(params, data, ml.SGD(lr=0.01))
else:
    pm = ml.compile(net, backend, shapes={"input": shape}, inference=True)
    pm.evaluate(pm.randomize_params(seed=0), {"input": x})
print("RESULT", time.perf_counter() - start, flush=True)
"""


def first_result_seconds(case: str, cache: str) -> float:
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python"), MITHRIL_CACHE_DIR=cache,
               OMP_NUM_THREADS="1")
    env.pop("MITHRIL_CACHE", None)
    out = subprocess.run(["taskset", "-c", "0", sys.executable, "-c", WORKER, case,
                          str(ROOT / "bench")], env=env, capture_output=True, text=True,
                         check=True, timeout=600).stdout
    return float(out.split("RESULT")[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="cold/warm pairs per case")
    parser.add_argument("-o", "--output", help="also write the table here (markdown)")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT / "bench"))
    sys.path.insert(0, str(ROOT / "python"))
    from hostinfo import host_cpu
    from mithril import _mithril
    host = f"{host_cpu()} (LLVM {_mithril.host_cpu().split(':')[0]})"
    rows = []
    for case, title in CASES.items():
        cold, warm = [], []
        for _ in range(args.runs):
            with tempfile.TemporaryDirectory(prefix="mithril-cache-") as cache:
                cold.append(first_result_seconds(case, cache))
                warm.append(first_result_seconds(case, cache))
        rows.append((title, statistics.median(cold), statistics.median(warm)))
        print(json.dumps({"case": case, "cold_s": cold, "warm_s": warm}), flush=True)
    lines = [f"Host: {host}. Compile up to the first result (building the model "
             "included, Python's start and imports not), each in a fresh process, 1 thread, "
             "median of "
             f"{args.runs}; warm: a second process with the persistent compile cache the "
             "first one filled.", "",
             "| case | cold | warm | cold / warm |", "| --- | --- | --- | --- |"]
    lines += [f"| {t} | {c:.2f} s | {w:.2f} s | {c / w:.1f}x |" for t, c, w in rows]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.output:
        Path(args.output).write_text(text)


if __name__ == "__main__":
    main()
