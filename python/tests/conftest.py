# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
import os

# Every test compiles (the persistent compile cache would make a later test
# load an earlier one's code, and show other stages); test_compile_cache.py
# turns it on for the processes it starts.
os.environ["MITHRIL_CACHE"] = "0"

import numpy as np  # noqa: E402
import pytest  # noqa: E402

import mithril as ml  # noqa: E402


@pytest.fixture
def backend64():
    return ml.MlirBackend(dtype=ml.float64)


@pytest.fixture
def backend32():
    return ml.MlirBackend(dtype=ml.float32)


@pytest.fixture
def rng():
    return np.random.default_rng(1234)
