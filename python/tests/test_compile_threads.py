# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""The LLVM code compiled in pieces on several threads (cpu_options
"compile_threads", docs/compilation.md): each large kernel a function of its
own, the functions dealt into pieces compiled side by side and linked by the
JIT. Any number of threads gives the same numbers, bit for bit; code saved
or cached in pieces (an archive of objects) loads back."""

import zipfile

import numpy as np
import pytest

import mithril as ml
from mithril.framework.physical import PhysicalModel
from mithril.models import CrossEntropy, Linear, Mean, Model, Relu, TrainModel
from small_models import small_cnn


def mlp():
    model = Model()
    model |= Linear(64)(input="input")
    model += Relu()
    model += Linear(48)
    model += Relu()
    model += Linear(10)(output="output")
    return model


def training(model):
    train = TrainModel(model)
    train.add_loss(CrossEntropy(input_type="logits"), input="output", target="target",
                   reduce_steps=[Mean()])
    return train


CASES = {
    "mlp": (mlp, [16, 40]),
    "cnn": (lambda: small_cnn(10), [4, 3, 16, 16]),
}


def compile_step(name, compile_threads, num_threads, dtype=ml.float32):
    build, shape = CASES[name]
    return ml.compile(training(build()), ml.MlirBackend(dtype=dtype),
                      shapes={"input": shape, "target": [shape[0]]},
                      cpu_options={"compile_threads": compile_threads,
                                   "num_threads": num_threads})


def data(name):
    shape = CASES[name][1]
    rng = np.random.default_rng(7)
    return {"input": rng.standard_normal(shape).astype(np.float32),
            "target": rng.integers(0, 10, shape[0])}


def is_archive(code: bytes) -> bool:
    return code.startswith(b"!<arch>\n")


def step_code(pm) -> bytes:
    """The object code of the training step's compiled gradients."""
    (compiled, *_), = pm._gradient_models.values()
    return compiled.object_code


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("num_threads", [1, 2])
def test_any_number_of_compile_threads_gives_the_same_numbers(name, num_threads):
    results = {}
    for compile_threads in (1, 2, 3):
        pm = compile_step(name, compile_threads, num_threads)
        params = pm.randomize_params(seed=11)
        out, grads = pm.evaluate(params, data(name),
                                 output_gradients={"final_cost": np.array(1.0, np.float32)})
        results[compile_threads] = (out, grads)
        # One thread: one object file; more: an archive of the pieces.
        assert is_archive(step_code(pm)) == (compile_threads > 1)
    want_out, want_grads = results[1]
    assert float(want_out["final_cost"]) > 0
    for compile_threads in (2, 3):
        out, grads = results[compile_threads]
        for key in want_out:
            np.testing.assert_array_equal(out[key], want_out[key])
        assert set(grads) == set(want_grads)
        for key in want_grads:
            np.testing.assert_array_equal(grads[key], want_grads[key])


def test_the_pieces_match_numpy():
    """The forward in pieces against numpy's float64 arithmetic."""
    pm = ml.compile(mlp(), ml.MlirBackend(dtype=ml.float32), shapes={"input": [16, 40]},
                    cpu_options={"compile_threads": 3})
    params = pm.randomize_params(seed=2)
    x = np.random.default_rng(3).standard_normal((16, 40)).astype(np.float32)
    p = {k: v.astype(np.float64) for k, v in params.items()}
    h = np.maximum(x @ p["linear_0.weight"].T + p["linear_0.bias"], 0)
    h = np.maximum(h @ p["linear_1.weight"].T + p["linear_1.bias"], 0)
    want = h @ p["linear_2.weight"].T + p["linear_2.bias"]
    got = pm.evaluate(params, {"input": x})["output"]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_a_small_model_compiles_whole():
    """A piece costs a thread and a reading of the bitcode: a small model's
    code stays one object file whatever the threads."""
    pm = ml.compile(mlp(), ml.MlirBackend(dtype=ml.float32), shapes={"input": [16, 40]},
                    cpu_options={"compile_threads": 3})
    pm(np.zeros((16, 40), np.float32))
    assert pm._forward.object_code.startswith(b"\x7fELF")


def saved_cnn(tmp_path):
    """A CNN compiled in pieces and saved, its input and output."""
    backend = ml.MlirBackend(dtype=ml.float32)
    pm = ml.compile(small_cnn(10), backend, shapes={"input": [4, 3, 16, 16]},
                    cpu_options={"compile_threads": 2})
    x = np.random.default_rng(0).standard_normal((4, 3, 16, 16)).astype(np.float32)
    y = pm(x)
    path = tmp_path / "cnn.mithril"
    pm.save(path)
    return backend, path, x, y


def test_code_in_pieces_is_saved_and_loaded(tmp_path):
    backend, path, x, y = saved_cnn(tmp_path)
    with zipfile.ZipFile(path) as z:
        assert is_archive(z.read("model.o"))
    loaded = PhysicalModel.load(path, backend)
    assert [name for name, *_ in loaded._forward.stages] == ["load object code"]
    np.testing.assert_array_equal(loaded(x), y)


def test_a_damaged_archive_is_compiled_again(tmp_path):
    backend, path, x, y = saved_cnn(tmp_path)
    damaged = tmp_path / "damaged.mithril"
    with zipfile.ZipFile(path) as z, zipfile.ZipFile(damaged, "w") as out:
        for item in z.namelist():
            content = z.read(item)
            if item == "model.o":
                content = content[:len(content) // 2]
            out.writestr(item, content)
    with pytest.warns(UserWarning, match="object code of the saved @.* (does not load|is a damaged)"):
        loaded = PhysicalModel.load(damaged, backend)
    np.testing.assert_array_equal(loaded(x), y)


def test_the_compile_cache_keeps_code_in_pieces(tmp_path, monkeypatch):
    monkeypatch.setenv("MITHRIL_CACHE", "1")
    monkeypatch.setenv("MITHRIL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("MITHRIL_CACHE_MIN_SECONDS", "0")
    first = compile_step("mlp", 2, 1)
    second = compile_step("mlp", 2, 1)
    params = first.randomize_params(seed=5)
    seed = {"final_cost": np.array(1.0, np.float32)}
    out1, grads1 = first.evaluate(params, data("mlp"), output_gradients=seed)
    out2, grads2 = second.evaluate(params, data("mlp"), output_gradients=seed)
    (compiled, *_), = second._gradient_models.values()
    assert "compile cache hit" in [name for name, *_ in compiled.stages]
    assert is_archive(compiled.object_code)
    np.testing.assert_array_equal(out1["final_cost"], out2["final_cost"])
    for key in grads1:
        np.testing.assert_array_equal(grads1[key], grads2[key])


@pytest.mark.parametrize("value", [-1, 1.5, "2", True])
def test_bad_compile_threads_are_errors(value):
    with pytest.raises(ValueError, match="compile_threads"):
        ml.compile(mlp(), ml.MlirBackend(), shapes={"input": [2, 40]},
                   cpu_options={"compile_threads": value})
