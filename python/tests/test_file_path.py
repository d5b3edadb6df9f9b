# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""ml.compile(file_path=...): what it writes follows the extension."""

import importlib.util
import sys

import numpy as np
import pytest

import mithril as ml
from mithril.models import Linear, Model, Relu


def mlp():
    model = Model()
    model |= Linear(6)(input="input")
    model += Relu()
    model += Linear(2)(output="output")
    return model


def test_python_module_loads_the_compiled_model(tmp_path):
    path = tmp_path / "generated_model.py"
    pm = ml.compile(mlp(), ml.MlirBackend(dtype=ml.float64), shapes={"input": [3, 4]},
                    file_path=str(path))
    assert (tmp_path / "generated_model.mithril").exists()
    spec = importlib.util.spec_from_file_location("generated_model", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["generated_model"] = module
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules["generated_model"]
    # Loaded from the saved object code, not compiled again.
    assert [name for name, *_ in module.model.stages] == ["load object code"]
    assert module.params is None  # nothing drawn before compile returned
    params = pm.randomize_params(seed=2)
    x = np.random.default_rng(0).standard_normal((3, 4))
    np.testing.assert_array_equal(module.evaluate(params, {"input": x})["output"],
                                  pm.evaluate(params, {"input": x})["output"])


def test_object_file_header_and_ir(tmp_path):
    ml.compile(mlp(), ml.MlirBackend(), shapes={"input": [3, 4]}, file_path=str(tmp_path / "m.o"))
    assert (tmp_path / "m.o").read_bytes()[:4] == b"\x7fELF"
    ml.compile(mlp(), ml.MlirBackend(), shapes={"input": [3, 4]}, file_path=str(tmp_path / "m.h"))
    header = (tmp_path / "m.h").read_text()
    assert "void _mlir_ciface_" in header and "float *aligned" in header
    ml.compile(mlp(), ml.MlirBackend(), shapes={"input": [3, 4]},
               file_path=str(tmp_path / "m.mlir"))
    assert "mithril.model" in (tmp_path / "m.mlir").read_text()
    # Without shapes nothing can be written yet: the model is compiled at its
    # first call, which writes the file.
    pm = ml.compile(mlp(), ml.MlirBackend(), file_path=str(tmp_path / "n.py"))
    assert not (tmp_path / "n.py").exists()
    pm(input=np.ones((2, 4), np.float32))
    assert (tmp_path / "n.py").exists() and (tmp_path / "n.mithril").exists()
