# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""The models of mithril.models.parity (SiLU, SwapAxes, Clamp,
ScaledDotProduct, GroupNorm, PositionalEncoding, LSTMCell) against torch in
float64: outputs and the gradients of every differentiable input, and the
errors their arguments and shapes can give."""

import math

import numpy as np
import pytest
import torch

import mithril as ml
from mithril.errors import MithrilError
from mithril.framework import IOKey, Model
from mithril.models import (Add, Arange, Clamp, Concat, Eye, Floor, GroupNorm, IsNan, LSTMCell,
                            NanToNum, Ones, PositionalEncoding, ZerosLike,
                            ScaledDotProduct, SiLU, SwapAxes, Tanh)
from torch_oracle import compile_eval, lstm_step, torch_run

F = torch.nn.functional
RTOL, ATOL = 1e-10, 1e-12


def assert_same(got: dict, want: dict) -> None:
    assert set(want) <= set(got), (sorted(got), sorted(want))
    for key, value in want.items():
        np.testing.assert_allclose(got[key], value, rtol=RTOL, atol=ATOL, err_msg=key)


def check_against_torch(model, fn, data, params, rng, backend, shapes=None):
    """Outputs of `model` and gradients of `params` equal torch's `fn`'s,
    for random seeds of every output."""
    shapes_of = {k: v.shape for k, v in fn(**{k: torch.tensor(v)
                                               for k, v in {**data, **params}.items()}).items()}
    seeds = {k: rng.standard_normal(s) for k, s in shapes_of.items()}
    out, grads = compile_eval(model, backend, data, params, seeds, shapes)
    want_out, want_grads = torch_run(fn, data, params, seeds)
    assert_same(out, want_out)
    assert_same(grads, want_grads)


# SiLU ---------------------------------------------------------------------------

def test_silu(backend64, rng):
    x = rng.standard_normal((3, 5)) * 3
    check_against_torch(SiLU(), lambda input: {"output": F.silu(input)}, {}, {"input": x}, rng,
                        backend64)


def test_silu_is_finite_far_from_zero(backend64):
    # exp(-x) overflows below -709: x / (1 + exp(-x)) would have a NaN gradient.
    x = np.array([[-1000.0, -800.0, -30.0, 0.0, 30.0, 800.0]])
    out, grads = compile_eval(SiLU(), backend64, {}, {"input": x}, {"output": np.ones_like(x)})
    tx = torch.tensor(x, requires_grad=True)
    F.silu(tx).sum().backward()
    np.testing.assert_allclose(out["output"], F.silu(torch.tensor(x)).numpy(), rtol=RTOL)
    np.testing.assert_allclose(grads["input"], tx.grad.numpy(), rtol=RTOL, atol=ATOL)
    assert np.isfinite(grads["input"]).all()


# SwapAxes -----------------------------------------------------------------------

@pytest.mark.parametrize("axis1,axis2", [(0, 2), (-1, -3), (1, -1), (-2, -1), (1, 1)])
def test_swapaxes(axis1, axis2, backend64, rng):
    x = rng.standard_normal((2, 3, 4))
    check_against_torch(SwapAxes(axis1, axis2),
                        lambda input: {"output": torch.swapaxes(input, axis1, axis2)},
                        {}, {"input": x}, rng, backend64)


def test_swapaxes_errors(backend64):
    with pytest.raises(TypeError):
        SwapAxes(1)
    with pytest.raises(TypeError):
        SwapAxes()
    with pytest.raises(MithrilError, match="out of range for an input of rank 3"):
        ml.compile(SwapAxes(0, -4), backend64, shapes={"input": [2, 3, 4]})


# Clamp --------------------------------------------------------------------------

def test_clamp_bounds_as_inputs(backend64, rng):
    x = rng.standard_normal((4, 3))
    low, high = rng.standard_normal(3) * 0.3 - 0.5, rng.standard_normal(3) * 0.3 + 0.5
    # Gradients flow to the bounds too, where they bind.
    check_against_torch(Clamp(), lambda input, min_val, max_val: {
        "output": torch.clamp(input, min=min_val, max=max_val)}, {},
        {"input": x, "min_val": low, "max_val": high}, rng, backend64)


def test_clamp_bounds_as_constants(backend64, rng):
    x = rng.standard_normal((4, 3))
    seed = rng.standard_normal((4, 3))
    tx = torch.tensor(x, requires_grad=True)
    y = torch.clamp(tx, -0.5, 0.25)
    y.backward(torch.tensor(seed))
    via_connect = Model()
    via_connect |= Clamp().connect(input="input", min_val=-0.5, max_val=0.25,
                                   output=IOKey("output"))
    via_iokey = Model()
    via_iokey |= Clamp().connect(input="input", min_val=IOKey("lo", value=-0.5),
                                 max_val=IOKey("hi", value=0.25), output=IOKey("output"))
    for model in (via_connect, via_iokey, Clamp(min_val=-0.5, max_val=0.25)):
        pm = ml.compile(model, backend64, shapes={"input": [4, 3]}, trainable_keys=["input"])
        assert sorted(pm.input_keys) == ["input"]
        out, grads = pm.evaluate({"input": x}, output_gradients={"output": seed})
        np.testing.assert_allclose(out["output"], y.detach().numpy(), rtol=RTOL)
        np.testing.assert_allclose(grads["input"], tx.grad.numpy(), rtol=RTOL)


def test_clamp_at_the_bounds(backend64):
    # As torch.clamp: at a bound the gradient goes to the input; with
    # min_val > max_val the result is max_val.
    x = np.array([[-0.5, 0.25, 0.0, -1.0, 1.0]])
    params = {"input": x, "min_val": np.full(5, -0.5), "max_val": np.full(5, 0.25)}
    check_against_torch(Clamp(), lambda input, min_val, max_val: {
        "output": torch.clamp(input, min=min_val, max=max_val)}, {}, params,
        np.random.default_rng(0), backend64)
    swapped = {**params, "min_val": np.full(5, 0.25), "max_val": np.full(5, -0.5)}
    out = ml.compile(Clamp(), backend64, shapes={k: list(v.shape) for k, v in swapped.items()}
                     ).evaluate({}, swapped)
    np.testing.assert_array_equal(out["output"], np.full((1, 5), -0.5))


# ScaledDotProduct ---------------------------------------------------------------

def attention(query, key, value, attn_mask=None, is_causal=False, scale=None):
    """torch.nn.functional.scaled_dot_product_attention's definition (the
    installed torch predates it)."""
    length, source = query.shape[-2], key.shape[-2]
    factor = 1 / math.sqrt(query.shape[-1]) if scale is None else scale
    scores = query @ key.transpose(-2, -1) * factor
    if is_causal:
        allowed = torch.ones(length, source, dtype=torch.bool).tril()
        scores = scores.masked_fill(~allowed, float("-inf"))
    if attn_mask is not None:
        scores = scores + attn_mask
    return {"output": torch.softmax(scores, dim=-1) @ value}


@pytest.mark.parametrize("is_causal,use_attn_mask,scale,batch,L,S", [
    (False, False, None, (2,), 3, 5),
    (True, False, None, (2,), 3, 5),
    (True, False, None, (2, 2), 5, 3),     # L > S: causal rows keep j <= i
    (True, False, 0.3, (), 4, 4),
    (False, True, None, (2, 2), 3, 4),
    (False, True, 2, (1,), 4, 2),
])
def test_scaled_dot_product(is_causal, use_attn_mask, scale, batch, L, S, backend64, rng):
    E, O = 4, 3
    params = {"query": rng.standard_normal((*batch, L, E)),
              "key": rng.standard_normal((*batch, S, E)),
              "value": rng.standard_normal((*batch, S, O))}
    if use_attn_mask:
        mask = rng.standard_normal((L, S))
        mask[0, -1] = -np.inf  # an additive mask may hold -inf
        params["attn_mask"] = mask
    model = ScaledDotProduct(is_causal=is_causal, scale=scale, use_attn_mask=use_attn_mask)
    check_against_torch(model, lambda **t: attention(**t, is_causal=is_causal, scale=scale),
                        {}, params, rng, backend64)


def test_scaled_dot_product_defaults_and_terminals():
    model = ScaledDotProduct()
    assert model.is_causal is True and model.scale is None and model.dropout_p == 0.0
    assert sorted(model.input_keys) == ["key", "query", "value"]
    assert model.output_keys == ["output"]
    masked = ScaledDotProduct(is_causal=False, use_attn_mask=True)
    assert sorted(masked.input_keys) == ["attn_mask", "key", "query", "value"]


def test_scaled_dot_product_dynamic_sizes(backend64, rng):
    # The default scale reads E from the query's shape: E may be dynamic.
    q, k, v = (rng.standard_normal(s) for s in ((2, 3, 4), (2, 5, 4), (2, 5, 2)))
    pm = ml.compile(ScaledDotProduct(is_causal=False), backend64,
                    shapes={"query": [None, 3, None], "key": [None, 5, None],
                            "value": [None, 5, 2]})
    out = pm.evaluate({}, {"query": q, "key": k, "value": v})
    want = attention(*map(torch.tensor, (q, k, v)))["output"].numpy()
    np.testing.assert_allclose(out["output"], want, rtol=RTOL)


def test_scaled_dot_product_errors(backend64):
    with pytest.raises(MithrilError, match="is_causal=True cannot be used with use_attn_mask"):
        ScaledDotProduct(use_attn_mask=True)
    with pytest.raises(MithrilError, match="dropout is not supported"):
        ScaledDotProduct(dropout_p=0.1)
    with pytest.raises(TypeError):
        ScaledDotProduct(scale="large")
    # The causal mask needs L and S at compile time.
    with pytest.raises(MithrilError, match="query and key lengths known at compile time"):
        ml.compile(ScaledDotProduct(), backend64,
                   shapes={"query": [2, None, 4], "key": [2, None, 4], "value": [2, None, 3]})


# GroupNorm ----------------------------------------------------------------------

@pytest.mark.parametrize("num_groups,channels,use_scale,use_bias,eps", [
    (3, 6, True, True, 1e-5),
    (1, 4, True, True, 1e-3),
    (4, 4, False, True, 1e-5),
    (2, 4, True, False, 1e-5),
    (2, 4, False, False, 0.5),
    (32, 32, True, True, 1e-5),            # the default num_groups
])
def test_group_norm(num_groups, channels, use_scale, use_bias, eps, backend64, rng):
    params = {"input": rng.standard_normal((2, channels, 3, 2)) * 2 + 1}
    if use_scale:
        params["weight"] = rng.standard_normal((1, channels, 1, 1))
    if use_bias:
        params["bias"] = rng.standard_normal((1, channels, 1, 1))

    def reference(input, weight=None, bias=None):
        # Ones and zeros for a missing weight and bias: this torch's
        # group_norm backward fails without them.
        weight = torch.ones(channels, dtype=input.dtype) if weight is None else weight
        bias = torch.zeros(channels, dtype=input.dtype) if bias is None else bias
        return {"output": F.group_norm(input, num_groups, weight.reshape(-1), bias.reshape(-1),
                                       eps)}

    kwargs = {} if num_groups == 32 else {"num_groups": num_groups}
    model = GroupNorm(**kwargs, use_scale=use_scale, use_bias=use_bias, eps=eps)
    check_against_torch(model, reference, {}, params, rng, backend64)


def test_group_norm_terminals_and_dynamic_batch(backend64, rng):
    assert sorted(GroupNorm().input_keys) == ["bias", "input", "weight"]
    assert GroupNorm(use_scale=False, use_bias=False).input_keys == ["input"]
    # weight and bias are [1, C, 1, 1]; the batch size may be dynamic.
    pm = ml.compile(GroupNorm(2), backend64, shapes={"input": [None, 4, 3, 3]})
    assert tuple(pm.shapes["weight"]) == (1, 4, 1, 1)
    x = rng.standard_normal((3, 4, 3, 3))
    p = pm.randomize_params(seed=1)
    out = pm.evaluate(p, {"input": x})
    want = F.group_norm(torch.tensor(x), 2, torch.tensor(p["weight"].reshape(-1)),
                        torch.tensor(p["bias"].reshape(-1)))
    np.testing.assert_allclose(out["output"], want.numpy(), rtol=RTOL, atol=ATOL)


def test_group_norm_errors(backend64):
    with pytest.raises(MithrilError, match="6 channels do not split into 4 groups"):
        ml.compile(GroupNorm(4), backend64, shapes={"input": [2, 6, 3, 3]})
    with pytest.raises(MithrilError, match=r"needs an input \[B, C, H, W\]"):
        ml.compile(GroupNorm(2), backend64, shapes={"input": [2, 4, 3]})
    with pytest.raises(MithrilError, match="num_groups must be positive"):
        GroupNorm(0)


# PositionalEncoding -------------------------------------------------------------

def original_positional_encoding(input, hidden_dim, max_len):
    """The original's torch backend function (mithril/backends/with_autograd/
    torch_backend/ops.py), in float64."""
    pe = torch.zeros((max_len, hidden_dim), dtype=torch.float64)
    position = torch.arange(0, max_len)[:, None]
    div_term = torch.exp(torch.arange(0, hidden_dim, 2)
                         * (-torch.log(torch.tensor(10000.0, dtype=torch.float64)) / hidden_dim))
    pe[:, 0::2] = torch.sin(position * div_term)
    pe[:, 1::2] = torch.cos(position * div_term)
    pe = pe[None]
    return input + pe[:, : input.shape[1]]


@pytest.mark.parametrize("shape,max_len", [((2, 5, 8), 5000), ((1, 7, 6), 7), ((3, 1, 4), 10)])
def test_positional_encoding(shape, max_len, backend64, rng):
    hidden = shape[-1]
    model = PositionalEncoding(hidden, max_len) if max_len != 5000 else PositionalEncoding(hidden)
    check_against_torch(model, lambda input: {
        "output": original_positional_encoding(input, hidden, max_len)}, {},
        {"input": rng.standard_normal(shape)}, rng, backend64)


def test_positional_encoding_errors(backend64):
    with pytest.raises(TypeError):
        PositionalEncoding()
    with pytest.raises(MithrilError, match="longer than max_len=4"):
        ml.compile(PositionalEncoding(8, max_len=4), backend64, shapes={"input": [2, 5, 8]})
    with pytest.raises(MithrilError, match="last axis is 6"):
        ml.compile(PositionalEncoding(8), backend64, shapes={"input": [2, 5, 6]})


# LSTMCell -----------------------------------------------------------------------

def lstm_reference(input, prev_hidden, prev_cell, **weights):
    state, hidden_compl, output = lstm_step(input, prev_hidden, prev_cell, **weights)
    return {**state, "hidden_compl": hidden_compl, "output": output}


def lstm_params(rng, n, m, d_in, d_hid, d_out):
    p = {"input": rng.standard_normal((n, 1, d_in)),
         "prev_hidden": rng.standard_normal((m, 1, d_hid)),
         "prev_cell": rng.standard_normal((m, 1, d_hid)),
         "w_out": rng.standard_normal((d_out, d_hid)), "bias_out": rng.standard_normal(d_out)}
    for gate in "fico":
        p[f"w_{gate}"] = rng.standard_normal((d_hid, d_in + d_hid)) * 0.5
        p[f"bias_{gate}"] = rng.standard_normal(d_hid)
    return p


@pytest.mark.parametrize("n,m", [(3, 5), (2, 2)])
def test_lstm_cell(n, m, backend64, rng):
    # With m > n the cell updates the first n rows; hidden_compl holds the
    # others (empty when m == n).
    params = lstm_params(rng, n, m, d_in=3, d_hid=4, d_out=2)
    check_against_torch(LSTMCell(), lstm_reference, {}, params, rng, backend64)


def test_lstm_cell_terminals():
    cell = LSTMCell()
    assert sorted(cell.input_keys) == sorted(
        ["input", "prev_hidden", "prev_cell", "w_f", "w_i", "w_c", "w_o", "w_out",
         "bias_f", "bias_i", "bias_c", "bias_o", "bias_out"])
    assert sorted(cell.output_keys) == ["cell", "hidden", "hidden_compl", "output"]
    assert cell.canonical_input == "input" and cell.canonical_output == "output"


def test_lstm_cell_mithril_case(backend64):
    # test_lstm_cell_1 of Mithril's models_directed_test.json (Apache License
    # 2.0, github.com/synnada-ai/mithril tests/json_files): every weight and
    # input 1, hidden seeded with 1.
    ones = {k: np.ones(s) for k, s in {
        "input": (1, 1, 1), "prev_hidden": (1, 1, 1), "prev_cell": (1, 1, 1),
        "w_f": (1, 2), "w_i": (1, 2), "w_c": (1, 2), "w_o": (1, 2), "w_out": (1, 1),
        "bias_f": (1,), "bias_i": (1,), "bias_c": (1,), "bias_o": (1,), "bias_out": (1,)}.items()}
    seeds = {"hidden": np.ones((1, 1, 1)), "output": np.zeros((1, 1, 1)),
             "cell": np.zeros((1, 1, 1)), "hidden_compl": np.zeros((0, 1, 1))}
    out, grads = compile_eval(LSTMCell(), backend64, {}, ones, seeds)
    assert_same(out, {"hidden": [[[0.9109227280812932]]], "cell": [[[1.9004375399560818]]],
                      "output": [[[1.9109227280812933]]]})
    assert_same(grads, {
        "prev_hidden": [[[0.051311008440301294]]], "input": [[[0.051311008440301294]]],
        "prev_cell": [[[0.07761725055645553]]],
        "w_f": [[0.0036810658812818846] * 2], "w_i": [[0.003662862103803573] * 2],
        "w_c": [[0.0007657746786692737] * 2], "w_o": [[0.04320130577654656] * 2],
        "w_out": [[0.0]], "bias_f": [0.0036810658812818846], "bias_i": [0.003662862103803573],
        "bias_c": [0.0007657746786692737], "bias_o": [0.04320130577654656], "bias_out": [0.0]})


def test_lstm_cell_needs_the_batch_size(backend64):
    with pytest.raises(MithrilError, match="batch size of `input`"):
        ml.compile(LSTMCell(), backend64,
                   shapes={"input": [None, 1, 3], "prev_hidden": [None, 1, 4],
                           "prev_cell": [None, 1, 4], "w_out": [2, 4]})


# Together ------------------------------------------------------------------------

def test_models_nested_in_a_model(backend64, rng):
    # Each model emitted as an instance inside another: the helpers read the
    # shapes their instance is given.
    model = Model()
    model |= PositionalEncoding(4, max_len=16).connect(input="input", output="encoded")
    model |= ScaledDotProduct().connect(query="encoded", key="encoded", value="encoded",
                                        output="attended")
    model |= SwapAxes(1, 2).connect(input="attended", output="swapped")
    model |= SiLU().connect(input="swapped", output=IOKey("output"))

    def reference(input):
        encoded = original_positional_encoding(input, 4, 16)
        attended = attention(encoded, encoded, encoded, is_causal=True)["output"]
        return {"output": F.silu(attended.transpose(1, 2))}

    check_against_torch(model, reference, {}, {"input": rng.standard_normal((2, 5, 4))}, rng,
                        backend64)


def test_float32(backend32, rng):
    # The constants the helpers add (the causal mask, the sinusoid table,
    # the attention scale) follow the backend's float type.
    x = rng.standard_normal((2, 5, 4)).astype(np.float32)
    model = Model()
    model |= PositionalEncoding(4).connect(input="input", output="encoded")
    model |= ScaledDotProduct().connect(query="encoded", key="encoded", value="encoded",
                                        output=IOKey("output"))
    out = ml.compile(model, backend32, shapes={"input": [2, 5, 4]}).evaluate({}, {"input": x})
    assert out["output"].dtype == np.float32
    t = original_positional_encoding(torch.tensor(x, dtype=torch.float64), 4, 5000)
    want = attention(t, t, t, is_causal=True)["output"].numpy()
    np.testing.assert_allclose(out["output"], want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("axis", [0, 1, -1, None])
def test_concat_of_a_list_of_connections(axis):
    """The original's Concat(axis)(input=[...]): one terminal taking a list;
    axis=None flattens each input first."""
    model = Model()
    model |= Tanh()(input="a", output="ta")
    shapes = {"a": [2, 3], "b": [2, 3], "c": [2, 3]}
    if axis in (1, -1):
        shapes = {"a": [2, 3], "b": [2, 1], "c": [2, 2]}
    model |= Concat(axis=axis)(input=["ta", "b", IOKey("c")], output="output")
    pm = ml.compile(model, ml.MlirBackend(dtype=ml.float64), shapes=shapes,
                    trainable_keys={"a", "b", "c"})
    rng = np.random.default_rng(0)
    data = {k: rng.standard_normal(v) for k, v in shapes.items()}
    t = {k: torch.tensor(v, requires_grad=True) for k, v in data.items()}
    parts = [torch.tanh(t["a"]), t["b"], t["c"]]
    if axis is None:
        want = torch.cat([p.reshape(-1) for p in parts])
    else:
        want = torch.cat(parts, dim=axis)
    seed = rng.standard_normal(tuple(want.shape))
    want.backward(torch.tensor(seed))
    assert sorted(pm.input_keys) == ["a", "b", "c"]
    outs, grads = pm.evaluate(data, {}, output_gradients={"output": seed})
    np.testing.assert_allclose(outs["output"], want.detach().numpy(), rtol=1e-12)
    for key in t:
        np.testing.assert_allclose(grads[key], t[key].grad.numpy(), rtol=1e-12, err_msg=key)


def test_concat_list_errors():
    # Concat(axis)(input="a") is a list terminal (test_list_inputs.py); with
    # n given, the inputs are numbered.
    with pytest.raises(TypeError, match=r"Concat\(n=2\): input= takes a list of connections"):
        Concat(n=2, axis=0)(input="a")


X_SPECIAL = np.array([1.5, -0.5, np.nan, np.inf, -np.inf, 2.0, -3.0, 0.0])


@pytest.mark.parametrize("make, want", [
    (lambda: Floor(), lambda x: np.floor(x[np.isfinite(x)]).astype(np.int64)),
    (lambda: IsNan(), np.isnan),
    (lambda: NanToNum(), np.nan_to_num),
    (lambda: NanToNum(nan=1.0, posinf=7.0, neginf=-7.0),
     lambda x: np.nan_to_num(x, nan=1.0, posinf=7.0, neginf=-7.0)),
    (lambda: ZerosLike(), np.zeros_like),
])
def test_elementwise_models_match_numpy(make, want):
    model = Model()
    model |= make()(input="input", output="output")
    pm = ml.compile(model, ml.MlirBackend(dtype=ml.float64), shapes={"input": [8]})
    x = X_SPECIAL
    if isinstance(model.submodels[0][0], Floor):
        x = x[np.isfinite(x)]  # numpy's cast of NaN and inf to int is undefined
        pm = ml.compile(model, ml.MlirBackend(dtype=ml.float64), shapes={"input": [len(x)]})
    out = pm.evaluate({}, {"input": x})["output"]
    expected = want(X_SPECIAL) if not isinstance(model.submodels[0][0], Floor) else want(x)
    assert out.dtype == expected.dtype
    np.testing.assert_array_equal(out, expected)


def test_nan_to_num_and_zeros_like_gradients_follow_torch():
    model = Model()
    model |= NanToNum()(input="x", output="y")
    model |= ZerosLike()(input="x", output="z")
    model |= Add()(left="y", right="z", output="output")
    pm = ml.compile(model, ml.MlirBackend(dtype=ml.float64), shapes={"x": [8]},
                    trainable_keys={"x"})
    seed = np.arange(8.0)
    _, grads = pm.evaluate({"x": X_SPECIAL}, {}, output_gradients={"output": seed})
    t = torch.tensor(X_SPECIAL, requires_grad=True)
    (torch.nan_to_num(t) + torch.zeros_like(t)).backward(torch.tensor(seed))
    np.testing.assert_array_equal(grads["x"], t.grad.numpy())


@pytest.mark.parametrize("make, want", [
    (lambda: Ones(shape=(2, 3)), np.ones((2, 3))),
    (lambda: Ones(shape=[4], dtype=ml.int64), np.ones(4, np.int64)),
    (lambda: Eye(N=2, M=3), np.eye(2, 3)),
    (lambda: Eye(N=3), np.eye(3)),
    (lambda: Arange(stop=5), np.arange(5, dtype=np.int64)),
    (lambda: Arange(1, 2, 0.25), np.arange(1, 2, 0.25)),
    (lambda: Arange(start=5, stop=0, step=-2), np.arange(5, 0, -2, dtype=np.int64)),
])
def test_constant_models(make, want):
    model = Model()
    model |= make()(output="output")
    pm = ml.compile(model, ml.MlirBackend(dtype=ml.float64))
    out = pm.evaluate({}, {})["output"]
    assert out.dtype == want.dtype
    np.testing.assert_array_equal(out, want)


def test_constant_model_errors():
    with pytest.raises(MithrilError, match="Ones: shape must be non-negative ints"):
        Ones(shape=(2, -1))
    with pytest.raises(MithrilError, match="Arange: step must not be 0"):
        Arange(0, 4, 0)
    with pytest.raises(MithrilError, match="Eye: N must be an int"):
        Eye()


def test_split_into_equal_chunks_like_the_originals_gpt():
    """Split(3, -1) on a fused q/k/v projection, its outputs indexed from the
    call, as the original's GPT example does; against torch.chunk."""
    from mithril.models import Linear, Split
    x = IOKey("input", shape=[2, 3, 12])
    parts = Split(3, -1)(input=Linear(12)(input=x))
    q, k, v = parts[0], parts[1], parts[2]
    model = Model.create(output=ScaledDotProduct()(query=q, key=k, value=v) + parts[-1])
    pm = ml.compile(model, ml.MlirBackend(dtype=ml.float64))
    params = pm.randomize_params(seed=0)
    data = np.random.default_rng(0).standard_normal((2, 3, 12))
    seed = np.random.default_rng(1).standard_normal((2, 3, 4))
    out, grads = pm.evaluate(params, {"input": data}, output_gradients={"output": seed})
    t = {k: torch.tensor(v, requires_grad=True) for k, v in params.items()}
    h = torch.tensor(data) @ t["linear_0.weight"].T + t["linear_0.bias"]
    tq, tk, tv = torch.chunk(h, 3, dim=-1)
    scores = tq @ tk.transpose(-1, -2) / math.sqrt(4)
    mask = torch.triu(torch.ones(3, 3, dtype=torch.bool), diagonal=1)
    ref = torch.softmax(scores.masked_fill(mask, float("-inf")), -1) @ tv + tv
    ref.backward(torch.tensor(seed))
    np.testing.assert_allclose(out["output"], ref.detach().numpy(), rtol=1e-10)
    for key in t:
        np.testing.assert_allclose(grads[key], t[key].grad.numpy(), rtol=1e-9, atol=1e-12,
                                   err_msg=key)


def test_split_errors():
    from mithril.models import Buffer, Split
    with pytest.raises(MithrilError, match="split_size .* must be a positive int"):
        Split(0)
    model = Model()
    model |= Split(3, axis=1)(input=IOKey("input", shape=[2, 4]), output0="a")
    model |= Buffer()(input="a", output="output")
    with pytest.raises(MithrilError, match="does not split into 3 equal chunks"):
        ml.compile(model, ml.MlirBackend())
