# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""Memory does not grow: 10^4 evaluations, outputs and gradients, and the
error paths of a run (indices out of range, a buffer that cannot be
allocated), each after a warm-up. bench/soak.py measures the long runs."""

import os

import numpy as np
import pytest

import mithril as ml
from mithril.models import Embedding, Linear, MatrixMultiply, Model, Relu, Sum

# Resident memory stays flat (0 measured); a leak of 1 KiB per run, written
# to, shows as 4 MiB over 10^4 runs even after it first fills the heap's free
# space.
GROWTH_LIMIT_MIB = 2.0

# Under AddressSanitizer (make sanitize preloads its runtime) freed blocks sit
# in a quarantine of up to 256 MiB, so resident memory grows by design; leaks
# are LeakSanitizer's to find there.
pytestmark = pytest.mark.skipif("asan" in os.environ.get("LD_PRELOAD", ""),
                                reason="resident memory is not flat under AddressSanitizer")


def rss_mib():
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    pytest.skip("no /proc/self/status")


def growth(run, count, warmup=200):
    for _ in range(warmup):
        run()
    before = rss_mib()
    for _ in range(count):
        run()
    return rss_mib() - before


def test_evaluations_do_not_grow_memory():
    model = Model()
    model |= Linear(dimension=32)
    model += Relu()
    model += Linear(dimension=10).connect(output="output")
    pm = ml.compile(model, ml.MlirBackend(dtype=ml.float32), shapes={"input": [8, 16]})
    params = pm.randomize_params(seed=0)
    data = {"input": np.random.default_rng(0).standard_normal((8, 16)).astype(np.float32)}
    seed = {"output": np.ones((8, 10), np.float32)}
    first, first_grads = pm.evaluate(params, data, output_gradients=seed)

    def run():
        outputs, grads = pm.evaluate(params, data, output_gradients=seed)
        assert np.array_equal(outputs["output"], first["output"])

    assert growth(run, 10_000) < GROWTH_LIMIT_MIB


def test_run_errors_do_not_grow_memory():
    model = Model()
    model |= Embedding(num_embeddings=5, dim=3).connect(input="input", output="output")
    lookup = ml.compile(model, ml.MlirBackend(dtype=ml.float32), shapes={"input": [4]},
                        inference=True)
    params = lookup.randomize_params()
    bad = {"input": np.array([0, 7, 1, 2])}

    n = 10**7
    huge = Model()
    huge |= MatrixMultiply().connect(left="input", right="b", output="p")
    huge |= Sum().connect(input="p", output="output")
    outer = ml.compile(huge, ml.MlirBackend(dtype=ml.float32, num_threads=1),
                       shapes={"input": [n, 1], "b": [1, n]}, inference=True)
    vectors = {"input": np.ones((n, 1), np.float32), "b": np.ones((1, n), np.float32)}

    def run_index_error():
        with pytest.raises(ml.MithrilError):
            lookup.evaluate(params, bad)

    def run_out_of_memory():
        with pytest.raises(MemoryError):
            outer.evaluate({}, vectors)

    assert growth(run_index_error, 10_000) < GROWTH_LIMIT_MIB
    assert growth(run_out_of_memory, 1_000, warmup=20) < GROWTH_LIMIT_MIB
