# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""Users' primitives as C functions (backend.register_primitive and
CustomPrimitiveModel, lowered to mithril.custom_call): outputs and gradients
against numpy and finite differences, from Python and from mithril-run."""

import ctypes
import shutil
import subprocess

import numpy as np
import pytest

import mithril as ml
from mithril import IOKey
from mithril.framework.physical import PhysicalModel
from mithril.models import CustomPrimitiveModel, Linear, Model, Sum

INCLUDE = ml.get_include()

SOURCE = r"""
#include <math.h>
#include "mithril/Runtime/CustomCall.h"

/* y = x * sigmoid(x), float64 and float32 */
void swish(const MithrilTensor *t, int64_t count) {
  const double *x = t[0].data; double *y = t[count - 1].data;
  for (int64_t i = 0, n = mithrilNumElements(&t[0]); i < n; ++i) y[i] = x[i] / (1.0 + exp(-x[i]));
}
void swish_grad(const MithrilTensor *t, int64_t count, int64_t index) {
  const double *x = t[0].data, *dy = t[2].data; double *dx = t[3].data;
  for (int64_t i = 0, n = mithrilNumElements(&t[0]); i < n; ++i) {
    double s = 1.0 / (1.0 + exp(-x[i]));
    dx[i] = dy[i] * (s + x[i] * s * (1.0 - s));
  }
}
void swish_f32(const MithrilTensor *t, int64_t count) {
  const float *x = t[0].data; float *y = t[1].data;
  for (int64_t i = 0, n = mithrilNumElements(&t[0]); i < n; ++i) y[i] = x[i] / (1.0f + expf(-x[i]));
}
/* out[i, j] = a[i] * b[j] */
void outer(const MithrilTensor *t, int64_t count) {
  const double *a = t[0].data, *b = t[1].data; double *o = t[2].data;
  int64_t m = t[0].sizes[0], n = t[1].sizes[0];
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) o[i * n + j] = a[i] * b[j];
}
void outer_grad(const MithrilTensor *t, int64_t count, int64_t index) {
  const double *a = t[0].data, *b = t[1].data, *g = t[3].data; double *d = t[4].data;
  int64_t m = t[0].sizes[0], n = t[1].sizes[0];
  for (int64_t k = 0; k < (index == 0 ? m : n); ++k) d[k] = 0;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      if (index == 0) d[i] += g[i * n + j] * b[j];
      else d[j] += g[i * n + j] * a[i];
    }
}
/* The tensors it was called with: count, then each one's rank and sizes. */
void record_call(const MithrilTensor *t, int64_t count) {
  double *out = t[count - 1].data;
  int64_t k = 0;
  out[k++] = (double)count;
  for (int64_t i = 0; i < count; ++i) {
    out[k++] = (double)t[i].rank;
    for (int64_t d = 0; d < t[i].rank; ++d) out[k++] = (double)t[i].sizes[d];
  }
  while (k < mithrilNumElements(&t[count - 1])) out[k++] = -1;
}
"""


@pytest.fixture(scope="module")
def library(tmp_path_factory):
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        pytest.skip("no C compiler")
    directory = tmp_path_factory.mktemp("custom")
    (directory / "ops.c").write_text(SOURCE)
    path = directory / "libops.so"
    subprocess.run([compiler, "-O2", "-shared", "-fPIC", f"-I{INCLUDE}", str(directory / "ops.c"),
                    "-o", str(path), "-lm"], check=True)
    return path


def swish_model():
    model = Model()
    model |= Linear(4)(input="input", output="hidden")
    model += CustomPrimitiveModel("swish", input=IOKey(), output=IOKey())(
        input="hidden", output=IOKey("act"))
    model += Sum()(input="act", output=IOKey("output"))
    return model


def numpy_swish(params, x):
    h = x @ params["linear_0.weight"].T + params["linear_0.bias"]
    s = 1 / (1 + np.exp(-h))
    return h * s, h, s


def test_outputs_and_gradients_match_numpy(library):
    lib = ctypes.CDLL(str(library))
    backend = ml.MlirBackend(dtype=ml.float64)
    assert backend.register_primitive(lib.swish, lib.swish_grad) == "swish"
    pm = ml.compile(swish_model(), backend, shapes={"input": [3, 5]})
    params = pm.randomize_params(seed=1)
    x = np.random.default_rng(0).standard_normal((3, 5))
    outputs, grads = pm.evaluate(params, {"input": x}, output_gradients={"output": np.array(1.0)})
    y, h, s = numpy_swish(params, x)
    np.testing.assert_allclose(outputs["act"], y, rtol=1e-14)
    np.testing.assert_allclose(outputs["output"], y.sum(), rtol=1e-13)
    dh = s + h * s * (1 - s)
    np.testing.assert_allclose(grads["linear_0.weight"], dh.T @ x, rtol=1e-12)
    np.testing.assert_allclose(grads["linear_0.bias"], dh.sum(0), rtol=1e-12)
    # The gradient function agrees with finite differences of the function.
    eps, w = 1e-6, params["linear_0.weight"]
    for i, j in [(0, 0), (2, 3)]:
        bumped = {k: v.copy() for k, v in params.items()}
        bumped["linear_0.weight"][i, j] = w[i, j] + eps
        up = pm.evaluate(bumped, {"input": x})["output"]
        bumped["linear_0.weight"][i, j] = w[i, j] - eps
        down = pm.evaluate(bumped, {"input": x})["output"]
        assert (up - down) / (2 * eps) == pytest.approx(grads["linear_0.weight"][i, j], rel=1e-7)


def test_training_steps_take_the_gradient_function(library):
    lib = ctypes.CDLL(str(library))
    backend = ml.MlirBackend(dtype=ml.float64)
    backend.register_primitive(lib.swish, lib.swish_grad)
    pm = ml.compile(swish_model(), backend, shapes={"input": [3, 5]})
    params = pm.randomize_params(seed=2)
    x = np.random.default_rng(3).standard_normal((3, 5))
    want = {k: v.copy() for k, v in params.items()}
    for _ in range(3):
        _, h, s = numpy_swish(want, x)
        dh = s + h * s * (1 - s)
        want["linear_0.weight"] -= 0.1 * dh.T @ x
        want["linear_0.bias"] -= 0.1 * dh.sum(0)
        pm.train_step(params, {"input": x}, ml.SGD(lr=0.1), loss="output")
    for key in want:
        np.testing.assert_allclose(params[key], want[key], rtol=1e-12)


def test_shape_rule_from_the_iokeys_and_every_operand_differentiated(library):
    lib = ctypes.CDLL(str(library))
    backend = ml.MlirBackend(dtype=ml.float64)
    backend.register_primitive(lib.outer, lib.outer_grad)
    model = Model()
    model |= CustomPrimitiveModel("outer", left=IOKey(shape=["M"]), right=IOKey(shape=["N"]),
                                  output=IOKey(shape=["M", "N"]))(left="a", right="b",
                                                                  output=IOKey("output"))
    pm = ml.compile(model, backend, shapes={"a": [4], "b": [3]}, trainable_keys={"a", "b"})
    assert pm.get_shapes()["output"] == [4, 3]
    rng = np.random.default_rng(0)
    params = {"a": rng.standard_normal(4), "b": rng.standard_normal(3)}
    seed = rng.standard_normal((4, 3))
    outputs, grads = pm.evaluate(params, {}, output_gradients={"output": seed})
    np.testing.assert_allclose(outputs["output"], np.outer(params["a"], params["b"]), rtol=1e-15)
    np.testing.assert_allclose(grads["a"], seed @ params["b"], rtol=1e-13)
    np.testing.assert_allclose(grads["b"], seed.T @ params["a"], rtol=1e-13)


def test_the_calling_convention(library):
    # The records the function gets: the inputs in order, then the output;
    # sizes as the shape rule gives them (a fixed size and an input's).
    lib = ctypes.CDLL(str(library))
    backend = ml.MlirBackend(dtype=ml.float64)
    backend.register_primitive(lib.record_call)
    model = Model()
    model |= CustomPrimitiveModel("record_call", x=IOKey(shape=["B", 3]), y=IOKey(shape=[7]),
                                  output=IOKey(shape=[12, "B"]))(x="x", y="y",
                                                                 output=IOKey("output"))
    pm = ml.compile(model, backend, shapes={"x": [2, 3], "y": [7]}, data_keys=["x", "y"])
    out = pm.evaluate({}, {"x": np.ones((2, 3)), "y": np.ones(7)})["output"].ravel()
    assert list(out[:10]) == [3, 2, 2, 3, 1, 7, 2, 12, 2, -1]


def test_float32_primitive_in_a_float32_model(library):
    lib = ctypes.CDLL(str(library))
    backend = ml.MlirBackend()
    backend.register_primitive(lib.swish_f32)
    model = Model()
    model |= CustomPrimitiveModel("swish_f32", input=IOKey(), output=IOKey())(
        input="input", output=IOKey("output"))
    pm = ml.compile(model, backend, shapes={"input": [2, 8]})
    x = np.linspace(-4, 4, 16, dtype=np.float32).reshape(2, 8)
    out = pm.evaluate({}, {"input": x})["output"]
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, x / (1 + np.exp(-x)), rtol=1e-6)
    # Without a gradient function, differentiating through it is an error
    # that names the function.
    with pytest.raises(ml.MithrilError, match="@swish_f32 has no gradient function"):
        train = Model()
        train |= Linear(8)(input="input", output="h")
        train += CustomPrimitiveModel("swish_f32", input=IOKey(), output=IOKey())(
            input="h", output=IOKey("output"))
        pm = ml.compile(train, backend, shapes={"input": [2, 8]})
        pm.evaluate(pm.randomize_params(), {"input": x},
                    output_gradients={"output": np.ones((2, 8), np.float32)})


def test_compiled_at_the_first_call_and_saved(library, tmp_path):
    lib = ctypes.CDLL(str(library))
    backend = ml.MlirBackend(dtype=ml.float64)
    backend.register_primitive(lib.swish, lib.swish_grad)
    pm = ml.compile(swish_model(), backend)  # no shapes: compiled at the first call
    x = np.random.default_rng(0).standard_normal((6, 5))
    y = pm(x)
    pm.save(tmp_path / "swish.mithril")
    # Loading needs the function again: the backend it is loaded with has it.
    other = ml.MlirBackend(dtype=ml.float64)
    other.register_primitive(lib.swish, lib.swish_grad)
    loaded = PhysicalModel.load(tmp_path / "swish.mithril", other)
    again = loaded(x)
    for key in ("act", "output"):
        np.testing.assert_allclose(again[key], y[key], rtol=1e-15)
    assert y["act"].shape == (6, 4)


def test_errors_name_the_primitive(library):
    backend = ml.MlirBackend(dtype=ml.float64)
    with pytest.raises(TypeError, match="takes a C function"):
        backend.register_primitive(lambda x: x)
    with pytest.raises(ml.MithrilError, match="not a C function name"):
        backend.register_primitive("not a name")
    # A name the process does not have.
    backend.register_primitive("mithril_no_such_function")
    model = Model()
    model |= CustomPrimitiveModel("mithril_no_such_function", input=IOKey(), output=IOKey())(
        input="input", output=IOKey("output"))
    with pytest.raises(ml.MithrilError, match="no C function 'mithril_no_such_function'"):
        ml.compile(model, backend, shapes={"input": [2]})(np.ones(2))
    # An output dimension no input has.
    lib = ctypes.CDLL(str(library))
    backend.register_primitive(lib.outer)
    model = Model()
    model |= CustomPrimitiveModel("outer", left=IOKey(shape=["M"]), right=IOKey(shape=["N"]),
                                  output=IOKey(shape=["M", "K"]))(left="a", right="b",
                                                                  output=IOKey("output"))
    with pytest.raises(ml.MithrilError, match=r"output dimension 1 \('K'\) is no input's"):
        ml.compile(model, backend, shapes={"a": [4], "b": [3]})
    # Not registered: a formula key that is no dialect op either.
    model = Model()
    model |= CustomPrimitiveModel("swish2", input=IOKey(), output=IOKey())(
        input="input", output=IOKey("output"))
    with pytest.raises(ml.MithrilError, match="swish2"):
        ml.compile(model, backend, shapes={"input": [2]})


def test_mithril_run_loads_the_library(library, tmp_path):
    # The same model from the command line: its IR written by compile's
    # file_path, the function from --shared-lib.
    lib = ctypes.CDLL(str(library))
    backend = ml.MlirBackend(dtype=ml.float64)
    backend.register_primitive(lib.swish, lib.swish_grad)
    model = Model()
    model |= CustomPrimitiveModel("swish", input=IOKey(), output=IOKey())(
        input="input", output=IOKey("output"))
    ml.compile(model, backend, shapes={"input": [2, 3]}, file_path=str(tmp_path / "swish.mlir"))
    x = np.linspace(-2, 2, 6).reshape(2, 3)
    np.save(tmp_path / "x.npy", x)
    run = shutil.which("mithril-run")
    if run is None:
        pytest.skip("mithril-run is not on PATH")
    subprocess.run([run, str(tmp_path / "swish.mlir"), f"--input=input={tmp_path / 'x.npy'}",
                    f"--shared-lib={library}", "-o", str(tmp_path / "out.npz")], check=True)
    np.testing.assert_allclose(np.load(tmp_path / "out.npz")["output"], x / (1 + np.exp(-x)),
                               rtol=1e-15)
    missing = subprocess.run([run, str(tmp_path / "swish.mlir"),
                              f"--input=input={tmp_path / 'x.npy'}"],
                             capture_output=True, text=True)
    assert missing.returncode != 0
    assert "no C function 'swish'" in missing.stderr and "--shared-lib" in missing.stderr


def test_a_composition_is_a_primitive_with_derived_shapes_and_gradients():
    # docs/custom-primitives.md's first way: a Model of existing ops.
    from mithril.models import Multiply, Sigmoid

    class Swish(Model):
        def __init__(self, name=None):
            super().__init__(name=name)
            self |= Sigmoid()(input="input", output="gate")
            self |= Multiply()(left="input", right="gate", output=IOKey("output"))
            self.set_cin("input")
            self.set_cout("output")

    model = Model()
    model |= Linear(4)(input="input", output="hidden")
    model += Swish()(input="hidden", output=IOKey("act"))
    model += Sum()(input="act", output=IOKey("output"))
    pm = ml.compile(model, ml.MlirBackend(dtype=ml.float64), shapes={"input": [3, 5]})
    params = pm.randomize_params(seed=1)
    x = np.random.default_rng(0).standard_normal((3, 5))
    outputs, grads = pm.evaluate(params, {"input": x}, output_gradients={"output": np.array(1.0)})
    y, h, s = numpy_swish(params, x)
    np.testing.assert_allclose(outputs["act"], y, rtol=1e-14)
    np.testing.assert_allclose(grads["linear_0.weight"], (s + h * s * (1 - s)).T @ x, rtol=1e-12)
