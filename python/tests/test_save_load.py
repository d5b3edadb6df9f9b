# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""PhysicalModel.save and PhysicalModel.load: the compiled code comes back
without compiling, with the parameters, and gives the same numbers."""

import zipfile

import numpy as np
import pytest

import mithril as ml
from mithril.framework.physical import PhysicalModel
from mithril.models import Linear, Model, Relu


def mlp():
    model = Model()
    model |= Linear(8)(input="input")
    model += Relu()
    model += Linear(3)(output="output")
    return model


@pytest.mark.parametrize("shape", [[4, 5], [None, 5]])
def test_saved_model_runs_without_compiling(tmp_path, shape):
    backend = ml.MlirBackend(dtype=ml.float64)
    pm = ml.compile(mlp(), backend, shapes={"input": shape})
    x = np.random.default_rng(0).standard_normal((4, 5))
    y = pm(x)  # draws the parameters that are saved with it
    path = tmp_path / "my_model.mithril"
    pm.save(path)
    loaded = PhysicalModel.load(path, backend)
    # Loaded, not compiled: the only phase is loading the object code.
    assert [name for name, *_ in loaded._forward.stages] == ["load object code"]
    np.testing.assert_array_equal(loaded(x), y)
    assert set(loaded.params) == set(pm.trainable_keys)
    assert loaded.get_shapes() == pm.get_shapes()
    if shape[0] is None:
        np.testing.assert_array_equal(loaded(x[:2]), pm(x[:2]))
    # Gradients compile from the saved logical model when asked for.
    seed = {"output": np.ones((4, 3))}
    _, g1 = pm.evaluate(loaded.params, {"input": x}, output_gradients=seed)
    _, g2 = loaded.evaluate(loaded.params, {"input": x}, output_gradients=seed)
    for k in g1:
        np.testing.assert_array_equal(g1[k], g2[k])


def test_a_fresh_process_loads_a_saved_model(tmp_path):
    """Loading is the first thing that process does with the compiler (the
    JIT's host target was set up only by compiling, once)."""
    import os
    import subprocess
    import sys
    from pathlib import Path
    pm = ml.compile(mlp(), ml.MlirBackend(dtype=ml.float64), shapes={"input": [4, 5]})
    x = np.random.default_rng(0).standard_normal((4, 5))
    y = pm(x)
    pm.save(tmp_path / "m.mithril")
    np.save(tmp_path / "x.npy", x)
    script = ("import sys, numpy as np, mithril as ml\n"
              "from mithril.framework.physical import PhysicalModel\n"
              "pm = PhysicalModel.load(sys.argv[1], ml.MlirBackend(dtype=ml.float64))\n"
              "np.save(sys.argv[3], pm(np.load(sys.argv[2])))\n")
    root = Path(__file__).resolve().parents[2]
    result = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "m.mithril"), str(tmp_path / "x.npy"),
         str(tmp_path / "y.npy")], env=dict(os.environ, PYTHONPATH=str(root / "python")),
        capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    np.testing.assert_array_equal(np.load(tmp_path / "y.npy"), y)


def test_save_with_params_and_bad_files(tmp_path):
    backend = ml.MlirBackend()
    pm = ml.compile(mlp(), backend, shapes={"input": [2, 5]})
    params = pm.randomize_params(seed=4)
    path = tmp_path / "m.mithril"
    pm.save(path, params)
    loaded = PhysicalModel.load(path, backend)
    x = np.ones((2, 5), np.float32)
    np.testing.assert_array_equal(loaded.evaluate(loaded.params, {"input": x})["output"],
                                  pm.evaluate(params, {"input": x})["output"])
    with pytest.raises(ml.MithrilError, match="compiled for float32"):
        PhysicalModel.load(path, ml.MlirBackend(dtype=ml.float64))
    (tmp_path / "junk.mithril").write_bytes(b"not a zip")
    with pytest.raises(ml.MithrilError, match="not a saved mithril physical model"):
        PhysicalModel.load(tmp_path / "junk.mithril", backend)
    with pytest.raises(ml.MithrilError, match="not a saved mithril physical model"):
        PhysicalModel.load(tmp_path / "missing.mithril", backend)


def test_code_for_another_cpu_is_compiled_again(tmp_path):
    backend = ml.MlirBackend()
    pm = ml.compile(mlp(), backend, shapes={"input": [2, 5]})
    path = tmp_path / "m.mithril"
    pm.save(path, pm.randomize_params(seed=1))
    # As if saved on a CPU with a feature this host lacks.
    other = tmp_path / "other.mithril"
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(other, "w") as dst:
        for name in src.namelist():
            data = src.read(name)
            if name == "meta.json":
                data = data.replace(b'"cpu": "', b'"cpu": "future-cpu:+avx10.99,', 1)
            dst.writestr(name, data)
    with pytest.warns(UserWarning, match="lacks avx10.99.*compiling it again"):
        loaded = PhysicalModel.load(other, backend)
    x = np.ones((2, 5), np.float32)
    np.testing.assert_array_equal(loaded(x), pm.evaluate(loaded.params, {"input": x})["output"])
