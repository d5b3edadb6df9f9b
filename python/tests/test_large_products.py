# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""A product whose result is larger than the L2 cache, its reduction in more
than one block: each register tile reads its accumulators back from the
result, and mithril-prefetch-accumulators prefetches the next tile's while
this one computes. The numbers against numpy in float64, on one and two
threads, with the host's kernels and AVX2's (whose 6-row tiles leave a
remainder of these rows); the last tile of each loop prefetches itself."""

import numpy as np
import pytest

import mithril as ml
from mithril.models import MatrixMultiply, Model

# 1000 x 640 float32 results: 2.4 MiB, above a 2 MiB L2; 1536-deep products.
ROWS, DEPTH, COLUMNS = 1000, 1536, 640


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("target", ["host", "haswell"])
def test_product_larger_than_l2(threads, target):
    rng = np.random.default_rng(7)
    a = rng.standard_normal((ROWS, DEPTH)).astype(np.float32)
    b = rng.standard_normal((DEPTH, COLUMNS)).astype(np.float32)
    model = Model()
    model |= MatrixMultiply().connect(left="a", right="b", output=ml.IOKey("c"))
    pm = ml.compile(model, ml.MlirBackend(num_threads=threads),
                    shapes={"a": [ROWS, DEPTH], "b": [DEPTH, COLUMNS]}, inference=True,
                    cpu_options=None if target == "host" else {"target_cpu": target})
    c = pm.evaluate({}, {"a": a, "b": b})["c"]
    reference = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(c, reference, rtol=0, atol=2e-4 * np.abs(reference).max())
