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


def pytest_addoption(parser):
    parser.addoption(
        "--target-cpu", default="",
        help="compile every model for this x86-64 CPU unless the test names one (haswell: the "
             "AVX2 code, on any host that runs it); tests of the host's own code are skipped")


def pytest_configure(config):
    config.addinivalue_line("markers", "host_code: the test checks the code compiled for this "
                                       "host (skipped under --target-cpu)")
    cpu = config.getoption("--target-cpu")
    if not cpu:
        return
    from mithril import options
    # A CPU LLVM knows, whose code this host runs: one small model says both.
    from mithril.models import Linear, Model
    probe = Model()
    probe |= Linear(2)(input="input", output="output")
    try:
        ml.compile(probe, ml.MlirBackend(), shapes={"input": [1, 2]},
                   cpu_options={"target_cpu": cpu})
    except ml.MithrilError as error:
        raise pytest.UsageError(f"--target-cpu={cpu}: {error}") from None
    # The default of every compile's controls; cpu_options={"target_cpu": ...}
    # in a test still wins.
    init = options.CompileControls.__init__

    def init_for_target(self, *args, **kwargs):
        kwargs.setdefault("target_cpu", cpu)
        init(self, *args, **kwargs)

    options.CompileControls.__init__ = init_for_target


def pytest_collection_modifyitems(config, items):
    if not config.getoption("--target-cpu"):
        return
    skip = pytest.mark.skip(reason="checks the host's own code (--target-cpu given)")
    for item in items:
        if "host_code" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def backend64():
    return ml.MlirBackend(dtype=ml.float64)


@pytest.fixture
def backend32():
    return ml.MlirBackend(dtype=ml.float32)


@pytest.fixture
def rng():
    return np.random.default_rng(1234)
