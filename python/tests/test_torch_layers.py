# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""The torch.nn-style layers of mithril.models.torch_layers against torch.nn
modules with the same parameters, in float64: outputs and gradients, the
models of the Mithril documents (docs/conformance.md, "torch-style layers"),
and the constructor checks. Mithril's namesakes keep their meaning."""

import numpy as np
import pytest
import torch

import mithril as ml
from mithril import models as M
from mithril.models import Add, Model, Relu
from mithril.models.torch_layers import (AvgPool2d, BatchNorm2d, Conv2d, Flatten,
                                         GlobalAvgPool2d, Linear, MaxPool2d, ReLU)

nn = torch.nn
RTOL, ATOL = 1e-10, 1e-11


@pytest.fixture(autouse=True)
def _torch_seed():
    torch.manual_seed(0)


def randomize(module: nn.Module) -> nn.Module:
    """float64, with random affine parameters and running statistics in its
    batch norms (a fresh torch batch norm has weight 1, bias 0, mean 0, var 1),
    in evaluation form."""
    module = module.double().eval()
    with torch.no_grad():
        for m in module.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.running_mean.normal_()
                m.running_var.uniform_(0.5, 2.0)
                if m.affine:
                    m.weight.uniform_(0.5, 1.5)
                    m.bias.normal_()
    return module


def compare(model, torch_fn, inputs: dict, params: dict, backend, rng, output="output"):
    """Compiles `model`, feeds it `inputs` (trainable, to get their gradients)
    and `params` (mithril name -> torch tensor of the torch module), and
    compares the output and every gradient with torch_fn(*inputs)."""
    tin = {k: torch.tensor(v, requires_grad=True) for k, v in inputs.items()}
    ref = torch_fn(*tin.values())
    seed = rng.standard_normal(tuple(ref.shape))
    ref.backward(torch.tensor(seed))
    pm = ml.compile(model, backend, shapes={k: list(v.shape) for k, v in inputs.items()},
                    trainable_keys=list(inputs))
    assert sorted(pm.trainable_keys) == sorted([*inputs, *params])
    given = {**inputs, **{k: p.detach().numpy().copy() for k, p in params.items()}}
    out, grads = pm.evaluate(given, output_gradients={output: seed})
    np.testing.assert_allclose(out[output], ref.detach().numpy(), rtol=RTOL, atol=ATOL)
    for key, tensor in [*tin.items(), *params.items()]:
        np.testing.assert_allclose(grads[key], tensor.grad.numpy(), rtol=RTOL, atol=ATOL,
                                   err_msg=f"gradient of {key}")
    return pm


# Layers one by one ---------------------------------------------------------

@pytest.mark.parametrize("args,kwargs,torch_kwargs", [
    ((3, 5), dict(kernel_size=3), dict(kernel_size=3)),  # torch's default padding 0
    ((3, 5), dict(), dict(kernel_size=3, padding=1)),  # no kernel size: 3x3, padding 1
    ((4, 6), dict(kernel_size=(3, 2), stride=(2, 1), padding=(1, 0)),
     dict(kernel_size=(3, 2), stride=(2, 1), padding=(1, 0))),
    ((4, 6), dict(kernel_size=3, dilation=2, groups=2, bias=False),
     dict(kernel_size=3, dilation=2, groups=2, bias=False)),
    ((3, 4), dict(kernel_size=(4, 3), dilation=(1, 2), padding="same"),
     dict(kernel_size=(4, 3), dilation=(1, 2), padding="same")),
    ((3, 4), dict(kernel_size=3, padding="valid"), dict(kernel_size=3, padding="valid")),
    ((3, 4), dict(dilation=2), dict(kernel_size=3, dilation=2, padding=2)),
])
@pytest.mark.filterwarnings("ignore:Using padding='same' with even kernel")
def test_conv2d(args, kwargs, torch_kwargs, backend64, rng):
    ref = nn.Conv2d(*args, **torch_kwargs).double()
    params = {"weight": ref.weight} | ({"bias": ref.bias} if ref.bias is not None else {})
    x = rng.standard_normal((2, args[0], 9, 8))
    pm = compare(Conv2d(*args, **kwargs), ref, {"input": x}, params, backend64, rng)
    assert pm.shapes["weight"] == tuple(ref.weight.shape)


def test_conv2d_keyword_names_and_fixed_channels(backend64):
    conv = Conv2d(in_channels=16, out_channels=32)
    assert (conv.in_channels, conv.out_channels, conv.kernel_size) == (16, 32, (3, 3))
    pm = ml.compile(conv, backend64, shapes={"input": [1, 16, 5, 5]})
    assert pm.shapes["output"] == (1, 32, 5, 5)
    # in_channels fixes the input's channels: any other count is an error.
    with pytest.raises(ml.MithrilError):
        ml.compile(Conv2d(16, 32), backend64, shapes={"input": [1, 8, 5, 5]})


@pytest.mark.parametrize("make,error,message", [
    (lambda: Conv2d(4, 6, groups=4), ml.ShapeError, "divisible by groups"),
    (lambda: Conv2d(0, 6), ml.ShapeError, "'in_channels' must be at least 1"),
    (lambda: Conv2d(3, 4, stride=2, padding="same"), ml.MithrilError, "strided"),
    (lambda: Conv2d(3, 4, padding="full"), ml.MithrilError, "'same', 'valid'"),
    (lambda: Conv2d(3, 4, padding_mode="reflect"), ml.MithrilError, "padding_mode"),
    (lambda: Conv2d(3, 4, kernel_size=True), TypeError, "'kernel_size' must be an int"),
    (lambda: Conv2d(3, 4, kernel_size=(3, 3, 3)), TypeError, "tuple of 2 ints"),
    (lambda: Conv2d(3, True), TypeError, "'out_channels' must be an int"),
    (lambda: Conv2d(3, 4, bias=1), TypeError, "'bias' must be a bool"),
    (lambda: Conv2d(3, 4, kernal_size=3), TypeError, "'kernal_size'; did you mean 'kernel_size'"),
    (lambda: BatchNorm2d(0), ml.ShapeError, "num_features"),
    (lambda: BatchNorm2d(4, track_running_stats=False), TypeError, "'track_running_stats'"),
    (lambda: MaxPool2d(2, ceil_mode=True), ml.MithrilError, "ceil_mode"),
    (lambda: MaxPool2d(2, padding=2), ml.ShapeError, "at most half"),
    (lambda: MaxPool2d(2, return_indices=True), TypeError, "'return_indices'"),
    (lambda: AvgPool2d(3, padding=1, count_include_pad=False), ml.MithrilError,
     "count_include_pad"),
    (lambda: AvgPool2d(2, divisor_override=3), TypeError, "'divisor_override'"),
    (lambda: Linear(4), TypeError, "out_features"),
    (lambda: Linear(4, 2, use_bias=False), TypeError, "'use_bias'; did you mean 'bias'"),
    (lambda: Flatten(start=1), TypeError, "'start'; did you mean 'start_dim'"),
    (lambda: GlobalAvgPool2d(axis=1), TypeError, "unexpected keyword argument 'axis'"),
    (lambda: ReLU(inplce=True), TypeError, "'inplce'; did you mean 'inplace'"),
])
def test_constructor_checks(make, error, message):
    with pytest.raises(error, match=message):
        make()


@pytest.mark.parametrize("cls,args", [
    (Conv2d, (3, 4)), (BatchNorm2d, (4,)), (ReLU, ()), (MaxPool2d, ()), (AvgPool2d, ()),
    (GlobalAvgPool2d, ()), (Flatten, ()), (Linear, (4, 2))])
def test_unknown_keyword_names_the_class_and_argument(cls, args):
    cls(*args)
    with pytest.raises(TypeError, match=rf"^{cls.__name__}\(\) got an unexpected keyword "
                                        r"argument 'no_such_arg'"):
        cls(*args, no_such_arg=1)


@pytest.mark.parametrize("affine", [True, False])
def test_batch_norm_against_torch_eval(affine, backend64, rng):
    ref = randomize(nn.BatchNorm2d(4, eps=1e-3, affine=affine))
    bn = BatchNorm2d(4, eps=1e-3, affine=affine)
    bn.running_mean[:] = ref.running_mean.numpy()  # in place, as a torch buffer
    bn.running_var = ref.running_var.numpy()  # or assigned
    params = {"weight": ref.weight, "bias": ref.bias} if affine else {}
    pm = compare(bn, ref, {"input": rng.standard_normal((3, 4, 5, 5))}, params, backend64, rng)
    # The running statistics are the layer's state, not inputs to feed.
    assert "running_mean" not in pm.input_keys and "running_var" not in pm.input_keys


def test_batch_norm_starts_as_a_fresh_torch_module(backend64, rng):
    bn = BatchNorm2d(3)
    np.testing.assert_array_equal(bn.running_mean, np.zeros(3))
    np.testing.assert_array_equal(bn.running_var, np.ones(3))
    assert (bn.eps, bn.momentum) == (1e-5, 0.1)
    ref = nn.BatchNorm2d(3).double().eval()
    with torch.no_grad():
        ref.weight.uniform_(0.5, 1.5)
        ref.bias.normal_()
    compare(bn, ref, {"input": rng.standard_normal((2, 3, 4, 4))},
            {"weight": ref.weight, "bias": ref.bias}, backend64, rng)
    with pytest.raises(ml.ShapeError, match=r"running_var must have shape \(3,\)"):
        bn.running_var = np.ones(4)


def test_batch_norm_keeps_mithrils_inputs_form(backend64):
    # Mithril's BatchNorm2D still takes the running statistics as inputs.
    pm = ml.compile(M.BatchNorm2D(3), backend64, shapes={"input": [2, 3, 4, 4]})
    assert {"running_mean", "running_var"} <= set(pm.input_keys)


@pytest.mark.parametrize("make,ref", [
    (lambda: ReLU(), lambda: nn.ReLU()),
    (lambda: ReLU(inplace=True), lambda: nn.ReLU()),
    (lambda: MaxPool2d(), lambda: nn.MaxPool2d(2)),
    (lambda: MaxPool2d(3, stride=2, padding=1), lambda: nn.MaxPool2d(3, 2, 1)),
    (lambda: MaxPool2d((3, 2), stride=1, dilation=(1, 2)),
     lambda: nn.MaxPool2d((3, 2), 1, dilation=(1, 2))),
    (lambda: AvgPool2d(), lambda: nn.AvgPool2d(2)),
    (lambda: AvgPool2d(3, stride=2, padding=1), lambda: nn.AvgPool2d(3, 2, 1)),
    (lambda: AvgPool2d(2, count_include_pad=False),
     lambda: nn.AvgPool2d(2, count_include_pad=False)),
    (lambda: GlobalAvgPool2d(), lambda: (lambda t: t.mean((2, 3)))),
    (lambda: GlobalAvgPool2d(), lambda: nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten())),
    (lambda: Flatten(), lambda: nn.Flatten()),
    (lambda: Flatten(start_dim=2), lambda: nn.Flatten(start_dim=2)),
    (lambda: Flatten(0, 2), lambda: nn.Flatten(0, 2)),
])
def test_parameterless_layers(make, ref, backend64, rng):
    # Distinct values: the maximum of each window is unique.
    x = rng.permutation(2 * 3 * 7 * 6).reshape(2, 3, 7, 6) / 10.0 - 12.0
    compare(make(), ref(), {"input": x}, {}, backend64, rng)


def test_global_avg_pool_and_flatten_shapes(backend64):
    pm = ml.compile(GlobalAvgPool2d(), backend64, shapes={"input": [5, 7, 3, 2]})
    assert pm.shapes["output"] == (5, 7)
    pm = ml.compile(Flatten(), backend64, shapes={"input": [5, 7, 3, 2]})
    assert pm.shapes["output"] == (5, 42)
    # Mithril's Flatten keeps its default: everything to 1-D.
    pm = ml.compile(M.Flatten(), backend64, shapes={"input": [5, 7, 3, 2]})
    assert pm.shapes["output"] == (210,)
    assert M.Flatten is not Flatten and M.Linear is not Linear


@pytest.mark.parametrize("bias", [True, False])
def test_linear(bias, backend64, rng):
    ref = nn.Linear(6, 3, bias=bias).double()
    params = {"weight": ref.weight} | ({"bias": ref.bias} if bias else {})
    layer = Linear(in_features=6, out_features=3, bias=bias)
    compare(layer, ref, {"input": rng.standard_normal((4, 6))}, params, backend64, rng)
    # Mithril's Linear keeps its forms.
    pm = ml.compile(M.Linear(dimension=3), backend64, shapes={"input": [4, 6]})
    assert pm.shapes["weight"] == (3, 6)


def test_exports():
    for name in ("Conv2d", "BatchNorm2d", "ReLU", "MaxPool2d", "AvgPool2d", "GlobalAvgPool2d"):
        assert getattr(M, name) is getattr(M.torch_layers, name)
        assert name in M.__all__
    # The torch Flatten and Linear are only in torch_layers.
    assert M.Flatten is not M.torch_layers.Flatten
    assert M.Linear is not M.torch_layers.Linear


# The documents' models ------------------------------------------------------

def test_documents_small_cnn(backend64, rng):
    """The documents' terminal-naming CNN, with the batch norm and ReLU:
    Conv2d -> BatchNorm2d -> ReLU -> MaxPool2d -> Flatten -> Linear."""
    model = Model()
    model |= Conv2d(3, 64)(input="image", output="features")
    model += BatchNorm2d(64)(input="features", output="normed")
    model += ReLU()(input="normed", output="activated")
    model += MaxPool2d()(input="activated", output="pooled")
    model += Flatten()(input="pooled", output="flat_features")
    model += Linear(64 * 7 * 7, 10)(input="flat_features", output="logits")
    bn = model.submodels[1][0]

    ref = randomize(nn.Sequential(nn.Conv2d(3, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(),
                                  nn.MaxPool2d(2), nn.Flatten(), nn.Linear(64 * 7 * 7, 10)))
    bn.running_mean[:] = ref[1].running_mean.numpy()
    bn.running_var[:] = ref[1].running_var.numpy()
    params = {"conv2d_0.weight": ref[0].weight, "conv2d_0.bias": ref[0].bias,
              "batchnorm2d_0.weight": ref[1].weight, "batchnorm2d_0.bias": ref[1].bias,
              "linear_0.weight": ref[5].weight, "linear_0.bias": ref[5].bias}
    pm = compare(model, ref, {"image": rng.standard_normal((2, 3, 14, 14))}, params,
                 backend64, rng, output="logits")
    assert pm.shapes["logits"] == (2, 10)


def test_documents_terminal_snippet_shapes(backend64):
    """Conv2d(3, 64) keeps 14x14, so that MaxPool2d() and Flatten() give the
    64 * 7 * 7 features that the documents' Linear takes."""
    model = Model()
    model |= Conv2d(3, 64)(input="image", output="features")
    model += MaxPool2d()(input="features", output="pooled")
    model += Flatten()(input="pooled", output="flat_features")
    model += Linear(64 * 7 * 7, 10)(input="flat_features", output="logits")
    pm = ml.compile(model, backend64, shapes={"image": [4, 3, 14, 14]})
    assert pm.shapes["logits"] == (4, 10)


def residual_block() -> Model:
    """The documents' residual block, as they write it."""
    res_block = Model()
    res_block |= Conv2d(64, 64)(output="conv1")
    res_block += BatchNorm2d(64)(input="conv1", output="bn1")
    res_block += ReLU()(input="bn1", output="relu1")
    res_block += Conv2d(64, 64)(input="relu1", output="conv2")
    res_block += Add()(left="input", right="conv2", output="output")
    return res_block


class TorchResidual(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1, self.bn1 = nn.Conv2d(64, 64, 3, padding=1), nn.BatchNorm2d(64)
        self.conv2 = nn.Conv2d(64, 64, 3, padding=1)

    def forward(self, x):
        return x + self.conv2(torch.relu(self.bn1(self.conv1(x))))


def test_documents_residual_network(backend64, rng):
    res_block = residual_block()
    assert res_block.input_keys == ["input"] and res_block.output_keys == ["output"]
    model = Model()
    model |= Conv2d(3, 64)
    model += res_block  # First residual block
    # Added a second time: a fresh copy, with its own parameters.
    model += res_block  # Second residual block (same definition)
    model += GlobalAvgPool2d()
    model += Linear(64, 10)

    ref = randomize(nn.ModuleList([nn.Conv2d(3, 64, 3, padding=1), TorchResidual(),
                                   TorchResidual(), nn.Linear(64, 10)]))

    def torch_fn(x):
        return ref[3](ref[2](ref[1](ref[0](x))).mean((2, 3)))

    params = {"conv2d_0.weight": ref[0].weight, "conv2d_0.bias": ref[0].bias,
              "linear_0.weight": ref[3].weight, "linear_0.bias": ref[3].bias}
    for i, block in ((0, ref[1]), (1, ref[2])):
        model_bn = model.submodels[i + 1][0].submodels[1][0]
        model_bn.running_mean[:] = block.bn1.running_mean.numpy()
        model_bn.running_var[:] = block.bn1.running_var.numpy()
        params |= {f"model_{i}.conv2d_0.weight": block.conv1.weight,
                   f"model_{i}.conv2d_0.bias": block.conv1.bias,
                   f"model_{i}.batchnorm2d_0.weight": block.bn1.weight,
                   f"model_{i}.batchnorm2d_0.bias": block.bn1.bias,
                   f"model_{i}.conv2d_1.weight": block.conv2.weight,
                   f"model_{i}.conv2d_1.bias": block.conv2.bias}
    output = model.output_keys[0]
    compare(model, torch_fn, {"input": rng.standard_normal((2, 3, 6, 6))}, params,
            backend64, rng, output=output)


def test_documents_compilation_snippet(backend64, rng):
    """Conv2d(3, 64, kernel_size=3) -> BatchNorm2d -> Relu -> Conv2d(64, 128,
    kernel_size=3) -> GlobalAvgPool2d -> Linear(128, 10), Mithril's Relu
    among the torch-style layers as the documents write it."""
    model = Model()
    model |= Conv2d(3, 64, kernel_size=3)
    model += BatchNorm2d(64)
    model += Relu()
    model += Conv2d(64, 128, kernel_size=3)
    model += GlobalAvgPool2d()
    model += Linear(128, 10)
    ref = randomize(nn.Sequential(nn.Conv2d(3, 64, 3), nn.BatchNorm2d(64), nn.ReLU(),
                                  nn.Conv2d(64, 128, 3), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                                  nn.Linear(128, 10)))
    bn = model.submodels[1][0]
    bn.running_mean[:] = ref[1].running_mean.numpy()
    bn.running_var[:] = ref[1].running_var.numpy()
    params = {"conv2d_0.weight": ref[0].weight, "conv2d_0.bias": ref[0].bias,
              "batchnorm2d_0.weight": ref[1].weight, "batchnorm2d_0.bias": ref[1].bias,
              "conv2d_1.weight": ref[3].weight, "conv2d_1.bias": ref[3].bias,
              "linear_0.weight": ref[6].weight, "linear_0.bias": ref[6].bias}
    compare(model, ref, {"input": rng.standard_normal((2, 3, 8, 8))}, params, backend64, rng,
            output=model.output_keys[0])


def test_documents_keyword_conv_in_a_chain(backend64):
    """`model += Conv2d(in_channels=16, out_channels=32)(input="layer1",
    output="layer2")` after the documents' Linear and Relu."""
    model = Model()
    model |= M.Linear(dimension=64)
    model += Relu()
    model += Conv2d(in_channels=16, out_channels=32)(input="layer1", output="layer2")
    pm = ml.compile(model, backend64, shapes={"input": [2, 5], "layer1": [2, 16, 6, 6]})
    assert pm.shapes["layer2"] == (2, 32, 6, 6)


def test_activation_names_stay_mithrils():
    # "relu" names Mithril's Relu (ReLU and Relu read the same in any case);
    # the exact torch name gives the torch-style layer.
    assert type(M.Layer(activation="relu").submodels[1][0]) is M.Relu
    mlp = M.MLP(activations=["relu", "Relu"], dimensions=[3, 2])
    assert [type(sub) for sub, _ in mlp.submodels if not isinstance(sub, M.Linear)] == \
        [M.Relu, M.Relu]
    assert type(M.Layer(activation="ReLU").submodels[1][0]) is ReLU
