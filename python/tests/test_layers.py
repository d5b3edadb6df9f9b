# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""The layers of the model library against torch.nn.functional."""

import numpy as np
import pytest
import torch

import mithril as ml
from mithril import models as M
from torch_checks import check_conv2d

F = torch.nn.functional


def compile_eval(model, backend, inputs, params, seeds=None, trainable=None):
    shapes = {k: list(np.shape(v)) for k, v in {**inputs, **params}.items()}
    pm = ml.compile(model, backend, shapes=shapes, trainable_keys=trainable)
    if seeds is None:
        return pm, pm.evaluate(params, inputs)
    return pm, pm.evaluate(params, inputs, output_gradients=seeds)


def test_linear_weight_layout_and_gradients(backend64, rng):
    x = rng.standard_normal((5, 3))
    w, b = rng.standard_normal((4, 3)), rng.standard_normal(4)  # [out, in] as Mithril
    seed = rng.standard_normal((5, 4))
    pm, (out, grads) = compile_eval(M.Linear(4), backend64, {"input": x},
                                    {"weight": w, "bias": b}, {"output": seed})
    assert pm.shapes["weight"] == (4, 3)
    tw, tb = torch.tensor(w, requires_grad=True), torch.tensor(b, requires_grad=True)
    y = F.linear(torch.tensor(x), tw, tb)
    y.backward(torch.tensor(seed))
    np.testing.assert_allclose(out["output"], y.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(grads["weight"], tw.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(grads["bias"], tb.grad.numpy(), rtol=1e-12)


@pytest.mark.parametrize("stride,padding,dilation,groups", [
    (1, 0, 1, 1), (2, 1, 1, 1), (1, 2, 2, 1), (1, 1, 1, 2)])
def test_conv2d_forward(stride, padding, dilation, groups, backend64, rng):
    x = rng.standard_normal((2, 4, 9, 8))
    w, b = rng.standard_normal((6, 4 // groups, 3, 3)), rng.standard_normal(6)
    conv = M.Convolution2D(kernel_size=3, out_channels=6, stride=stride, padding=padding,
                           dilation=dilation, groups=groups)
    _, out = compile_eval(conv, backend64, {"input": x}, {"weight": w, "bias": b})
    ref = F.conv2d(torch.tensor(x), torch.tensor(w), torch.tensor(b), stride, padding,
                   dilation, groups)
    np.testing.assert_allclose(out["output"], ref.numpy(), rtol=1e-11, atol=1e-12)


def test_conv1d_forward(backend64, rng):
    x, w = rng.standard_normal((2, 3, 10)), rng.standard_normal((5, 3, 3))
    conv = M.Convolution1D(kernel_size=3, out_channels=5, stride=2, padding=1, use_bias=False)
    _, out = compile_eval(conv, backend64, {"input": x}, {"weight": w})
    ref = F.conv1d(torch.tensor(x), torch.tensor(w), None, 2, 1)
    np.testing.assert_allclose(out["output"], ref.numpy(), rtol=1e-11, atol=1e-12)


@pytest.mark.parametrize("factory,fn", [
    (lambda: M.MaxPool2D(kernel_size=2), lambda t: F.max_pool2d(t, 2)),
    (lambda: M.MaxPool2D(kernel_size=3, stride=2, padding=1),
     lambda t: F.max_pool2d(t, 3, 2, 1)),
    (lambda: M.AvgPool2D(kernel_size=2), lambda t: F.avg_pool2d(t, 2)),
])
def test_pool2d_forward(factory, fn, backend64, rng):
    x = rng.standard_normal((2, 3, 8, 8))
    _, out = compile_eval(factory(), backend64, {"input": x}, {})
    np.testing.assert_allclose(out["output"], fn(torch.tensor(x)).numpy(), rtol=1e-12)


def test_maxpool1d_forward(backend64, rng):
    x = rng.standard_normal((2, 3, 9))
    _, out = compile_eval(M.MaxPool1D(kernel_size=3), backend64, {"input": x}, {})
    np.testing.assert_allclose(out["output"], F.max_pool1d(torch.tensor(x), 3).numpy())


def test_layer_norm_with_gradients(backend64, rng):
    x = rng.standard_normal((4, 6))
    w, b = rng.standard_normal(6), rng.standard_normal(6)
    seed = rng.standard_normal((4, 6))
    _, (out, grads) = compile_eval(M.LayerNorm(), backend64, {"input": x},
                                   {"weight": w, "bias": b}, {"output": seed})
    tw, tb = torch.tensor(w, requires_grad=True), torch.tensor(b, requires_grad=True)
    y = F.layer_norm(torch.tensor(x), (6,), tw, tb, 1e-5)
    y.backward(torch.tensor(seed))
    np.testing.assert_allclose(out["output"], y.detach().numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(grads["weight"], tw.grad.numpy(), rtol=1e-10)
    np.testing.assert_allclose(grads["bias"], tb.grad.numpy(), rtol=1e-10)


def test_batch_norm_inference(backend64, rng):
    x = rng.standard_normal((2, 3, 4, 4))
    mean, var = rng.standard_normal(3), rng.uniform(0.5, 2, 3)
    w, b = rng.standard_normal(3), rng.standard_normal(3)
    model = M.BatchNorm2D(3)
    pm = ml.compile(model, backend64, shapes={"input": [2, 3, 4, 4]})
    out = pm.evaluate({"weight": w, "bias": b},
                      {"input": x, "running_mean": mean, "running_var": var})
    ref = F.batch_norm(torch.tensor(x), torch.tensor(mean), torch.tensor(var), torch.tensor(w),
                       torch.tensor(b), False, 0.0, 1e-5)
    np.testing.assert_allclose(out["output"], ref.numpy(), rtol=1e-10)


@pytest.mark.parametrize("use_scale, use_bias", [(True, True), (False, True), (True, False),
                                                  (False, False)])
def test_batch_norm_training_form_is_torchs(backend64, rng, use_scale, use_bias):
    """inference=False: the batch's statistics, and the running ones updated
    with momentum (unbiased variance), as torch's training mode; gradients of
    the input and the parameters through the batch statistics."""
    x = rng.standard_normal((4, 3, 5, 5))
    mean, var = rng.standard_normal(3), rng.uniform(0.5, 2, 3)
    w, b = rng.standard_normal(3), rng.standard_normal(3)
    seed = rng.standard_normal((4, 3, 5, 5))
    model = M.BatchNorm2D(3, use_scale, use_bias, momentum=0.2, inference=False)
    pm = ml.compile(model, backend64, shapes={"input": [4, 3, 5, 5]}, trainable_keys=["input"])
    assert sorted(pm.output_keys) == ["output", "running_mean_out", "running_var_out"]
    params = {"input": x} | ({"weight": w} if use_scale else {}) | ({"bias": b} if use_bias else {})
    assert sorted(pm.state_keys) == ["running_mean", "running_var"]
    np.testing.assert_array_equal(pm.initial_state_dict["running_var"], np.ones(3))
    out, grads, state = pm.evaluate(params, {}, output_gradients={"output": seed},
                                    state={"running_mean": mean, "running_var": var})
    t = {k: torch.tensor(v, requires_grad=True) for k, v in params.items()}
    running_mean, running_var = torch.tensor(mean), torch.tensor(var)
    ref = F.batch_norm(t["input"], running_mean, running_var, t.get("weight"), t.get("bias"),
                       True, 0.2, 1e-5)
    ref.backward(torch.tensor(seed))
    np.testing.assert_allclose(out["output"], ref.detach().numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(state["running_mean"], running_mean.numpy(), rtol=1e-12)
    np.testing.assert_allclose(state["running_var"], running_var.numpy(), rtol=1e-12)
    assert sorted(out) == ["output"]
    with pytest.raises(ml.KeyNotFoundError, match="are state keys of the model"):
        pm.evaluate(params, {"running_mean": mean, "running_var": var})
    for key in params:
        np.testing.assert_allclose(grads[key], t[key].grad.numpy(), rtol=1e-9, atol=1e-11)


def test_batch_norm_inference_without_scale_or_bias(backend64, rng):
    x = rng.standard_normal((2, 3, 4, 4))
    mean, var = rng.standard_normal(3), rng.uniform(0.5, 2, 3)
    pm = ml.compile(M.BatchNorm2D(3, use_scale=False, use_bias=False), backend64,
                    shapes={"input": [2, 3, 4, 4]})
    assert pm.trainable_keys == []
    out = pm.evaluate({}, {"input": x, "running_mean": mean, "running_var": var})
    ref = F.batch_norm(torch.tensor(x), torch.tensor(mean), torch.tensor(var), eps=1e-5)
    np.testing.assert_allclose(out["output"], ref.numpy(), rtol=1e-10)
    with pytest.raises(ml.MithrilError, match="needs num_features"):
        M.BatchNorm2D(use_bias=False)


def test_embedding_forward(backend64, rng):
    ids = rng.integers(0, 10, (3, 5))
    table = rng.standard_normal((10, 4))
    pm = ml.compile(M.Embedding(10, 4), backend64, shapes={"input": [3, 5]})
    out = pm.evaluate({"weight": table}, {"input": ids})
    np.testing.assert_allclose(out["output"], table[ids])


def test_mlp_and_rnn_cell(backend64, rng):
    mlp = M.MLP(activations=["relu", "tanh", None], dimensions=[8, 6, 2])
    pm = ml.compile(mlp, backend64, shapes={"input": [4, 5]})
    params = pm.randomize_params(seed=0)
    x = rng.standard_normal((4, 5))
    out = pm.evaluate(params, {"input": x})["output"]
    h = np.maximum(x @ params["weight0"].T + params["bias0"], 0)
    h = np.tanh(h @ params["weight1"].T + params["bias1"])
    np.testing.assert_allclose(out, h @ params["weight2"].T + params["bias2"], rtol=1e-12)

    cell = M.RNNCell()
    pm = ml.compile(cell, backend64, shapes={"input": [2, 4], "prev_hidden": [2, 3],
                                              "w_ih": [3, 4], "w_ho": [5, 3]})
    p = pm.randomize_params(seed=1)
    x, hid = rng.standard_normal((2, 4)), rng.standard_normal((2, 3))
    out = pm.evaluate(p, {"input": x, "prev_hidden": hid})
    h = np.tanh(x @ p["w_ih"].T + hid @ p["w_hh"].T + p["bias_h"])
    np.testing.assert_allclose(out["hidden"], h, rtol=1e-12)
    np.testing.assert_allclose(out["output"], h @ p["w_ho"].T + p["bias_o"], rtol=1e-12)


@pytest.mark.parametrize("stride,padding,dilation,groups", [
    (1, 0, 1, 1), (2, 1, 1, 1), (1, 2, 2, 1), (2, 1, 1, 2)])
def test_conv2d_gradients(stride, padding, dilation, groups, backend64, rng):
    x = rng.standard_normal((2, 4, 9, 8))
    w, b = rng.standard_normal((6, 4 // groups, 3, 3)), rng.standard_normal(6)
    conv = M.Convolution2D(kernel_size=3, out_channels=6, stride=stride, padding=padding,
                           dilation=dilation, groups=groups)
    tx, tw, tb = (torch.tensor(v, requires_grad=True) for v in (x, w, b))
    y = F.conv2d(tx, tw, tb, stride, padding, dilation, groups)
    seed = rng.standard_normal(tuple(y.shape))
    y.backward(torch.tensor(seed))
    pm = ml.compile(conv, backend64, shapes={"input": list(x.shape)}, trainable_keys=["input"])
    out, grads = pm.evaluate({"input": x, "weight": w, "bias": b},
                             output_gradients={"output": seed})
    np.testing.assert_allclose(out["output"], y.detach().numpy(), rtol=1e-11, atol=1e-12)
    np.testing.assert_allclose(grads["input"], tx.grad.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(grads["weight"], tw.grad.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(grads["bias"], tb.grad.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("factory,fn", [
    (lambda: M.MaxPool2D(kernel_size=2), lambda t: F.max_pool2d(t, 2)),
    (lambda: M.MaxPool2D(kernel_size=3, stride=2, padding=1), lambda t: F.max_pool2d(t, 3, 2, 1)),
    (lambda: M.AvgPool2D(kernel_size=2), lambda t: F.avg_pool2d(t, 2)),
    (lambda: M.AvgPool2D(kernel_size=3, stride=1, padding=1), lambda t: F.avg_pool2d(t, 3, 1, 1)),
    (lambda: M.MaxPool1D(kernel_size=3), None),
])
def test_pool_gradients(factory, fn, backend64, rng):
    model = factory()
    one_d = fn is None
    x = rng.standard_normal((2, 3, 9) if one_d else (2, 3, 8, 8))
    if one_d:
        fn = lambda t: F.max_pool1d(t, 3)
    tx = torch.tensor(x, requires_grad=True)
    y = fn(tx)
    seed = rng.standard_normal(tuple(y.shape))
    y.backward(torch.tensor(seed))
    pm = ml.compile(model, backend64, shapes={"input": list(x.shape)}, trainable_keys=["input"])
    out, grads = pm.evaluate({"input": x}, output_gradients={"output": seed})
    np.testing.assert_allclose(out["output"], y.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(grads["input"], tx.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_embedding_gradients(backend64, rng):
    ids = rng.integers(0, 6, (3, 5))
    table = rng.standard_normal((6, 4))
    seed = rng.standard_normal((3, 5, 4))
    pm = ml.compile(M.Embedding(6, 4), backend64, shapes={"input": [3, 5]})
    out, grads = pm.evaluate({"weight": table}, {"input": ids}, output_gradients={"output": seed})
    tt = torch.tensor(table, requires_grad=True)
    F.embedding(torch.tensor(ids), tt).backward(torch.tensor(seed))
    np.testing.assert_allclose(grads["weight"], tt.grad.numpy(), rtol=1e-12)


def test_cnn_training_gradients(backend32, rng):
    """A small CNN end to end in float32: conv, relu, pool, flatten, linear."""
    model = M.Model()
    model |= M.Convolution2D(kernel_size=3, out_channels=4, padding=1).connect(input="input")
    model += M.Relu()
    model += M.MaxPool2D(kernel_size=2)
    model += M.Flatten(start_dim=1)
    model += M.Linear(3).connect(output="output")
    pm = ml.compile(model, backend32, shapes={"input": [2, 1, 6, 6]})
    params = pm.randomize_params(seed=0)
    x = rng.standard_normal((2, 1, 6, 6)).astype(np.float32)
    seed = rng.standard_normal((2, 3)).astype(np.float32)
    out, grads = pm.evaluate(params, {"input": x}, output_gradients={"output": seed})
    names = sorted(params)
    conv_w = [k for k in names if k.endswith("weight") and params[k].ndim == 4][0]
    lin_w = [k for k in names if k.endswith("weight") and params[k].ndim == 2][0]
    conv_b, lin_b = conv_w[:-6] + "bias", lin_w[:-6] + "bias"
    t = {k: torch.tensor(v, requires_grad=True) for k, v in params.items()}
    h = F.max_pool2d(torch.relu(F.conv2d(torch.tensor(x), t[conv_w], t[conv_b], padding=1)), 2)
    y = F.linear(h.flatten(1), t[lin_w], t[lin_b])
    y.backward(torch.tensor(seed))
    np.testing.assert_allclose(out["output"], y.detach().numpy(), rtol=1e-4, atol=1e-5)
    for k in names:
        np.testing.assert_allclose(grads[k], t[k].grad.numpy(), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("padding,pads", [
    ("same", (1, 1)), ("valid", (0, 0)), ((0, 1), (0, 1)), (2, (2, 2))])
def test_conv1d_padding_forms_match_torch(padding, pads):
    import torch.nn.functional as F
    rng = np.random.default_rng(11)
    x = rng.standard_normal((2, 3, 7))
    model = M.Convolution1D(kernel_size=3, out_channels=4, padding=padding)
    pm = ml.compile(model, ml.MlirBackend(dtype=ml.float64), shapes={"input": [2, 3, 7]})
    params = pm.randomize_params(seed=2)
    out = pm.evaluate(params, {"input": x})["output"]
    want = F.conv1d(F.pad(torch.tensor(x), pads), torch.tensor(params["weight"]),
                    torch.tensor(params["bias"]))
    np.testing.assert_allclose(out, want.numpy(), rtol=1e-12)


def test_maxpool2d_per_side_padding_matches_torch():
    import torch.nn.functional as F
    x = np.arange(25.0).reshape(1, 1, 5, 5)
    model = M.MaxPool2D(kernel_size=2, padding=((1, 0), (0, 1)))
    pm = ml.compile(model, ml.MlirBackend(dtype=ml.float64), shapes={"input": [1, 1, 5, 5]})
    out = pm.evaluate({}, {"input": x})["output"]
    padded = F.pad(torch.tensor(x), (0, 1, 1, 0), value=-np.inf)
    np.testing.assert_array_equal(out, F.max_pool2d(padded, 2).numpy())


def test_padding_errors_name_the_problem():
    with pytest.raises(ml.MithrilError, match="odd kernel"):
        M.Convolution2D(kernel_size=2, out_channels=1, padding="same")
    with pytest.raises(ml.MithrilError, match="expected 2 padding values"):
        M.MaxPool2D(kernel_size=2, padding=(1, 1, 1))


@pytest.mark.parametrize("kernel,stride,padding", [
    (5, 3, 2), ((5, 4), (3, 2), (1, 2)), (2, 2, 0), (3, 4, 1)])
def test_strided_conv2d_phases(kernel, stride, padding, backend64, rng):
    """Strided convolutions and their gradients run as one stride-1
    convolution per phase of the stride, including phases no kernel row meets
    (stride above the kernel) and input rows no output reads."""
    kh, kw = (kernel, kernel) if isinstance(kernel, int) else kernel
    check_conv2d(backend64, rng.standard_normal((2, 3, 17, 19)),
                 rng.standard_normal((5, 3, kh, kw)), rng.standard_normal(5), rng,
                 stride=stride, padding=padding)


@pytest.mark.parametrize("groups,stride,dilation", [(2, 1, 1), (4, 2, 1), (2, 1, 2)])
def test_grouped_conv2d_per_group(groups, stride, dilation, backend64, rng):
    """Groups of at least 8 input and output channels run as one ungrouped
    convolution per group, gradients included."""
    check_conv2d(backend64, rng.standard_normal((2, 32, 11, 13)),
                 rng.standard_normal((32, 32 // groups, 3, 3)), rng.standard_normal(32), rng,
                 stride=stride, padding=1, dilation=dilation, groups=groups)
