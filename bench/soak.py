"""Soak test: evaluate one compiled model many times and compile many models
in one process, recording resident memory (RSS) and checking that results
stay bit-identical. Figures go to docs/reliability.md.

    PYTHONPATH=build/python_packages python3 bench/soak.py [--evals N] [--compiles M]
"""
import argparse
import resource
import time

import numpy as np

import mithril as ml
from mithril.models import Linear, Model, Relu


def rss_mib():
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def mlp(hidden):
    model = Model()
    model |= Linear(dimension=hidden)
    model += Relu()
    model += Linear(dimension=10).connect(output="output")
    return model


def soak_evaluate(evals):
    backend = ml.MlirBackend(dtype=ml.float32)
    pm = ml.compile(mlp(64), backend, shapes={"input": [16, 32]})
    params = pm.randomize_params(seed=0)
    data = {"input": np.random.default_rng(0).standard_normal((16, 32)).astype(np.float32)}
    seed = {"output": np.ones((16, 10), np.float32)}
    reference, reference_grads = pm.evaluate(params, data, output_gradients=seed)
    samples = []
    start = time.perf_counter()
    for i in range(evals):
        outputs, grads = pm.evaluate(params, data, output_gradients=seed)
        if i % max(1, evals // 10) == 0 or i == evals - 1:
            samples.append((i + 1, rss_mib()))
            if not np.array_equal(outputs["output"], reference["output"]) or any(
                    not np.array_equal(grads[k], reference_grads[k]) for k in reference_grads):
                raise SystemExit(f"evaluation {i + 1} differs from the first")
    elapsed = time.perf_counter() - start
    return samples, elapsed


def soak_compile(compiles):
    backend = ml.MlirBackend(dtype=ml.float32)
    data = {"input": np.ones((4, 8), np.float32)}
    reference = None
    samples = []
    start = time.perf_counter()
    for i in range(compiles):
        pm = ml.compile(mlp(16), backend, shapes={"input": [4, 8]})
        outputs = pm.evaluate(pm.randomize_params(seed=1), data)
        if reference is None:
            reference = outputs["output"].copy()
        elif not np.array_equal(outputs["output"], reference):
            raise SystemExit(f"compile {i + 1} gives a different result")
        del pm
        if i % max(1, compiles // 10) == 0 or i == compiles - 1:
            samples.append((i + 1, rss_mib()))
    elapsed = time.perf_counter() - start
    return samples, elapsed


def report(title, samples, elapsed):
    print(f"{title}: {samples[-1][0]} iterations in {elapsed:.1f} s")
    for count, rss in samples:
        print(f"  after {count:>7}: RSS {rss:8.1f} MiB")
    growth = samples[-1][1] - samples[1][1] if len(samples) > 1 else 0.0
    print(f"  growth after warm-up: {growth:+.1f} MiB")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--evals", type=int, default=100000)
    parser.add_argument("--compiles", type=int, default=1000)
    args = parser.parse_args()
    report("evaluate with gradients", *soak_evaluate(args.evals))
    report("compile + evaluate", *soak_compile(args.compiles))


if __name__ == "__main__":
    main()
