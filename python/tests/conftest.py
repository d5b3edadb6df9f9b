# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
import numpy as np
import pytest

import mithril as ml


@pytest.fixture
def backend64():
    return ml.MlirBackend(dtype=ml.float64)


@pytest.fixture
def backend32():
    return ml.MlirBackend(dtype=ml.float32)


@pytest.fixture
def rng():
    return np.random.default_rng(1234)
