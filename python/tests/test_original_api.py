# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""The parts of the original's model API its example programs use that were
added for them (test_original_examples.py runs the examples): values known at
compile time (Size, Arange's bounds, shapes given to Reshape, dtypes, items),
the original's number typing, numpy indexing (ellipsis, integer arrays, lists),
list values (Split, ToTuple, list inputs and outputs), Tensor constants,
canonical connections, named internal connections, the inference sequence
models, and the backend's array helpers; each against numpy or torch."""

import numpy as np
import pytest
import torch

import mithril as ml
from mithril import IOKey, Tensor
from mithril.errors import MithrilError
from mithril.models import (Add, Arange, Buffer, BroadcastTo, Cast, Concat, Convolution2D,
                            EncoderDecoderInference, GroupNorm, Linear, LSTMCell, Model,
                            OneToManyInference, Randn, Relu, Reshape, RNNCell,
                            ScaledDotProduct, Size, Split, ToTuple, Where)


def backend():
    return ml.MlirBackend(dtype=ml.float64)


def run(model, data, params=None, **kw):
    pm = ml.compile(model, backend(), shapes={k: list(np.shape(v)) for k, v in data.items()
                                              if not isinstance(v, list)}, inference=True, **kw)
    return pm.evaluate(params or {}, data)


# Values known at compile time -----------------------------------------------------------

def test_size_and_arange_with_connected_bounds():
    model = Model()
    model |= Size(dim=1)(input="input", output=IOKey("n"))
    model += Arange()(output=IOKey("positions"))  # += feeds Arange's stop
    model |= Arange(start=ml.TBD)(start=model.n, stop=7, output="tail")
    model |= Buffer()(model.positions * 2, output=IOKey("doubled"))
    out = run(model, {"input": np.zeros((2, 5))})
    np.testing.assert_array_equal(out["positions"], np.arange(5))
    np.testing.assert_array_equal(out["tail"], np.arange(5, 7))
    # An integer tensor times a Python int stays integral, as in the original.
    assert out["doubled"].dtype.kind == "i"
    np.testing.assert_array_equal(out["doubled"], 2 * np.arange(5))
    assert out["n"] == 5


def test_numbers_take_the_type_of_the_tensor_they_meet():
    model = Model()
    model |= Arange(stop=4)(output="a")
    model |= Buffer()((model.a + 0.5) / 2, output=IOKey("half"))
    model |= Buffer()(model.a // 3, output=IOKey("floor"))
    model |= Where()(cond=model.a > 1, input1=model.a, input2=Tensor(-1), output="picked")
    model |= Buffer()(model.a / model.a.shape[0], output=IOKey("ratio"))
    out = run(model, {})
    np.testing.assert_allclose(out["half"], (np.arange(4) + 0.5) / 2)
    np.testing.assert_array_equal(out["floor"], np.arange(4) // 3)
    assert out["floor"].dtype.kind == "i" and out["picked"].dtype.kind == "i"
    np.testing.assert_array_equal(out["picked"], [-1, -1, 2, 3])
    np.testing.assert_allclose(out["ratio"], np.arange(4) / 4)


def test_reshape_broadcast_and_cast_take_values_known_when_compiling():
    x = np.random.default_rng(0).standard_normal((2, 3, 4))
    model = Model()
    inp = IOKey("input")
    shape = inp.shape
    model |= Reshape()(inp, shape=(shape[0], -1), output="flat")
    model |= Reshape()(model.flat, shape=shape, output=IOKey("back"))
    model |= BroadcastTo()(inp[:, :1], shape=(shape[0], 3, shape[2]), output=IOKey("wide"))
    model |= Cast()(input=inp.sum(), dtype=model.flat.dtype(), output=IOKey("same"))
    model |= Buffer()(inp.reshape(shape=(shape[0], shape[1] * shape[2])), output=IOKey("r2"))
    model |= Buffer()(inp.sum(axis=0).reshape(shape[1:]), output=IOKey("r3"))
    out = run(model, {"input": x})
    np.testing.assert_array_equal(out["back"], x)
    np.testing.assert_array_equal(out["wide"], np.broadcast_to(x[:, :1], (2, 3, 4)))
    assert out["same"].dtype == np.float64
    np.testing.assert_array_equal(out["r2"], x.reshape(2, 12))
    np.testing.assert_allclose(out["r3"], x.sum(0))


def test_tensor_and_item_of_sizes():
    # Flux's upsample: (H.tensor() * 2).item() as a reshape size.
    model = Model()
    inp = IOKey("input")
    H = inp.shape[1]
    model |= Reshape()(inp[:, :, None], shape=(inp.shape[0], (H.tensor() * 2).item() // 2, 1),
                       output=IOKey("output"))
    x = np.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(run(model, {"input": x})["output"], x[:, :, None])


def test_sizes_divide_and_raise_to_powers():
    model = Model()
    q = IOKey("input")
    scaling = (q.shape[1] // 2) ** -0.5
    model |= Buffer()(q * scaling, output=IOKey("output"))
    x = np.ones((2, 8))
    np.testing.assert_allclose(run(model, {"input": x})["output"], x * 4 ** -0.5)


def test_a_size_given_to_a_nested_model():
    """A size passed to a model's int input reaches the models in it that need
    it fixed (T5's relative_position_bias takes query_length=input.shape[1])."""
    inner = Model()
    inner |= Arange()(stop=IOKey("length", type=int), output=IOKey("output"))
    outer = Model()
    x = IOKey("input")
    outer |= inner(length=x.shape[1], output=IOKey("positions"))
    np.testing.assert_array_equal(run(outer, {"input": np.zeros((1, 4))})["positions"],
                                  np.arange(4))


def test_set_shapes_on_a_computed_connection_is_checked():
    model = Model()
    y = IOKey("input") * 2
    y.set_shapes([2, 3])
    model |= Buffer()(y, output=IOKey("output"))
    run(model, {"input": np.zeros((2, 3))})
    model = Model()
    y = IOKey("input") * 2
    y.set_shapes([2, 4])
    model |= Buffer()(y, output=IOKey("output"))
    with pytest.raises(MithrilError, match="does not match the shape"):
        run(model, {"input": np.zeros((2, 3))})


# Indexing -------------------------------------------------------------------------------

def test_ellipsis_and_integer_array_indexing_against_torch():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 3, 4, 5))
    rows, cols = np.array([2, 0, 3]), np.array([1, 4, 0])
    model = Model()
    inp = IOKey("input")
    model |= Buffer()(inp[..., 1], output=IOKey("last"))
    model |= Buffer()(inp[:, :, rows[:, None], cols], output=IOKey("grid"))
    # numpy's rule (the int counts as an index array): the index axes first.
    model |= Buffer()(inp[0, :, rows, cols], output=IOKey("split_axes"))
    model |= Buffer()(inp[:, -1, IOKey("r"), IOKey("c")], output=IOKey("tensors"))
    pm = ml.compile(model, backend(), shapes={"input": [2, 3, 4, 5], "r": [3], "c": [3]},
                    trainable_keys={"input"})
    data = {"r": rows, "c": cols}
    seeds = {k: rng.standard_normal(s) for k, s in
             (("last", (2, 3, 4)), ("grid", (2, 3, 3, 3)), ("split_axes", (3, 3)),
              ("tensors", (2, 3)))}
    out, grads = pm.evaluate({"input": x}, data, output_gradients=seeds)
    t = torch.tensor(x, requires_grad=True)
    want = {"last": t[..., 1], "grid": t[:, :, rows[:, None], cols],
            "split_axes": t[0][:, rows, cols].T, "tensors": t[:, -1, rows, cols]}
    np.testing.assert_array_equal(want["split_axes"].detach().numpy(), x[0, :, rows, cols])
    torch.autograd.backward([want[k] for k in seeds], [torch.tensor(v) for v in seeds.values()])
    for key, value in want.items():
        np.testing.assert_allclose(out[key], value.detach().numpy(), rtol=1e-12, err_msg=key)
    np.testing.assert_allclose(grads["input"], t.grad.numpy(), rtol=1e-12)


def test_negative_indices_in_an_index_tensor_count_from_the_end():
    x = np.arange(12.0).reshape(3, 4)
    model = Model()
    model |= Buffer()(IOKey("input")[Tensor([-1, 0]), 1], output=IOKey("output"))
    np.testing.assert_array_equal(run(model, {"input": x})["output"], x[[-1, 0], 1])


# Lists ------------------------------------------------------------------------------------

def test_split_is_a_list_that_passes_through_models():
    x = np.random.default_rng(2).standard_normal((2, 6))
    block = Model()
    block |= Split(3, axis=1)(input="input", output="parts")
    block |= Buffer()(block.parts, output=IOKey("chunks"))  # a list output: chunks[i]
    outer = Model()
    outer |= block(input="input", chunks="chunks")
    outer |= Buffer()(outer.chunks[2] - outer.chunks[0], output=IOKey("output"))
    out = run(outer, {"input": x})
    np.testing.assert_allclose(out["output"], x[:, 4:] - x[:, :2])
    out = run(block, {"input": x})
    assert sorted(out) == ["chunks[0]", "chunks[1]", "chunks[2]"]
    np.testing.assert_allclose(out["chunks[1]"], x[:, 2:4])
    # The connection method and the call's indexing (GPT's split_out[0]).
    model = Model()
    model |= Buffer()(IOKey("input").split(2, axis=1)[1] + Split(2, 1)(input="input")[0],
                      output=IOKey("output"))
    np.testing.assert_allclose(run(model, {"input": x})["output"], x[:, 3:] + x[:, :3])


def test_to_tuple_and_list_inputs():
    x = np.random.default_rng(3).standard_normal((2, 3))
    producer = Model()
    producer |= ToTuple(n=2)(IOKey("input"), IOKey("input") * 2, output=IOKey("pair"))
    consumer = Model()
    consumer |= Buffer()(IOKey("input", value=(Tensor(), Tensor()))[1] - IOKey("input")[0],
                         output=IOKey("output"))
    top = Model()
    top |= producer(input="input", pair="pair")
    top |= consumer(input="pair", output=IOKey("output"))
    np.testing.assert_allclose(run(top, {"input": x})["output"], x)
    pm = ml.compile(consumer, backend(), shapes={"input": [[2, 3], [2, 3]]}, inference=True)
    np.testing.assert_allclose(pm.evaluate({}, {"input": [x, 3 * x]})["output"], 2 * x)


# Models, connections and calls -----------------------------------------------------------

def test_canonical_input_and_output_are_connections():
    """The older examples' block.canonical_input / other.canonical_output
    (ResNet's skip connection): the terminal, in the composite that holds it."""
    block = Model()
    block += Linear(4)
    skip = block.canonical_input
    block += Relu()
    main = block.canonical_output
    down = Linear(4)
    block += down(input=skip)
    block += Add()(left=down.canonical_output, right=main)
    assert block.input_keys == ["input"] and skip == "input"
    pm = ml.compile(block, backend(), shapes={"input": [2, 3]})
    params = pm.randomize_params()
    x = np.random.default_rng(4).standard_normal((2, 3))
    want = (np.maximum(x @ params["linear_0.weight"].T + params["linear_0.bias"], 0)
            + x @ params["linear_1.weight"].T + params["linear_1.bias"])
    (key,) = pm.output_keys
    np.testing.assert_allclose(pm.evaluate(params, {"input": x})[key], want, rtol=1e-12)


def test_named_internal_connections_are_attributes_and_plus_equals_fills_right():
    block = Model()
    block |= Relu()(input="input", output="r")
    block |= Buffer()(block.r * 3, output=IOKey("three"))
    assert block.r.key == "r"  # still an attribute once something reads it
    # += feeds Add's free canonical input, right, from the canonical output.
    block += Add()(left="input", output=IOKey("sum"))
    assert block.input_keys == ["input"]
    x = np.array([[-1.0, 2.0]])
    out = run(block, {"input": x})
    np.testing.assert_allclose(out["three"], 3 * np.maximum(x, 0))
    np.testing.assert_allclose(out["sum"], x + 3 * np.maximum(x, 0))


def test_create_keeps_the_outputs_in_the_order_given():
    x = IOKey("input")
    model = Model.create(first=x * 2, second=x.shape[1], third=x + 1)
    assert model.output_keys == ["first", "second", "third"]
    outer = Model()
    a, b, c = model(input="input")
    outer |= Buffer()(a + c * b, output=IOKey("output"))
    xs = np.ones((2, 3))
    np.testing.assert_allclose(run(outer, {"input": xs})["output"], 2 * xs + 3 * (xs + 1))


def test_positional_connect_of_group_norm_attention_and_convolution():
    model = Model()
    model |= Convolution2D(1, 32, name="c")("input", output="h")
    model |= GroupNorm(num_groups=32)("h", "n")
    q = model.n.reshape((2, 1, 32, -1)).transpose((0, 1, 3, 2))
    model |= ScaledDotProduct(is_causal=False)(q, q, q, output=IOKey("output"))
    assert set(model.input_keys) == {"input"}
    pm = ml.compile(model, backend(), shapes={"input": [2, 3, 2, 2]})
    params = pm.randomize_params()
    x = np.random.default_rng(5).standard_normal((2, 3, 2, 2))
    t = {k: torch.tensor(v) for k, v in params.items()}
    h = torch.nn.functional.conv2d(torch.tensor(x), t["c.weight"], t["c.bias"])
    n = torch.nn.functional.group_norm(h, 32, t["groupnorm_0.weight"].flatten(),
                                       t["groupnorm_0.bias"].flatten())
    q = n.reshape(2, 1, 32, -1).transpose(2, 3)
    want = torch.softmax(q @ q.transpose(-1, -2) / q.shape[-1] ** 0.5, -1) @ q
    np.testing.assert_allclose(pm.evaluate(params, {"input": x})["output"], want.numpy(),
                               rtol=1e-10)


def test_enforce_jit_is_accepted_and_randn_builds():
    Model(enforce_jit=False)
    assert Randn().output_keys == ["output", "new_key"]  # test_random.py tests its samples


def test_unused_parameters_are_not_parameters():
    """A parameter no output reads (an encoder's unused output layer) is left
    out, as the original's physical model leaves out unused keys: its shape
    could not be known."""
    model = Model()
    model |= Linear(3)(input="input", output="used")
    model |= Linear()(input="input", output="unused")  # its size is never given
    model |= Buffer()(model.used, output=IOKey("output"))
    model.expose_keys("output")
    pm = ml.compile(model, backend(), shapes={"input": [2, 4]}, discard_keys={"unused"})
    assert sorted(pm.randomize_params()) == ["linear_0.bias", "linear_0.weight"]


# Sequence models for inference -----------------------------------------------------------

def test_one_to_many_inference_feeds_each_output_to_the_next_step():
    rng = np.random.default_rng(6)
    model = OneToManyInference(RNNCell(), 3)
    assert model.canonical_output == "output2"
    params = {"w_ih": rng.standard_normal((4, 2)), "w_hh": rng.standard_normal((4, 4)),
              "w_ho": rng.standard_normal((2, 4)), "bias_h": rng.standard_normal(4),
              "bias_o": rng.standard_normal(2)}
    data = {"input": rng.standard_normal((3, 1, 2)),
            "initial_hidden": rng.standard_normal((3, 1, 4))}
    pm = ml.compile(model, backend(), shapes={**{k: list(v.shape) for k, v in data.items()}},
                    inference=True)
    out = pm.evaluate(params, data)
    x, h = data["input"], data["initial_hidden"]
    for t in range(3):
        h = np.tanh(h @ params["w_hh"].T + x @ params["w_ih"].T + params["bias_h"])
        x = h @ params["w_ho"].T + params["bias_o"]
        np.testing.assert_allclose(out[f"output{t}"], x, rtol=1e-12)


def test_encoder_decoder_inference_terminals():
    model = EncoderDecoderInference(LSTMCell(), 2, 3)
    keys = set(model.input_keys)
    assert {"input0", "input1", "initial_hidden", "initial_cell", "w_f", "decoder_input",
            "decoder_initial_cell", "decoder_w_f"} <= keys
    assert "decoder_initial_hidden" not in keys and "indices" not in keys
    assert sorted(model.output_keys) == ["output0", "output1", "output2"]


# Backend helpers ---------------------------------------------------------------------------

def test_backend_array_helpers_keep_kinds():
    be = backend()
    assert be.array([1, 2]).dtype == np.int64 and be.array([1.0]).dtype == np.float64
    assert ml.MlirBackend().array([1, 2]).dtype == np.int32
    assert be.array([True]).dtype == np.bool_
    be.set_seed(3)
    a = be.randint(-5, 5, (4,))
    be.set_seed(3)
    np.testing.assert_array_equal(a, be.randint(-5, 5, (4,)))
    assert a.dtype == np.int64 and a.min() >= -5 and a.max() < 5
    assert be.arange(2, 5).dtype == np.int64 and be.arange(0.5, 2).dtype == np.float64
    assert be.rand_uniform(0, 1, 3).shape == (3,)
    np.testing.assert_allclose(be.linspace(0, 1, 3), [0, 0.5, 1])
    assert be.stack([np.zeros(2), np.ones(2)]).shape == (2, 2)
    assert be.cat([np.zeros(2), np.ones(2)]).shape == (4,)
    assert be.pi == np.pi


def test_concat_keeps_working_with_values_of_numbers():
    model = Model()
    model |= Concat(axis=0)(input=[IOKey("input"), IOKey("input") * 2], output=IOKey("output"))
    x = np.ones((1, 2))
    np.testing.assert_allclose(run(model, {"input": x})["output"], [[1, 1], [2, 2]])
