# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""Arrays NumPy allocates after `import mithril` are 64-byte aligned (the
compiled kernels' 512-bit loads), and behave as NumPy's own otherwise."""

import os
import subprocess
import sys

import numpy as np
import pytest

import mithril as ml
from mithril.models import Linear, Model


def handler_name():
    core = getattr(np, "_core", None) or np.core
    return core.multiarray.get_handler_name()


def test_new_arrays_are_64_byte_aligned():
    assert handler_name() == "mithril_aligned_64"
    for n in (0, 1, 3, 17, 1000, 1 << 20):
        for make in (np.empty, np.zeros, np.ones):
            assert make(n, np.float32).ctypes.data % 64 == 0, (make, n)
    rng = np.random.default_rng(0)
    assert rng.standard_normal((513, 784)).astype(np.float32).ctypes.data % 64 == 0
    assert np.concatenate([np.arange(7.0)] * 9).ctypes.data % 64 == 0


def test_resized_arrays_keep_their_values_and_alignment():
    # The block may move, and the data with it to a new aligned offset: a
    # wrong order of moving once overwrote the fourth element.
    rng = np.random.default_rng(3)
    a = np.arange(100, dtype=np.float64)
    kept = 100
    for size in list(rng.integers(1, 5000, 200)) + [100000, 10, 3]:
        a.resize(int(size), refcheck=False)
        assert a.ctypes.data % 64 == 0
        kept = min(kept, int(size))
        np.testing.assert_array_equal(a[:kept], np.arange(kept))
    z = np.zeros(1 << 22)  # calloc'd: zeros without touching every page first
    assert z.ctypes.data % 64 == 0 and not z.any()


def test_outputs_and_parameters_are_aligned():
    model = Model()
    model |= Linear(16)(input="input", output=ml.IOKey("output"))
    pm = ml.compile(model, ml.MlirBackend(), shapes={"input": [4, 8]})
    params = pm.randomize_params(seed=0)
    assert all(v.ctypes.data % 64 == 0 for v in params.values())
    x = np.random.default_rng(1).standard_normal((4, 8)).astype(np.float32)
    out = pm.evaluate(params, {"input": x})["output"]
    assert out.ctypes.data % 64 == 0
    want = x @ params["weight" if "weight" in params else "linear_0.weight"].T
    np.testing.assert_allclose(out - want, np.broadcast_to(
        params["bias" if "bias" in params else "linear_0.bias"], out.shape), atol=1e-5)


@pytest.mark.parametrize("value", ["0", "off"])
def test_the_switch_keeps_numpys_allocator(value):
    code = ("import numpy as np, mithril; core = getattr(np, '_core', None) or np.core; "
            "print(core.multiarray.get_handler_name())")
    env = dict(os.environ, MITHRIL_NUMPY_ALIGN=value)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "default_allocator"


def vm_flags_at(address):
    """The VmFlags of the mapping of this process that holds `address`."""
    inside = False
    with open("/proc/self/smaps") as smaps:
        for line in smaps:
            head = line.split(" ", 1)[0]
            if "-" in head and ":" not in head:
                start, end = (int(x, 16) for x in head.split("-"))
                inside = start <= address < end
            elif inside and line.startswith("VmFlags:"):
                return line.split()[1:]
    return []


@pytest.mark.skipif(not os.path.exists("/sys/kernel/mm/transparent_hugepage/enabled"),
                    reason="no transparent huge pages (not Linux, or THP not built in)")
def test_large_arrays_ask_for_huge_pages():
    # As NumPy's own allocator: a product over large matrices on 4 KiB pages
    # waits on page walks (dgemm 2048 11% slower on an Intel Xeon core).
    for make in (np.empty, np.zeros):
        big = make((1024, 1024), np.float64)
        assert big.ctypes.data % 64 == 0
        assert "hg" in vm_flags_at(big.ctypes.data + big.nbytes // 2), make
    big.resize((2048, 1024), refcheck=False)
    assert "hg" in vm_flags_at(big.ctypes.data + big.nbytes // 2)
