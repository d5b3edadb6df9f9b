# Pad (mithril.pad): numpy.pad's constant mode, its gradient against torch,
# training through it, and its errors. The op was added by the "Adding an op"
# recipe of docs/architecture.md: ODS, a shape rule, a gradient, a lowering, a
# batch rule, lit cases, and this Python name.
import numpy as np
import pytest
import torch

import mithril as ml
from mithril.errors import MithrilError
from mithril.models import Linear, Model, Pad, Relu
from torch_oracle import compile_eval, torch_run


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("width,value", [(((1, 2), (0, 3)), 0.0), (((0, 0), (2, 2)), -1.5),
                                         (((3, 1),), 0.25)])
def test_pad_matches_numpy_and_torch(dtype, width, value, rng):
    backend = ml.MlirBackend(dtype=ml.float32 if dtype == np.float32 else ml.float64)
    x = rng.standard_normal((4, 5)).astype(dtype)
    pairs = list(width) * (2 if len(width) == 1 else 1)
    expected = np.pad(x, pairs, constant_values=value)
    seed = rng.standard_normal(expected.shape).astype(dtype)
    out, grads = compile_eval(Pad(pad_width=width, value=value), backend, {}, {"input": x},
                              {"output": seed})
    tol = 1e-6 if dtype == np.float32 else 1e-14
    np.testing.assert_allclose(out["output"], expected, rtol=0, atol=tol)
    # torch.nn.functional.pad takes the pairs from the last axis backwards.
    flat = [v for pair in reversed(pairs) for v in pair]
    ref_out, ref_grads = torch_run(
        lambda input: {"output": torch.nn.functional.pad(input, flat, value=value)}, {},
        {"input": x}, {"output": seed})
    np.testing.assert_allclose(out["output"], ref_out["output"], rtol=0, atol=tol)
    np.testing.assert_allclose(grads["input"], ref_grads["input"], rtol=0, atol=tol)


def test_pad_three_axes_through_a_linear_layer(rng):
    """Pad after a Linear layer: the weight's gradient flows through the slice."""
    model = Model()
    model |= Linear(6).connect(input="input", output="h")
    model |= Pad(pad_width=((1, 0), (0, 2), (2, 1))).connect(input="h", output="output")
    pm = ml.compile(model, ml.MlirBackend(dtype=ml.float64), shapes={"input": [2, 3, 5]})
    params = pm.randomize_params()
    weight = params["linear_0.weight"]
    bias = params["linear_0.bias"]
    x = rng.standard_normal((2, 3, 5))
    seed = rng.standard_normal((3, 5, 9))
    out, grads = pm.evaluate(params, {"input": x}, output_gradients={"output": seed})
    h = x @ weight.T + bias
    np.testing.assert_allclose(out["output"], np.pad(h, ((1, 0), (0, 2), (2, 1))), atol=1e-14)
    inner = seed[1:3, 0:3, 2:8]
    np.testing.assert_allclose(grads["linear_0.weight"],
                               np.einsum("abo,abi->oi", inner, x), atol=1e-12)
    np.testing.assert_allclose(grads["linear_0.bias"], inner.sum(axis=(0, 1)), atol=1e-12)


def test_pad_errors():
    # pad_width left to a terminal nothing gives a value.
    with pytest.raises(MithrilError, match=r"Pad's pad_width must be known when the model is "
                                           r"compiled"):
        ml.compile(Pad(), ml.MlirBackend(), shapes={"input": [2, 3], "pad_width": [2, 2]})
    with pytest.raises(MithrilError, match=r"pairs of integers"):
        Pad(pad_width=((1, "a"),))
    with pytest.raises(MithrilError, match=r"2 \(before, after\) pairs for an input of rank 3"):
        ml.compile(Pad(pad_width=((1, 1), (0, 1))), ml.MlirBackend(), shapes={"input": [2, 3, 4]})
    with pytest.raises(MithrilError, match=r"must not be negative"):
        ml.compile(Pad(pad_width=((-1, 1),)), ml.MlirBackend(), shapes={"input": [2]})


def test_pad_width_as_a_terminal_value():
    """The original's Pad(pad_width=TBD): pad_width connected as a value."""
    model = Model()
    model |= Pad()(input="input", pad_width=((1, 0), (2, 1)), output="output")
    pm = ml.compile(model, ml.MlirBackend(dtype=ml.float64), shapes={"input": [2, 3]})
    x = np.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(pm.evaluate({}, {"input": x})["output"],
                                  np.pad(x, ((1, 0), (2, 1))))


# Shapes whose padding takes each form of mithril-pad-in-place's runs: rows
# and planes between them, dimensions left whole merged, one-sided pads,
# runs long enough to be filled as slices rather than stored as one vector
# (a 300-wide row of float64), and a box of one row.
PAD_LAYOUTS = [
    ((2, 3, 5, 4), ((0, 0), (0, 0), (1, 1), (1, 1))),
    ((2, 3, 5, 4), ((0, 0), (1, 2), (0, 0), (3, 0))),
    ((3, 4, 6), ((2, 0), (0, 0), (0, 1))),
    ((2, 7), ((0, 0), (300, 5))),
    ((1, 4, 3), ((0, 1), (1, 1), (2, 2))),
    ((6,), ((0, 300),)),
]


@pytest.mark.parametrize("computed", [True, False], ids=["in-place", "copied"])
@pytest.mark.parametrize("shape,width", PAD_LAYOUTS)
def test_pad_layouts_write_every_padded_element(shape, width, computed, rng):
    """A padding value no fresh buffer holds (2.5), around a value computed
    in the padded buffer (a ReLU's) or copied in (an input's), twice through
    one compiled model: an element of the padding left unwritten shows."""
    model = Model()
    if computed:
        model |= Relu().connect(input="input", output="h")
        model |= Pad(pad_width=width, value=2.5).connect(input="h", output="output")
    else:
        model |= Pad(pad_width=width, value=2.5).connect(input="input", output="output")
    pm = ml.compile(model, ml.MlirBackend(dtype=ml.float64), shapes={"input": list(shape)})
    for _ in range(2):
        x = rng.standard_normal(shape)
        inner = np.maximum(x, 0) if computed else x
        np.testing.assert_array_equal(pm.evaluate({}, {"input": x})["output"],
                                      np.pad(inner, width, constant_values=2.5))


@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.int16, np.int64])
def test_pad_integer_and_bool_terminals(dtype):
    """Padding of integers and booleans: a tensor's booleans are bytes, not
    the packed bits of a vector of them, so their runs are filled."""
    model = Model()
    model |= Pad(pad_width=((1, 2), (3, 1)), value=1).connect(input="input", output="output")
    pm = ml.compile(model, ml.MlirBackend(), shapes={"input": [3, 4]},
                    types={"input": np.dtype(dtype)}, inference=True)
    x = np.random.default_rng(5).integers(-100, 100, (3, 4)).astype(dtype)
    out = pm.evaluate({}, {"input": x})["output"]
    np.testing.assert_array_equal(out, np.pad(x, ((1, 2), (3, 1)), constant_values=1))
