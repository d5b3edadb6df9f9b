# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""ml.compile without the shapes it needs: the model is compiled at its first
call, for the shapes of the arrays given (DeferredPhysicalModel)."""

import numpy as np
import pytest

import mithril as ml
from mithril.deferred import DeferredPhysicalModel
from mithril.models import Linear, Model, Relu


def mlp():
    model = Model()
    model |= Linear(8)(input="input")
    model += Relu()
    model += Linear(3)(output="output")
    return model


def reference(params, x):
    h = np.maximum(x @ params["linear_0.weight"].T + params["linear_0.bias"], 0)
    return h @ params["linear_1.weight"].T + params["linear_1.bias"]


def test_compiled_at_the_first_call_per_shape():
    pm = ml.compile(mlp(), ml.MlirBackend(dtype=ml.float64))
    assert isinstance(pm, DeferredPhysicalModel)
    with pytest.raises(ml.MithrilError, match="call the model first"):
        pm.randomize_params()
    assert pm.output_keys == ["output"]  # the graph says so, before any call
    rng = np.random.default_rng(0)
    x4, x2 = rng.standard_normal((4, 5)), rng.standard_normal((2, 5))
    y4 = pm(x4)
    params = pm._call_params
    np.testing.assert_allclose(y4, reference(params, x4), rtol=1e-12)
    np.testing.assert_allclose(pm(x2), reference(params, x2), rtol=1e-12)
    assert len(pm._compiled) == 2
    pm(x4 + 1)  # a shape met before: no new compile
    assert len(pm._compiled) == 2
    # After a call: the compiled model's terminals, evaluate, gradients.
    assert pm.get_shapes()["linear_0.weight"] == [8, 5]
    mine = pm.randomize_params(seed=3)
    out, grads = pm.evaluate(mine, {"input": x4},
                             output_gradients={"output": np.ones((4, 3))})
    np.testing.assert_allclose(out["output"], reference(mine, x4), rtol=1e-12)
    assert set(grads) == set(mine)


def test_training_and_errors():
    model = Model()
    model |= Linear(1)(input="input", output="output")
    model |= ml.models.SquaredError()(input="output", target="target", output="se")
    model |= ml.models.Mean()(input="se", output="final_cost")
    pm = ml.compile(model, ml.MlirBackend(dtype=ml.float64))
    x = np.random.default_rng(1).standard_normal((16, 2))
    y = x @ np.array([[2.0], [-1.0]])
    with pytest.raises(KeyError, match="missing input 'target'"):
        pm.evaluate({}, {"input": x})
    params = {"linear_0.weight": np.zeros((1, 2)), "linear_0.bias": np.zeros(1)}
    opt = ml.SGD(learning_rate=0.1)
    for _ in range(200):
        pm.train_step(params, {"input": x, "target": y}, opt)
    np.testing.assert_allclose(params["linear_0.weight"], [[2.0, -1.0]], atol=1e-6)
    # static_shapes=True defers too: the first call fixes every size.
    static = ml.compile(mlp(), ml.MlirBackend(dtype=ml.float64), static_shapes=True)
    assert isinstance(static, DeferredPhysicalModel)
    xs = np.random.default_rng(1).standard_normal((4, 5))
    out = static(input=xs)
    compiled = static.compiled_for({"input": xs})
    assert not compiled._dynamic and compiled.get_shapes()["input"] == [4, 5]
    out = out["output"] if isinstance(out, dict) else out
    np.testing.assert_allclose(out, reference(static._call_params, xs))


def channels_model():
    """torch-style layers that name their channels: every parameter's shape
    is known without the input's."""
    from mithril.models.torch_layers import Conv2d, GlobalAvgPool2d
    model = Model()
    model |= Conv2d(3, 4, kernel_size=3)
    model += Relu()
    model += GlobalAvgPool2d()
    model += Linear(4, 2)
    return model


def test_parameters_before_the_first_call_from_the_graph():
    pm = ml.compile(channels_model(), ml.MlirBackend(dtype=ml.float64))
    assert isinstance(pm, DeferredPhysicalModel)
    params = pm.randomize_params(seed=1)
    assert {k: v.shape for k, v in params.items()} == {
        "conv2d_0.weight": (4, 3, 3, 3), "conv2d_0.bias": (4,),
        "linear_0.weight": (2, 4), "linear_0.bias": (2,)}
    x = np.random.default_rng(2).standard_normal((2, 3, 6, 6))
    (out,) = pm.evaluate(params, {"input": x}).values()
    import torch
    import torch.nn.functional as F
    t = {k: torch.tensor(v) for k, v in params.items()}
    h = F.relu(F.conv2d(torch.tensor(x), t["conv2d_0.weight"], t["conv2d_0.bias"]))
    want = h.mean((2, 3)) @ t["linear_0.weight"].T + t["linear_0.bias"]
    np.testing.assert_allclose(out, want.numpy(), rtol=1e-10)
    # A layer whose size follows the input (Linear(3)) leaves it to the call.
    with pytest.raises(ml.MithrilError, match="call the model first"):
        ml.compile(mlp(), ml.MlirBackend()).randomize_params()


def test_file_path_is_written_at_the_first_call(tmp_path):
    path = tmp_path / "model.mlir"
    pm = ml.compile(mlp(), ml.MlirBackend(dtype=ml.float64), file_path=str(path))
    assert isinstance(pm, DeferredPhysicalModel) and not path.exists()
    x = np.ones((2, 5))
    pm(input=x)
    text = path.read_text()
    assert "mithril.model" in text and "tensor<2x5xf64>" in text
