# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""The models of mithril.models.reference (the original's AtLeast1D,
CartesianDifference, Trapezoid, ElementWiseAffine, EyeComplement, Length,
TensorToList, PrimitiveUnion, the padding, stride and tuple converters, the
primitive convolutions and pools, Metric and AUCCore) against numpy or torch
in float64: outputs, the gradients of what is differentiable, terminal names,
and the errors bad arguments give."""

import enum

import numpy as np
import pytest
import torch

import mithril as ml
from mithril import IOKey, Tensor
from mithril.errors import MithrilError
from mithril.framework import Model
from mithril.models import (AUC, AUCCore, Arange, AtLeast1D, Buffer, CartesianDifference,
                            ElementWiseAffine, EyeComplement, Length, Metric, PaddingConverter1D,
                            PaddingConverter2D, PrimitiveAvgPool2D, PrimitiveConvolution1D,
                            PrimitiveConvolution2D, PrimitiveMaxPool1D, PrimitiveMaxPool2D,
                            PrimitiveUnion, Reshape, Size, StrideConverter, TensorToList, ToTuple,
                            Trapezoid, TupleConverter)
from torch_oracle import compile_eval, torch_run

F = torch.nn.functional
RTOL, ATOL = 1e-10, 1e-12


class PaddingType(enum.IntEnum):
    """The original's mithril.common.PaddingType (any enum named so works)."""
    VALID = 0
    SAME = 1


def backend():
    return ml.MlirBackend(dtype=ml.float64)


def run(model, data=None, shapes=None):
    """Outputs of `model` compiled for inference on `data`."""
    data = data or {}
    shapes = shapes or {k: list(np.shape(v)) for k, v in data.items() if not isinstance(v, list)}
    pm = ml.compile(model, backend(), shapes=shapes, inference=True)
    return pm.evaluate({}, data)


def wrapped(make, **connections):
    """A model holding `make()` with `connections` and its output exposed."""
    model = Model()
    model |= make()(**connections, output=IOKey("output"))
    return model


def check_against_torch(model, fn, data, params, rng, shapes=None):
    """Outputs of `model` and gradients of `params` equal torch's `fn`'s for
    a random seed of every output."""
    given = {k: torch.tensor(v) for k, v in {**data, **params}.items()}
    seeds = {k: rng.standard_normal(tuple(v.shape)) for k, v in fn(**given).items()}
    out, grads = compile_eval(model, backend(), data, params, seeds, shapes)
    want_out, want_grads = torch_run(fn, data, params, seeds)
    for key, value in want_out.items():
        np.testing.assert_allclose(out[key], value, rtol=RTOL, atol=ATOL, err_msg=key)
    for key, value in want_grads.items():
        np.testing.assert_allclose(grads[key], value, rtol=RTOL, atol=ATOL, err_msg=key)


# Terminals ------------------------------------------------------------------------------

@pytest.mark.parametrize("make, inputs, outputs", [
    (AtLeast1D, ["input"], ["output"]),
    (CartesianDifference, ["left", "right"], ["output"]),
    (Trapezoid, ["y", "x"], ["output"]),
    (ElementWiseAffine, ["input", "weight", "bias"], ["output"]),
    (EyeComplement, ["N"], ["output"]),
    (lambda: EyeComplement(N=3), [], ["output"]),
    (Length, ["input"], ["output"]),
    (TensorToList, ["input"], ["output"]),
    (PrimitiveUnion, ["input1"], ["output"]),
    (lambda: PrimitiveUnion(3), ["input1", "input2", "input3"], ["output"]),
    (PaddingConverter1D, ["input", "kernel_size"], ["output"]),
    (PaddingConverter2D, ["input", "kernel_size"], ["output"]),
    (StrideConverter, ["input", "kernel_size"], ["output"]),
    (TupleConverter, ["input"], ["output"]),
    (PrimitiveConvolution1D, ["input", "weight", "bias", "stride", "padding", "dilation"],
     ["output"]),
    (lambda: PrimitiveConvolution1D(use_bias=False),
     ["input", "weight", "stride", "padding", "dilation"], ["output"]),
    (PrimitiveConvolution2D,
     ["input", "weight", "bias", "stride", "padding", "dilation", "groups"], ["output"]),
    (PrimitiveMaxPool1D, ["input", "kernel_size", "stride", "padding", "dilation"], ["output"]),
    (PrimitiveMaxPool2D, ["input", "kernel_size", "stride", "padding", "dilation"], ["output"]),
    (PrimitiveAvgPool2D, ["input", "kernel_size", "stride", "padding", "dilation"], ["output"]),
    (Metric, ["label", "pred"], ["pred_formatted", "label_formatted", "output"]),
    (AUCCore, ["input", "label"], ["output"]),
])
def test_terminals(make, inputs, outputs):
    model = make()
    assert model.input_keys == inputs
    assert sorted(model.output_keys) == sorted(outputs)
    assert model.canonical_output == "output"


def test_values_given_to_constructors_are_no_longer_terminals():
    conv = PrimitiveConvolution2D(stride=1, padding=(1, 1), dilation=(1, 1), groups=1)
    assert conv.input_keys == ["input", "weight", "bias"]
    assert PrimitiveMaxPool1D(kernel_size=2, stride=2).input_keys == ["input", "padding",
                                                                      "dilation"]
    assert PaddingConverter1D(kernel_size=3).input_keys == ["input"]
    assert PrimitiveUnion(2, input1=(1, 2)).input_keys == ["input2"]


# AtLeast1D ------------------------------------------------------------------------------

@pytest.mark.parametrize("shape", [(), (1,), (3,), (2, 3)])
def test_atleast_1d(shape, rng):
    x = rng.standard_normal(shape)
    check_against_torch(AtLeast1D(), lambda input: {"output": torch.atleast_1d(input)}, {},
                        {"input": x}, rng)
    assert run(AtLeast1D(), {"input": x})["output"].shape == np.atleast_1d(x).shape


def test_atleast_1d_connection_method():
    model = Model()
    model |= Buffer()(input=IOKey("x").atleast_1d(), output=IOKey("output"))
    np.testing.assert_array_equal(run(model, {"x": np.array(2.5)})["output"], [2.5])


# CartesianDifference --------------------------------------------------------------------

@pytest.mark.parametrize("n, m, d", [(3, 4, 2), (1, 5, 3), (4, 1, 1)])
def test_cartesian_difference(n, m, d, rng):
    check_against_torch(CartesianDifference(),
                        lambda left, right: {"output": left[:, None, :] - right[None, :, :]},
                        {}, {"left": rng.standard_normal((n, d)),
                             "right": rng.standard_normal((m, d))}, rng)


@pytest.mark.parametrize("left, right", [([3], [3, 2]), ([3, 2], [4, 3]), ([2, 2, 2], [2, 2])])
def test_cartesian_difference_needs_matrices(left, right):
    with pytest.raises(MithrilError, match=r"CartesianDifference needs left \[N, d\]"):
        ml.compile(CartesianDifference(), backend(), shapes={"left": left, "right": right})


# Trapezoid ------------------------------------------------------------------------------

@pytest.mark.parametrize("y_shape, x_shape", [((5,), (5,)), ((3, 6), (6,)), ((2, 3, 4), (2, 3, 4)),
                                              ((2, 2), (2,))])
def test_trapezoid(y_shape, x_shape, rng):
    y = rng.standard_normal(y_shape)
    x = np.sort(rng.standard_normal(x_shape), axis=-1)
    check_against_torch(Trapezoid(), lambda y, x: {"output": torch.trapezoid(y, x, dim=-1)},
                        {}, {"y": y, "x": x}, rng)
    np.testing.assert_allclose(run(Trapezoid(), {"y": y, "x": x})["output"], np.trapz(y, x),
                               rtol=RTOL)


def test_trapezoid_errors():
    with pytest.raises(MithrilError, match="cannot broadcast"):
        ml.compile(Trapezoid(), backend(), shapes={"y": [2, 5], "x": [4]})


# ElementWiseAffine ----------------------------------------------------------------------

@pytest.mark.parametrize("x_shape, w_shape, b_shape", [((3, 4), (4,), (4,)), ((2, 3), (2, 3), ()),
                                                       ((5,), (), (5,))])
def test_elementwise_affine(x_shape, w_shape, b_shape, rng):
    params = {"input": rng.standard_normal(x_shape), "weight": rng.standard_normal(w_shape),
              "bias": rng.standard_normal(b_shape)}
    check_against_torch(ElementWiseAffine(),
                        lambda input, weight, bias: {"output": input * weight + bias},
                        {}, params, rng)


def test_elementwise_affine_weight_and_bias_are_trainable():
    pm = ml.compile(ElementWiseAffine(), backend(),
                    shapes={"input": [2, 3], "weight": [3], "bias": [3]})
    assert set(pm.randomize_params()) == {"weight", "bias"}


# EyeComplement --------------------------------------------------------------------------

@pytest.mark.parametrize("make, want", [
    (lambda: EyeComplement(N=3), np.ones((3, 3)) - np.eye(3)),
    (lambda: EyeComplement(N=2, M=4), np.ones((2, 4)) - np.eye(2, 4)),
    (lambda: EyeComplement(N=4, M=2, dtype=ml.int64),
     (np.ones((4, 2)) - np.eye(4, 2)).astype(np.int64)),
    (lambda: EyeComplement(N=0), np.zeros((0, 0))),
])
def test_eye_complement(make, want):
    out = run(wrapped(make))["output"]
    assert out.dtype == want.dtype
    np.testing.assert_array_equal(out, want)


def test_eye_complement_sizes_known_at_compile_time():
    model = Model()
    model |= Size(dim=0)(input="input", output="n")
    model |= Size(dim=1)(input="input", output="m")
    model |= EyeComplement(M=ml.TBD)(N="n", M="m", output=IOKey("output"))
    out = run(model, {"input": np.zeros((3, 5))})["output"]
    np.testing.assert_array_equal(out, np.ones((3, 5)) - np.eye(3, 5))


def test_eye_complement_errors():
    with pytest.raises(MithrilError, match="EyeComplement: N must be a non-negative int"):
        EyeComplement(N=-1)
    with pytest.raises(MithrilError, match="EyeComplement: M must be a non-negative int"):
        EyeComplement(N=2, M=1.5)
    with pytest.raises(MithrilError, match="EyeComplement's N must be known"):
        ml.compile(EyeComplement(), backend())


# Length and TensorToList ----------------------------------------------------------------

def test_length_of_tensors_tuples_and_lists():
    assert run(wrapped(Length, input="input"), {"input": np.zeros((5, 2))})["output"] == 5
    assert run(wrapped(Length, input=(4, 5, 6)))["output"] == 3
    model = Model()
    model |= ToTuple(3)(input1="a", input2="b", input3="c", output="t")
    model |= Length()(input="t", output=IOKey("output"))
    data = {"a": np.zeros(1), "b": np.zeros(2), "c": np.zeros(3)}
    assert run(model, data)["output"] == 3


def test_length_is_a_compile_time_int():
    """len(input) sizes an Arange, as a Python int would."""
    model = Model()
    model |= Length()(input="input", output="n")
    model |= Arange()(stop="n", output=IOKey("output"))
    out = run(model, {"input": np.zeros((4, 2))})["output"]
    np.testing.assert_array_equal(out, np.arange(4))


def test_length_errors():
    with pytest.raises(MithrilError, match="Length of a scalar"):
        ml.compile(Length(), backend(), shapes={"input": []})
    with pytest.raises(MithrilError, match="Length needs the size of axis 0 known"):
        ml.compile(Length(), backend(), shapes={"input": [None, 2]})


def test_tensor_to_list():
    model = Model()
    model |= Arange(stop=6)(output="a")
    model |= TensorToList()(input="a", output=IOKey("output"))
    np.testing.assert_array_equal(run(model)["output"], np.arange(6))
    # The list is a value known at compile time: here a shape.
    x = np.arange(6.0)
    model = Model()
    model |= TensorToList()(input=Tensor([2, 3]), output="sizes")
    model |= Reshape()(input="input", shape="sizes", output=IOKey("output"))
    np.testing.assert_array_equal(run(model, {"input": x})["output"], x.reshape(2, 3))


def test_tensor_to_list_needs_a_value_known_at_compile_time():
    with pytest.raises(MithrilError, match="TensorToList's input must be known"):
        ml.compile(TensorToList(), backend(), shapes={"input": [3]})


# PrimitiveUnion -------------------------------------------------------------------------

def test_primitive_union_joins_tuples_and_numbers():
    model = wrapped(lambda: PrimitiveUnion(3, input1=(1, 2)), input2=3, input3=(4, 5))
    np.testing.assert_array_equal(run(model)["output"], [1, 2, 3, 4, 5])
    np.testing.assert_array_equal(run(wrapped(PrimitiveUnion, input1=(7,)))["output"], [7])


def test_primitive_union_of_sizes_is_a_shape():
    model = Model()
    x = IOKey("input")
    model |= PrimitiveUnion(2)(input1=x.shape[0], input2=(-1,), output="shape")
    model |= Reshape()(input=x, shape="shape", output=IOKey("output"))
    assert run(model, {"input": np.zeros((2, 3, 4))})["output"].shape == (2, 12)


def test_primitive_union_errors():
    with pytest.raises(MithrilError, match="PrimitiveUnion: n must be a positive int"):
        PrimitiveUnion(0)
    with pytest.raises(TypeError, match="unexpected keyword argument 'input3'"):
        PrimitiveUnion(2, input3=1)
    with pytest.raises(TypeError, match="argument 'input1' must be a number or a tuple"):
        PrimitiveUnion(1, input1="x")
    with pytest.raises(MithrilError, match="PrimitiveUnion's input1 must be known"):
        ml.compile(PrimitiveUnion(), backend())


# Converters -----------------------------------------------------------------------------

@pytest.mark.parametrize("make, want", [
    (lambda: PaddingConverter1D(kernel_size=3, input=2), (2, 2)),
    (lambda: PaddingConverter1D(kernel_size=3, input=(1, 2)), (1, 2)),
    (lambda: PaddingConverter1D(kernel_size=5, input=PaddingType.SAME), (2, 2)),
    (lambda: PaddingConverter1D(kernel_size=4, input=PaddingType.VALID), (0, 0)),
    (lambda: PaddingConverter1D(kernel_size=3, input="same"), (1, 1)),
    (lambda: PaddingConverter2D(kernel_size=3, input=1), ((1, 1), (1, 1))),
    (lambda: PaddingConverter2D(kernel_size=3, input=(1, 2)), ((1, 1), (2, 2))),
    (lambda: PaddingConverter2D(kernel_size=3, input=((1, 2), (3, 4))), ((1, 2), (3, 4))),
    (lambda: PaddingConverter2D(kernel_size=3, input=(1, (3, 4))), ((1, 1), (3, 4))),
    (lambda: PaddingConverter2D(kernel_size=5, input=PaddingType.SAME), ((2, 2), (2, 2))),
    (lambda: PaddingConverter2D(kernel_size=(3, 5), input=PaddingType.SAME), ((1, 1), (2, 2))),
    (lambda: PaddingConverter2D(kernel_size=(2, 2), input=PaddingType.VALID), ((0, 0), (0, 0))),
    (lambda: StrideConverter(kernel_size=(2, 3), input=None), (2, 3)),
    (lambda: StrideConverter(kernel_size=2, input=None), 2),
    (lambda: StrideConverter(kernel_size=2, input=1), 1),
    (lambda: TupleConverter(input=3), (3, 3)),
    (lambda: TupleConverter(input=(1, 2)), (1, 2)),
    (lambda: PaddingConverter1D(kernel_size=2, input=(1, 0)), (1, 0)),
    (lambda: TupleConverter(input=((1, 2), (3, 4))), ((1, 2), (3, 4))),
])
def test_converters(make, want):
    np.testing.assert_array_equal(run(wrapped(make))["output"], np.asarray(want))


def test_converters_take_connected_values():
    """Values given by connect(), sizes read from shapes, and converters
    feeding converters, as the original's Pool2D chains them."""
    model = Model()
    weight = IOKey("weight")
    model |= PaddingConverter2D()(input=PaddingType.SAME, kernel_size=weight.shape[2:],
                                  output=IOKey("padding"))
    model |= TupleConverter()(input=2, output="kernel")
    model |= StrideConverter()(input=None, kernel_size="kernel", output=IOKey("stride"))
    out = run(model, {"weight": np.zeros((1, 1, 5, 3))})
    np.testing.assert_array_equal(out["padding"], [[2, 2], [1, 1]])
    np.testing.assert_array_equal(out["stride"], [2, 2])
    model = Model()
    model |= PaddingConverter1D()(input=PaddingType.SAME, kernel_size=IOKey("w").shape[-1],
                                  output="padding")
    model |= PrimitiveUnion(2)(input1="padding", input2=Length()(input="w"),
                               output=IOKey("output"))
    np.testing.assert_array_equal(run(model, {"w": np.zeros((4, 1, 7))})["output"], [3, 3, 4])


def test_converters_connect_positionally():
    model = Model()
    model |= PaddingConverter1D()(PaddingType.SAME, 3, IOKey("padding"))
    model |= StrideConverter()(None, 4, IOKey("stride"))
    model |= TupleConverter()(5, IOKey("pair"))
    out = run(model)
    np.testing.assert_array_equal(out["padding"], [1, 1])
    assert out["stride"] == 4
    np.testing.assert_array_equal(out["pair"], [5, 5])


@pytest.mark.parametrize("make, message", [
    (lambda: PaddingConverter1D(kernel_size=4, input=PaddingType.SAME),
     "'same' padding needs an odd kernel size, got 4"),
    (lambda: PaddingConverter1D(kernel_size=(3, 3), input="same"), "needs an int kernel_size"),
    (lambda: PaddingConverter1D(kernel_size=3, input=((1, 2), (3, 4))),
     "PaddingConverter1D: padding must be"),
    (lambda: PaddingConverter2D(kernel_size=(3, 2), input="same"),
     "'same' padding needs an odd kernel size, got 2"),
    (lambda: PaddingConverter2D(kernel_size=3, input=(1, 2, 3)), "PaddingConverter2D: padding"),
    (lambda: PaddingConverter2D(kernel_size="k", input="same"), "kernel_size must be an int"),
    (lambda: StrideConverter(kernel_size=2, input=2.5), "StrideConverter: the stride must be"),
    (lambda: TupleConverter(input=2.5), "TupleConverter: input must be an int or a tuple"),
    (lambda: TupleConverter(input="valid"), "TupleConverter: input must be an int or a tuple"),
    (StrideConverter, "StrideConverter's input must be known when the model is compiled"),
    (lambda: PaddingConverter1D(input=1), "PaddingConverter1D's kernel_size must be known"),
])
def test_converter_errors(make, message):
    with pytest.raises(MithrilError, match=message):
        run(wrapped(make))


# Primitive convolutions -----------------------------------------------------------------

def conv_reference(spatial, stride, padding, dilation, groups=1, use_bias=True):
    """torch's convolution with Mithril's ((before, after), ...) padding and
    a bias [1, out, 1 ...]."""
    conv = F.conv1d if spatial == 1 else F.conv2d
    pads = [p for pair in reversed(padding) for p in pair]  # F.pad: last axis first

    def fn(input, weight, bias=None):
        out = conv(F.pad(input, pads), weight, stride=stride, dilation=dilation, groups=groups)
        return {"output": out + bias if use_bias else out}
    return fn


@pytest.mark.parametrize("stride, padding, pairs, dilation", [
    (1, 0, [(0, 0)], 1), (2, 1, [(1, 1)], 1), (1, (2, 1), [(2, 1)], 2), (3, (0, 2), [(0, 2)], 1),
])
@pytest.mark.parametrize("use_bias", [True, False])
def test_primitive_convolution_1d(stride, padding, pairs, dilation, use_bias, rng):
    params = {"input": rng.standard_normal((2, 3, 11)), "weight": rng.standard_normal((4, 3, 3))}
    if use_bias:
        params["bias"] = rng.standard_normal((1, 4, 1))
    model = Model()
    model |= PrimitiveConvolution1D(use_bias=use_bias)(
        **{k: k for k in params}, stride=stride, padding=padding, dilation=dilation,
        output=IOKey("output"))
    check_against_torch(model, conv_reference(1, stride, pairs, dilation, use_bias=use_bias), {},
                        params, rng)


@pytest.mark.parametrize("stride, padding, pairs, dilation, groups", [
    (1, 0, [(0, 0), (0, 0)], 1, 1),
    ((2, 1), (1, 2), [(1, 1), (2, 2)], 1, 1),
    (1, ((1, 0), (2, 1)), [(1, 0), (2, 1)], (2, 1), 1),
    (2, 1, [(1, 1), (1, 1)], 1, 2),
    ((1, 2), (0, 1), [(0, 0), (1, 1)], 2, 4),
])
def test_primitive_convolution_2d(stride, padding, pairs, dilation, groups, rng):
    params = {"input": rng.standard_normal((2, 4, 9, 8)),
              "weight": rng.standard_normal((4, 4 // groups, 3, 2)),
              "bias": rng.standard_normal((1, 4, 1, 1))}
    model = Model()
    model |= PrimitiveConvolution2D()(input="input", weight="weight", bias="bias", stride=stride,
                                      padding=padding, dilation=dilation, groups=groups,
                                      output=IOKey("output"))
    check_against_torch(model, conv_reference(2, stride, pairs, dilation, groups), {}, params,
                        rng)


def test_primitive_convolution_values_from_the_constructor_and_converters(rng):
    """Arguments given to the constructor, and the original's Convolution2D
    chain: the padding from PaddingConverter2D of the weight's kernel size."""
    params = {"input": rng.standard_normal((1, 2, 7, 7)),
              "weight": rng.standard_normal((3, 2, 3, 5)),
              "bias": rng.standard_normal((1, 3, 1, 1))}
    model = Model()
    weight = IOKey("weight")
    model |= PaddingConverter2D()(input=PaddingType.SAME, kernel_size=weight.shape[2:],
                                  output="padding")
    model |= TupleConverter()(input=1, output="stride")
    model |= PrimitiveConvolution2D(dilation=1, groups=1)(
        input="input", weight=weight, bias="bias", stride="stride", padding="padding",
        output=IOKey("output"))
    check_against_torch(model, conv_reference(2, 1, [(1, 1), (2, 2)], 1), {}, params, rng)
    conv = PrimitiveConvolution1D(stride=2, padding=(1, 0), dilation=1)
    params = {"input": rng.standard_normal((2, 3, 8)), "weight": rng.standard_normal((5, 3, 2)),
              "bias": rng.standard_normal((1, 5, 1))}
    check_against_torch(conv, conv_reference(1, 2, [(1, 0)], 1), {}, params, rng)


def test_primitive_convolution_positional_connect():
    model = Model()
    model |= PrimitiveConvolution2D()("input", "weight", 1, 0, 1, 1, IOKey("output"), bias="b")
    x, w, b = np.ones((1, 2, 3, 3)), np.ones((1, 2, 2, 2)), np.full((1, 1, 1, 1), 0.5)
    pm = ml.compile(model, backend(), shapes={"input": [1, 2, 3, 3], "weight": [1, 2, 2, 2],
                                              "b": [1, 1, 1, 1]}, inference=True)
    np.testing.assert_allclose(pm.evaluate({"weight": w, "b": b}, {"input": x})["output"],
                               np.full((1, 1, 2, 2), 8.5))


@pytest.mark.parametrize("make, error, message", [
    (lambda: PrimitiveConvolution1D(use_bias=False, bias=np.ones((1, 2, 1))), ValueError,
     "PrimitiveConvolution1D: bias given with use_bias=False"),
    (lambda: PrimitiveConvolution2D(use_bias=False)(bias="b"), ValueError,
     "PrimitiveConvolution2D: it has no 'bias' input"),
    (lambda: PrimitiveConvolution1D(stride="2"), TypeError,
     r"PrimitiveConvolution1D\(\) argument 'stride' must be an int or a tuple"),
    (lambda: PrimitiveConvolution1D(weight="w"), TypeError,
     r"PrimitiveConvolution1D\(\) argument 'weight' is a tensor terminal"),
    (lambda: PrimitiveMaxPool2D(padding=1.5), TypeError,
     r"PrimitiveMaxPool2D\(\) argument 'padding' must be an int or a tuple"),
])
def test_constructor_errors(make, error, message):
    with pytest.raises(error, match=message):
        make()


@pytest.mark.parametrize("make, shapes, message", [
    (PrimitiveConvolution1D, {"input": [1, 2, 5], "weight": [3, 2, 2], "bias": [1, 3, 1]},
     "PrimitiveConvolution1D's stride must be known when the model is compiled"),
    (lambda: PrimitiveConvolution1D(stride=(1, 1), padding=0, dilation=1),
     {"input": [1, 2, 5], "weight": [3, 2, 2], "bias": [1, 3, 1]},
     r"PrimitiveConvolution1D's stride must be an int or 1 ints, got \(1, 1\)"),
    (lambda: PrimitiveConvolution2D(stride=1, padding=(1, 2, 3), dilation=1, groups=1),
     {"input": [1, 2, 5, 5], "weight": [3, 2, 2, 2], "bias": [1, 3, 1, 1]},
     r"PrimitiveConvolution2D's padding \(1, 2, 3\)"),
    (lambda: PrimitiveConvolution2D(stride=1, padding=0, dilation=1, groups=0),
     {"input": [1, 2, 5, 5], "weight": [3, 2, 2, 2], "bias": [1, 3, 1, 1]},
     "PrimitiveConvolution2D's groups must be a positive int"),
    (lambda: PrimitiveConvolution2D(stride=1, padding=0, dilation=1, groups=1),
     {"input": [1, 2, 5, 5], "weight": [3, 2, 2], "bias": [1, 3, 1, 1]},
     r"PrimitiveConvolution2D needs a weight \[out, C_in, k, k\]"),
    (lambda: PrimitiveMaxPool2D(kernel_size=2, padding=0, dilation=1), {"input": [1, 1, 4, 4]},
     "PrimitiveMaxPool2D's stride must be known"),
])
def test_compile_errors(make, shapes, message):
    with pytest.raises(MithrilError, match=message):
        ml.compile(make(), backend(), shapes=shapes)


def test_primitive_convolution_in_float32(rng):
    x = rng.standard_normal((2, 3, 6, 6)).astype(np.float32)
    w = rng.standard_normal((2, 3, 3, 3)).astype(np.float32)
    b = rng.standard_normal((1, 2, 1, 1)).astype(np.float32)
    model = wrapped(lambda: PrimitiveConvolution2D(stride=1, padding=1, dilation=1, groups=1),
                    input="input", weight="weight", bias="bias")
    pm = ml.compile(model, ml.MlirBackend(dtype=ml.float32),
                    shapes={"input": x.shape, "weight": w.shape, "bias": b.shape}, inference=True)
    out = pm.evaluate({"weight": w, "bias": b}, {"input": x})["output"]
    assert out.dtype == np.float32
    want = F.conv2d(torch.tensor(x), torch.tensor(w), torch.tensor(b).reshape(-1), padding=1)
    np.testing.assert_allclose(out, want.numpy(), rtol=1e-4, atol=1e-5)


# Primitive pools ------------------------------------------------------------------------

@pytest.mark.parametrize("kernel, stride, padding, torch_padding", [
    (2, 2, 0, 0), (3, 1, 1, 1), (3, 2, (1, 1), 1), (2, 1, 0, 0),
])
def test_primitive_max_pool_1d(kernel, stride, padding, torch_padding, rng):
    model = wrapped(PrimitiveMaxPool1D, input="input", kernel_size=kernel, stride=stride,
                    padding=padding, dilation=1)
    check_against_torch(model, lambda input: {"output": F.max_pool1d(
        input, kernel, stride, torch_padding)}, {}, {"input": rng.standard_normal((2, 3, 10))},
                        rng)


@pytest.mark.parametrize("make, fn", [
    (lambda: PrimitiveMaxPool2D(kernel_size=2, stride=2, padding=0, dilation=1),
     lambda input: F.max_pool2d(input, 2, 2)),
    (lambda: PrimitiveMaxPool2D(kernel_size=(3, 2), stride=(1, 2), padding=(1, 0), dilation=1),
     lambda input: F.max_pool2d(input, (3, 2), (1, 2), (1, 0))),
    (lambda: PrimitiveMaxPool2D(kernel_size=3, stride=2, padding=((1, 1), (1, 1)),
                                dilation=(1, 1)),
     lambda input: F.max_pool2d(input, 3, 2, 1)),
    (lambda: PrimitiveAvgPool2D(kernel_size=2, stride=2, padding=0, dilation=1),
     lambda input: F.avg_pool2d(input, 2, 2)),
    (lambda: PrimitiveAvgPool2D(kernel_size=(2, 3), stride=1, padding=(0, 1), dilation=1),
     lambda input: F.avg_pool2d(input, (2, 3), 1, (0, 1))),
])
def test_primitive_pools_2d(make, fn, rng):
    model = wrapped(make, input="input")
    check_against_torch(model, lambda input: {"output": fn(input)}, {},
                        {"input": rng.standard_normal((2, 3, 7, 8))}, rng)


def test_primitive_pool_with_the_originals_converters(rng):
    """The original's MaxPool2D: stride None becomes the kernel size."""
    model = Model()
    model |= TupleConverter()(input=2, output="kernel")
    model |= StrideConverter()(input=None, kernel_size="kernel", output="stride")
    model |= PaddingConverter2D()(input=0, kernel_size="kernel", output="padding")
    model |= PrimitiveMaxPool2D()(input="input", kernel_size="kernel", stride="stride",
                                  padding="padding", dilation=(1, 1), output=IOKey("output"))
    x = rng.standard_normal((1, 2, 9, 9))
    out = run(model, {"input": x})["output"]
    np.testing.assert_array_equal(out, F.max_pool2d(torch.tensor(x), 2).numpy())


# Metric ---------------------------------------------------------------------------------

def test_metric_of_one_hot_predictions_and_labels(rng):
    pred = rng.random((7, 4))
    label = np.eye(4)[rng.integers(0, 4, 7)]
    out = run(Metric(), {"pred": pred, "label": label})
    np.testing.assert_array_equal(out["pred_formatted"], pred.argmax(-1))
    np.testing.assert_array_equal(out["label_formatted"], label.argmax(-1))
    np.testing.assert_array_equal(out["output"], pred.argmax(-1) - label.argmax(-1))
    assert out["output"].dtype.kind == "i"


def test_metric_of_binary_probabilities(rng):
    pred, label = rng.random(9), rng.integers(0, 2, 9).astype(np.float64)
    model = Metric(threshold=0.3, is_binary=True, is_pred_one_hot=False, is_label_one_hot=False)
    out = run(model, {"pred": pred, "label": label})
    want = np.where(pred > 0.3, 1, 0)
    np.testing.assert_array_equal(out["pred_formatted"], want)
    assert out["pred_formatted"].dtype.kind == "i"
    np.testing.assert_array_equal(out["output"], want - label)


def test_metric_of_class_indices(rng):
    pred, label = rng.integers(0, 3, 6).astype(np.float64), np.eye(3)[rng.integers(0, 3, 6)]
    out = run(Metric(is_pred_one_hot=False), {"pred": pred, "label": label})
    np.testing.assert_array_equal(out["output"], pred - label.argmax(-1))


def test_metric_errors():
    with pytest.raises(MithrilError, match="Metric: is_binary=True needs a threshold"):
        Metric(is_binary=True)
    with pytest.raises(TypeError, match="Metric.. argument 'threshold' must be a number"):
        Metric(threshold="0.5")


# AUCCore --------------------------------------------------------------------------------

def auc_core_reference(scores, label):
    """The original's auc_core: (tpr, fpr) at each distinct score, highest
    first."""
    positives = (label == 1).sum()
    negatives = len(label) - positives
    rates = [(((scores >= t) & (label == 1)).sum() / positives,
              ((scores >= t) & (label == 0)).sum() / negatives)
             for t in np.unique(scores)[::-1]]
    return np.array(rates).T


@pytest.mark.parametrize("decimals", [1, 3])
def test_auc_core(decimals, rng):
    scores = np.round(rng.random(12), decimals)
    label = rng.integers(0, 2, 12).astype(bool)
    label[:2] = [True, False]
    want = auc_core_reference(scores, label)
    out = run(AUCCore(), {"input": scores, "label": label})["output"]
    distinct = want.shape[1]
    assert out.shape == (2, 12)
    np.testing.assert_allclose(out[:, :distinct], want, rtol=RTOL)
    # Past the distinct scores: the last point again.
    np.testing.assert_allclose(out[:, distinct:], np.repeat(want[:, -1:], 12 - distinct, 1))


def test_auc_core_integrated_is_the_auc(rng):
    """Trapezoid over AUCCore's curve is the original's per-class area (and
    what AUC computes for one class, whose positives are the label 0)."""
    scores = np.round(rng.random(15), 1)
    label = rng.integers(0, 2, 15)
    model = Model()
    model |= AUCCore()(input="input", label="label", output="curve")
    model |= Trapezoid()(y=IOKey("curve")[0], x=IOKey("curve")[1], output=IOKey("output"))
    area = run(model, {"input": scores, "label": label})["output"]
    want = auc_core_reference(scores, label)
    np.testing.assert_allclose(area, np.trapz(want[0], want[1]), rtol=RTOL)
    flipped = run(AUC(1, is_label_one_hot=False), {"pred": scores, "label": 1 - label})["output"]
    np.testing.assert_allclose(area, flipped, rtol=1e-12)


def test_auc_core_errors():
    with pytest.raises(MithrilError, match=r"AUCCore needs 1-D input and label \[N\]"):
        ml.compile(AUCCore(), backend(), shapes={"input": [3, 2], "label": [3]})
    with pytest.raises(MithrilError, match="AUCCore needs the number of samples known"):
        ml.compile(AUCCore(), backend(), shapes={"input": [None], "label": [None]})


def test_custom_primitive_models_are_dialect_ops():
    """The original's CustomPrimitiveModel(formula_key, **keys): the formula
    key names a mithril op, the keys are its terminals in operand order."""
    from mithril.models import CustomPrimitiveModel, PrimitiveModel
    model = Model()
    model |= CustomPrimitiveModel("add", left=IOKey(shape=[2, 3]), right=IOKey(shape=[2, 3]),
                                  output=IOKey())(left="a", right="b", output="c")
    model |= PrimitiveModel("relu", input=IOKey(), output=IOKey())(input="c", output="d")
    pm = ml.compile(model, ml.MlirBackend(dtype=ml.float64), shapes={"a": [2, 3], "b": [2, 3]})
    rng = np.random.default_rng(4)
    a, b = rng.standard_normal((2, 3)), rng.standard_normal((2, 3))
    np.testing.assert_array_equal(pm.evaluate({}, {"a": a, "b": b})["d"], np.maximum(a + b, 0))
    unknown = Model()
    unknown |= CustomPrimitiveModel("nope", input=IOKey(), output=IOKey())(input="x", output="y")
    with pytest.raises(MithrilError, match="CustomPrimitiveModel\\('nope'\\): .*unknown mithril "
                                           "primitive 'nope'"):
        ml.compile(unknown, ml.MlirBackend(), shapes={"x": [2]})
    with pytest.raises(MithrilError, match="give the output terminal"):
        CustomPrimitiveModel("relu", input=IOKey())


def test_activation_base_and_by_op_name():
    """The original's Activation: the library's activations are
    Activations, and Activation(formula_key) is one op's activation, with
    its gradient (against torch)."""
    from mithril.models import Activation, Gelu, LeakyRelu, Linear, Relu, Sigmoid
    assert all(isinstance(m, Activation) for m in (Relu(), Sigmoid(), LeakyRelu(), Gelu()))
    model = Model()
    model |= Linear(5)(input="x", output="h")
    model |= Activation("tanh")(input="h", output=IOKey("y"))
    pm = ml.compile(model, ml.MlirBackend(dtype=ml.float64), shapes={"x": [3, 4]},
                    data_keys={"x"})
    params = pm.randomize_params(seed=0)
    x = np.random.default_rng(0).standard_normal((3, 4))
    out, grads = pm.evaluate(params, {"x": x}, output_gradients={"y": np.ones((3, 5))})
    w = torch.tensor(params["linear_0.weight"], requires_grad=True)
    b = torch.tensor(params["linear_0.bias"], requires_grad=True)
    y = torch.tanh(torch.tensor(x) @ w.T + b)
    y.sum().backward()
    np.testing.assert_allclose(out["y"], y.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(grads["linear_0.weight"], w.grad.numpy(), rtol=1e-12)
    bad = Model()
    bad |= Activation("no_such_op")(input="x", output=IOKey("y"))
    with pytest.raises(MithrilError, match="no_such_op"):
        ml.compile(bad, ml.MlirBackend(), shapes={"x": [3]})
    with pytest.raises(MithrilError, match="formula_key"):
        Activation(3)
