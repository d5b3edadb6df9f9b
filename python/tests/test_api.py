# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""Mithril's model API: the composition example runs as written and gives
torch's numbers; misuse raises clear exceptions."""

import numpy as np
import pytest
import torch

import mithril as ml
from mithril import models as M
from mithril.models import Add, IOKey, LeakyRelu, Linear, Model, Relu


def build_example():
    trunk = Model()
    trunk |= Linear(dimension=32)
    trunk += Relu()
    trunk += Linear(dimension=16).connect(output="output")

    head = Model()
    head |= Linear(dimension=32)
    head += LeakyRelu()
    head += Linear(dimension=16).connect(output="output")

    model = Model()
    model |= trunk.connect(output="features")
    model += head.connect(output="refined")          # head reads trunk's output
    model |= Add().connect(left="features", right="refined", output="output")
    return model


def test_composition_example_against_torch():
    backend = ml.MlirBackend(dtype=ml.float64)
    pm = ml.compile(build_example(), backend, shapes={"input": [4, 8]})
    params = pm.randomize_params()
    outputs, grads = pm.evaluate(params, {"input": backend.ones(4, 8)},
                                 output_gradients={"output": backend.ones(4, 16)})
    t = {k: torch.tensor(v, requires_grad=True) for k, v in params.items()}
    lin = lambda h, k: torch.nn.functional.linear(h, t[k + ".weight"], t[k + ".bias"])
    x = torch.ones(4, 8, dtype=torch.float64)
    f = lin(torch.relu(lin(x, "model_0.linear_0")), "model_0.linear_1")
    h = torch.nn.functional.leaky_relu(lin(f, "model_1.linear_0"), 0.01)
    y = f + lin(h, "model_1.linear_1")
    y.backward(torch.ones(4, 16, dtype=torch.float64))
    # float64 sums in another order than torch's: a few ulps of the largest
    # terms, so an output near zero needs an absolute bound (2.8e-12 relative
    # on a 2e-5 output, 5.6e-17 absolute, failed a pure relative one).
    y_ref = y.detach().numpy()
    np.testing.assert_allclose(outputs["output"], y_ref, rtol=1e-12,
                               atol=1e-14 * np.abs(y_ref).max())
    assert sorted(grads) == sorted(params)
    for k in params:
        np.testing.assert_allclose(grads[k], t[k].grad.numpy(), rtol=1e-10, atol=1e-14)
    assert pm.input_keys[0] == "input" and pm.output_keys == ["output"]
    assert pm.shapes["model_0.linear_0.weight"] == (32, 8)
    assert "Trainable parameters: 1888" in pm.summary()


def test_float32_backend_and_file_path(tmp_path):
    path = tmp_path / "model.mlir"
    pm = ml.compile(build_example(), ml.MlirBackend(dtype=ml.float32), shapes={"input": [2, 8]},
                    file_path=str(path))
    text = path.read_text()
    assert "mithril.model @Model(" in text and 'instance "model_0" @Model_1' in text
    out = pm.evaluate(pm.randomize_params(seed=1), {"input": np.ones((2, 8), np.float32)})
    assert out["output"].dtype == np.float32 and out["output"].shape == (2, 16)


def test_named_keys_and_iokey():
    model = Model()
    model |= Linear(4).connect(input="x", weight="w1", output="h")
    model |= Relu().connect(input="h", output=IOKey("y"))
    pm = ml.compile(model, ml.MlirBackend(dtype=ml.float64), shapes={"x": [3, 5]})
    assert pm.output_keys == ["y"]
    assert "w1" in pm.input_keys
    params = pm.randomize_params(seed=2)
    x = np.random.default_rng(0).standard_normal((3, 5))
    bias = [k for k in params if k.endswith("bias")][0]
    ref = np.maximum(x @ params["w1"].T + params[bias], 0)
    np.testing.assert_allclose(pm.evaluate(params, {"x": x})["y"], ref, rtol=1e-12)


def test_errors_name_terminals():
    model = Model()
    model |= Add().connect(left="a", right="b", output=IOKey("c"))
    backend = ml.MlirBackend(dtype=ml.float64)
    with pytest.raises(ml.MithrilError, match=r"cannot broadcast terminal 'a' \(4x8\) with "
                                              r"terminal 'b' \(4x9\)"):
        ml.compile(model, backend, shapes={"a": [4, 8], "b": [4, 9]})
    with pytest.raises(ml.ShapeError, match="static_shapes=True"):
        ml.compile(model, backend, shapes={"a": [4, 8], "b": [None]}, static_shapes=True)
    # Compiled at the first call (static shapes or not): 'b' must come then.
    deferred = ml.compile(model, backend, shapes={"a": [4, 8]}, static_shapes=True)
    with pytest.raises(KeyError, match="missing input 'b'"):
        deferred.evaluate({}, {"a": np.ones((4, 8))})
    out = deferred.evaluate({}, {"a": np.ones((4, 8)), "b": np.ones(8)})
    np.testing.assert_array_equal(out["c"], np.full((4, 8), 2.0))
    with pytest.raises(KeyError, match="'d' is not an input"):
        ml.compile(model, backend, shapes={"a": [2], "b": [2]}, data_keys=["d"])
    pm = ml.compile(model, backend, shapes={"a": [2], "b": [2]})
    with pytest.raises(KeyError, match="missing input 'b'"):
        pm.evaluate({}, {"a": np.ones(2)})
    with pytest.raises(KeyError, match=r"unknown input\(s\) \['z'\]"):
        pm.evaluate({}, {"a": np.ones(2), "b": np.ones(2), "z": np.ones(2)})
    with pytest.raises(ml.MithrilError, match=r"input 'a': expected shape \[2\], got \[3\]"):
        pm.evaluate({}, {"a": np.ones(3), "b": np.ones(2)})
    other = Model()
    with pytest.raises(KeyError, match="not a terminal of Add"):
        other |= Add().connect(lft="x")
    # A model already part of one is added as a fresh copy (the user guide
    # adds its residual block twice).
    relu = Relu()
    m1, m2 = Model(), Model()
    m1 |= relu
    m2 |= relu
    assert relu.parent is m1 and m2.submodels[0][0] is not relu


def test_cyclic_connections_are_an_error():
    model = Model()
    model |= Relu().connect(input="b", output="a")
    model |= Relu().connect(input="a", output="b")
    with pytest.raises(ml.MithrilError, match="cyclic"):
        ml.compile(model, ml.MlirBackend(dtype=ml.float64), shapes={})


def test_nan_and_inf_follow_ieee():
    model = Model()
    model |= Relu().connect(input="x", output=IOKey("y"))
    pm = ml.compile(model, ml.MlirBackend(dtype=ml.float64), shapes={"x": [3]})
    out = pm.evaluate({}, {"x": np.array([np.nan, np.inf, -np.inf])})["y"]
    assert np.isnan(out[0]) and out[1] == np.inf and out[2] == 0.0


def test_cuda_device_compiles_kernels():
    model = Model()
    model |= Linear(4).connect(input="x", output=IOKey("y"))
    pm = ml.compile(model, ml.MlirBackend(dtype=ml.float32, device="cuda"), shapes={"x": [8, 3]})
    assert ".target sm_90" in pm.ptx and ".entry" in pm.ptx
    with pytest.raises(ml.MithrilError, match="no CUDA device"):
        pm.evaluate(pm.randomize_params(), {"x": np.ones((8, 3), np.float32)})


def test_model_dict_errors_name_the_place():
    # Found by fuzz/model_dict_fuzz.py: a kernel size of the wrong length hit
    # an assert in the layer's constructor.
    from mithril.utils import ModelDictError, dict_to_model
    with pytest.raises(ml.MithrilError, match=r"expected 2 values, got 3"):
        dict_to_model({"name": "Convolution2D",
                       "args": {"kernel_size": [1, 2, 3], "out_channels": 4}})
    with pytest.raises(ModelDictError, match=r"model.submodels: expected a dict"):
        dict_to_model({"name": "Model", "submodels": [1, 2]})
    with pytest.raises(ModelDictError, match=r"model.submodels.m.args: expected a dict"):
        dict_to_model({"name": "Model", "submodels": {"m": {"name": "Relu", "args": 3}}})
    with pytest.raises(ModelDictError, match=r"model.connections.m.input.key.connect: "
                                             r"no submodel 'nope'"):
        dict_to_model({"name": "Model", "submodels": {"m": "Relu"},
                       "connections": {"m": {"input": {"key": {"connect": [["nope", "x"]]}}}}})
    with pytest.raises(ml.MithrilError, match=r"unknown model 'NoSuchModel'"):
        dict_to_model({"name": "NoSuchModel"})
    # Found by the same fuzzer: Concat(n=2**63) built terminals until memory ran out.
    with pytest.raises(ml.MithrilError, match=r"Concat: n must be an int from 1 to 4096"):
        dict_to_model({"name": "Concat", "args": {"n": 2**63}})


def test_num_threads_gives_the_same_numbers():
    # Large enough that the 2-thread build splits its matmuls across threads.
    model = M.MLP(activations=[M.Relu(), M.Relu()], dimensions=[512, 64])
    rng = np.random.default_rng(0)
    x = rng.standard_normal((256, 300))
    results = []
    for threads in (1, 2):
        backend = ml.MlirBackend(dtype=ml.float64, num_threads=threads)
        pm = ml.compile(model if threads == 1 else
                        M.MLP(activations=[M.Relu(), M.Relu()], dimensions=[512, 64]),
                        backend, shapes={"input": [256, 300]})
        params = pm.randomize_params(seed=1)
        out, grads = pm.evaluate(params, {"input": x},
                                 output_gradients={"output": np.ones((256, 64))})
        results.append((out["output"], grads))
    np.testing.assert_allclose(results[0][0], results[1][0], rtol=1e-12)
    for key in results[0][1]:
        np.testing.assert_allclose(results[0][1][key], results[1][1][key], rtol=1e-12)
    with pytest.raises(ValueError, match="num_threads"):
        ml.MlirBackend(num_threads=0)


def test_threaded_models_outlive_each_other():
    # Regression: freeing one threaded model reset the async runtime under
    # the others (a crash in mlirAsyncRuntimeCreateGroup).
    from mithril.models import MatrixMultiply
    import gc
    a = np.random.default_rng(0).standard_normal((256, 256)).astype(np.float32)
    backend = ml.MlirBackend(num_threads=2)
    models = []
    for _ in range(3):
        m = Model()
        m |= MatrixMultiply().connect(left="a", right="b", output=IOKey("c"))
        models.append(ml.compile(m, backend, shapes={"a": [256, 256], "b": [256, 256]}))
    del models[0]
    gc.collect()
    for pm in models:
        np.testing.assert_allclose(pm.evaluate({}, {"a": a, "b": a})["c"], a @ a, rtol=1e-4,
                                   atol=1e-3)


def test_dynamic_batch_compiles_once_and_runs_any_size():
    model = M.MLP(activations=[M.Relu(), M.Sigmoid()], dimensions=[16, 3])
    pm = ml.compile(model, ml.MlirBackend(dtype=ml.float64), shapes={"input": [None, 5]})
    assert pm.shapes["input"] == (None, 5) and pm.shapes["output"] == (None, 3)
    params = pm.randomize_params(seed=2)
    w0, b0, w1, b1 = (params[k] for k in ("weight0", "bias0", "weight1", "bias1"))
    rng = np.random.default_rng(3)
    for batch in (1, 6, 33):
        x = rng.standard_normal((batch, 5))
        want = 1 / (1 + np.exp(-(np.maximum(x @ w0.T + b0, 0) @ w1.T + b1)))
        np.testing.assert_allclose(pm.evaluate(params, {"input": x})["output"], want,
                                   rtol=1e-12)
        # Gradients are compiled for the sizes they meet, against torch.
        seed = rng.standard_normal((batch, 3))
        _, grads = pm.evaluate(params, {"input": x}, output_gradients={"output": seed})
        tw = torch.tensor(w1, requires_grad=True)
        h = torch.relu(torch.tensor(x) @ torch.tensor(w0).T + torch.tensor(b0))
        (torch.sigmoid(h @ tw.T + torch.tensor(b1)) * torch.tensor(seed)).sum().backward()
        np.testing.assert_allclose(grads["weight1"], tw.grad.numpy(), rtol=1e-12)
    with pytest.raises(ml.MithrilError, match=r"input 'input': expected shape \[None, 5\]"):
        pm.evaluate(params, {"input": np.ones((2, 4))})


def test_dict_to_model_tensor_constants():
    # Mithril's JSON writes an unnamed tensor constant as {"tensor": v}
    # (models_directed_test's test_composite_extend_numbers).
    from mithril.utils import dict_to_model
    from mithril.utils.dict_to_model import ModelDictError
    spec = {"name": "Model", "submodels": {"m1": {"name": "Multiply"}},
            "connections": {"m1": {"left": "input", "right": {"tensor": [2.0, 3.0]},
                                   "output": "output"}}}
    pm = ml.compile(dict_to_model(spec), ml.MlirBackend(dtype=ml.float64),
                    shapes={"input": [2]})
    np.testing.assert_array_equal(pm.evaluate({}, {"input": np.array([1.0, 2.0])})["output"],
                                  [2.0, 6.0])
    spec["connections"]["m1"]["right"] = {"tensr": 1}
    with pytest.raises(ModelDictError, match="expected a key, a tensor or a constant"):
        dict_to_model(spec)
