# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""The original Mithril's example programs (python/tests/original_examples,
their model definitions as its users wrote them), built here, compiled with
MlirBackend(dtype=float64) at small sizes and evaluated with random
parameters, against the same computations written in torch (numpy for the
linear regression): outputs, and the gradients of the training scripts, at
rtol 1e-8. Where an example computes in float32 on purpose (Flux's casts),
the comparison is at float32's precision, and says so.

Sizes the examples fix in their code (Whisper's 1500 audio positions, Flux's
256 text tokens, CLIP's ModifiedResNet at 224x224 and SegFormer's decode head
at 512x512) are kept; the sizes their builders take are small."""

import math
from types import SimpleNamespace

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import mithril as ml
from mithril.errors import MithrilError
from mithril.models import Randn
from torch_oracle import lstm_step

RTOL = 1e-8
F32 = 1e-6  # rtol where the example computes in float32 on purpose


def backend():
    return ml.MlirBackend(dtype=ml.float64)


def close(got, want, rtol=RTOL, what=""):
    """got == want to rtol, with an absolute floor for elements near zero:
    rtol/100 of want's largest magnitude in float64, rtol of it where the
    example computes in float32 (its rounding spreads over the elements)."""
    want = want.detach().numpy() if isinstance(want, torch.Tensor) else np.asarray(want)
    got = np.asarray(got)
    assert got.shape == want.shape, (what, got.shape, want.shape)
    scale = float(np.abs(want).max()) if want.size else 0.0
    floor = rtol * scale * (1.0 if rtol >= F32 else 1e-2)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=floor, err_msg=what)


def init(params: dict, seed: int = 0) -> dict:
    """Random parameters of a sensible scale: matrices and kernels by
    1/sqrt(fan-in), normalization scales near 1, biases small."""
    rng = np.random.default_rng(seed)
    out = {}
    for key, value in params.items():
        v = rng.standard_normal(np.shape(value))
        leaf = key.rsplit(".", 1)[-1]
        if ("norm" in key or "ln" in key.split(".")[-2:][0]) and leaf in ("weight", "scale"):
            v = 1.0 + 0.1 * v
        elif leaf == "scale":
            v = 1.0 + 0.1 * v
        elif v.ndim >= 2:
            v = v / math.sqrt(np.prod(v.shape[1:]))
        else:
            v = 0.1 * v
        out[key] = v
    return out


def tt(params: dict, grad: bool = False) -> dict:
    return {k: torch.tensor(np.asarray(v), requires_grad=grad) for k, v in params.items()}


def sdpa(q, k, v, attn_mask=None, is_causal=False):
    """torch's scaled_dot_product_attention (not in every torch version)."""
    scores = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
    if is_causal:
        L, S = scores.shape[-2:]
        mask = torch.ones(L, S, dtype=torch.bool).tril()
        scores = scores.masked_fill(~mask, float("-inf"))
    if attn_mask is not None:
        scores = scores + attn_mask
    return torch.softmax(scores, dim=-1) @ v


def lin(x, p, name, bias=True):
    return F.linear(x, p[name + ".weight"], p.get(name + ".bias") if bias else None)


def layer_norm(x, p, name, eps=1e-5):
    return F.layer_norm(x, (x.shape[-1],), p[name + ".weight"], p[name + ".bias"], eps=eps)


def conv2d(x, p, name, stride=1, padding=0, groups=1, bias=True):
    return F.conv2d(x, p[name + ".weight"], p.get(name + ".bias") if bias else None, stride,
                    padding, 1, groups)


# ResNet-18 (model_api/resnet_logical_models.py) ---------------------------------------

def torch_resnet18(p, x):
    def block(x, pre, stride, down):
        h = F.relu(conv2d(x, p, pre + "convolution2d_0", stride, 1))
        h = conv2d(h, p, pre + "convolution2d_1", 1, 1)
        skip = conv2d(x, p, pre + "convolution2d_2", stride) if down else x
        return F.relu(skip + h)

    h = conv2d(x, p, "convolution2d_0", 2, 3)
    for i, stride in enumerate((1, 2, 2, 2)):
        h = block(h, f"model_{i}.model_0.", stride, True)
        h = block(h, f"model_{i}.model_1.", 1, False)
    return lin(h.flatten(1), p, "linear_0")


def test_resnet18_from_model_api():
    from original_examples.resnet_logical_models import resnet18
    model = resnet18(10)
    assert model.input_keys == ["input"] and model.output_keys == ["output"]
    pm = ml.compile(model, backend(), shapes={"input": [2, 3, 16, 16]})
    params = init(pm.randomize_params())
    x = np.random.default_rng(1).standard_normal((2, 3, 16, 16))
    out, grads = pm.evaluate(params, {"input": x}, output_gradients=True)
    p = tt(params, grad=True)
    want = torch_resnet18(p, torch.tensor(x))
    want.sum().backward()
    close(out["output"], want, what="output")
    assert sorted(grads) == sorted(p)
    for key in p:
        close(grads[key], p[key].grad, what=key)


def test_resnet_blocks_feed_the_skip_connection():
    """The example's basic_block reads its input through canonical_input and
    the downsample's output through canonical_output: no stray inputs."""
    from original_examples.resnet_logical_models import basic_block
    from mithril.models import Convolution2D
    block = basic_block(4, 2, Convolution2D(kernel_size=1, out_channels=4, stride=2))
    assert block.input_keys == ["input"]


# CNN training script (model_api/cnn_forcast_sine_training.py) --------------------------

def torch_cnn(p, x):
    h = F.relu(F.conv1d(x, p["convolution1d_0.weight"], p["convolution1d_0.bias"], 1, 2))
    h = F.max_pool1d(h, 2, 2).flatten(1)
    h = F.relu(lin(h, p, "linear_0"))
    return lin(h, p, "linear_1")


def test_cnn_forcast_sine_training():
    from original_examples import cnn_forcast_sine_training as ex
    data = {"input": np.random.default_rng(2).standard_normal((2, 1, ex.seq_len)),
            "target": np.random.default_rng(3).standard_normal((2, 1))}
    pm = ml.compile(ex.train_model, ex.backend, data_keys={"input", "target"},
                    shapes={"input": [2, 1, ex.seq_len], "target": [2, 1]})
    params = init(pm.randomize_params())
    out, grads = pm.evaluate(params, data, output_gradients=True)
    p = tt(params, grad=True)
    pred = torch_cnn(p, torch.tensor(data["input"]))
    cost = ((pred - torch.tensor(data["target"])) ** 2).mean()
    cost.backward()
    close(out["predictions"], pred, what="predictions")
    close(out["final_cost"], cost, what="final_cost")
    for key in p:
        close(grads[key], p[key].grad, what=key)
    # The example's own compile call (no shapes: compiled at the first call).
    deferred = ml.compile(ex.train_model, ex.backend, data_keys={"input", "target"})
    out2, grads2 = deferred.evaluate(params, data, output_gradients=True)
    close(out2["final_cost"], cost, what="final_cost (deferred)")
    close(grads2["linear_0.weight"], p["linear_0.weight"].grad, what="deferred gradient")


# Linear regression training script (model_api/linear_regression_jax_training.py) -----

def test_linear_regression_training():
    from original_examples import linear_regression_jax_training as ex
    params = ex.pm.randomize_params()
    out, grads = ex.pm.evaluate(params, output_gradients=True)
    x, y = ex.static_data["input"], ex.static_data["target"]
    w, b = params["weight"], params["bias"]
    residual = x @ w.T + b - y
    close(out["output"], x @ w.T + b, what="output")
    close(out["final_cost"], np.mean(residual ** 2), what="final_cost")
    close(grads["weight"], 2 * (residual * x).mean(0, keepdims=True), what="d weight")
    close(grads["bias"], 2 * residual.mean(0), what="d bias")


# Many-to-one RNN training script (model_api/many_to_one_any_backend_training.py) ------

def test_many_to_one_training():
    from original_examples import many_to_one_any_backend_training as ex
    pm, constants = ex.build(batch_size=2, input_features=3, hidden_features=4,
                             max_seq_length=3, output_features=3)
    params = init(pm.randomize_params())
    out, grads = pm.evaluate(params, output_gradients=True)
    p, c = tt(params, grad=True), tt(constants)
    hidden = c["initial_hidden"]
    for t in range(3):
        n = c[f"input{t}"].shape[0]
        hidden = torch.tanh(hidden[:n] @ p["w_hh"].T + c[f"input{t}"] @ p["w_ih"].T
                            + p["bias_h"])
        output = hidden @ p["w_ho"].T + p["bias_o"]
        close(out[f"output{t}"], output, what=f"output{t}")
    cost = ((output - c["target"]) ** 2).mean()
    cost.backward()
    close(out["final_cost"], cost, what="final_cost")
    for key in p:
        close(grads[key], p[key].grad, what=key)


# Variable-length LSTM (model_api/variable_length_many_to_one_lstm.py) -----------------

LSTM_WEIGHTS = ("w_f", "w_i", "w_c", "w_o", "w_out", "bias_f", "bias_i", "bias_c", "bias_o",
                "bias_out")


def torch_many_to_one(t, length, weights):
    state = {"hidden": t["initial_hidden"], "cell": t["initial_cell"]}
    outs, finals = {}, []
    for i in range(length):
        state, compl, outs[f"output{i}"] = lstm_step(t[f"input{i}"], **state, **weights)
        if i == length - 1:
            finals += [state["hidden"], compl]
        elif i > 0:
            finals.append(compl)
    return outs, torch.cat(finals, dim=0)


def test_variable_length_lstm_training_and_inference():
    from original_examples import variable_length_many_to_one_lstm as ex
    pm, static, in_length, out_length = ex.build_train_model(
        hidden_dim=3, sample_size=6, min_length=2, max_length=4)
    params = init(pm.randomize_params())
    out, grads = pm.evaluate(params, output_gradients=True)

    p, s = tt(params, grad=True), tt(static)
    encoder = {k: p[k] for k in LSTM_WEIGHTS if k in p}
    # The encoder's output layer is read by no output (any value will do).
    encoder.setdefault("w_out", torch.zeros(1, 3, dtype=torch.float64))
    encoder.setdefault("bias_out", torch.zeros(1, dtype=torch.float64))
    _, hidden_concat = torch_many_to_one(s, in_length, encoder)
    state = {"hidden": hidden_concat[s["indices"].long()], "cell": s["decoder_initial_cell"]}
    decoder = {k: p["decoder_" + k] for k in LSTM_WEIGHTS}
    x, cost = s["decoder_input"], 0.0
    for i in range(out_length):
        if i > 0:  # teacher forcing: the previous target's rows still running
            x = s[f"target{i - 1}"][:s[f"target{i}"].shape[0]]
        state, _, output = lstm_step(x, **state, **decoder)
        close(out[f"output{i}"], output, what=f"output{i}")
        cost = cost + ((output - s[f"target{i}"]) ** 2).mean()
    cost.backward()
    close(out["final_cost"], cost, what="final_cost")
    # The encoder's output layer is read by no output: not a parameter, as
    # in the original (whose physical model leaves unused keys out).
    assert "w_out" not in params and "decoder_w_out" in params
    for key in params:
        close(grads[key], p[key].grad, what=key)

    # EncoderDecoderInference with the trained model's parameters.
    test_model, test_inputs = ex.build_inference_model(
        hidden_dim=3, sample_size=6, inference_max_input=3, inference_max_target_length=3)
    result = test_model.evaluate(params, test_inputs)
    q = tt(params)
    ti = tt(test_inputs)
    _, hidden_concat = torch_many_to_one(
        ti, 3, {k: q.get(k, encoder[k].detach()) for k in LSTM_WEIGHTS})
    state = {"hidden": hidden_concat, "cell": ti["decoder_initial_cell"]}
    x = ti["decoder_input"]
    for i in range(3):
        state, _, x = lstm_step(x, **state, **{k: q["decoder_" + k] for k in LSTM_WEIGHTS})
        close(result[f"output{i}"], x, what=f"inference output{i}")


def test_pack_data_into_time_slots():
    from mithril.utils.utils import pack_data_into_time_slots, unpack_time_slot_data
    be = backend()
    data = [(np.arange(n, dtype=float).reshape(-1, 1) + 10 * i,) for i, n in enumerate((2, 4, 3))]
    indices, slots, ordered = pack_data_into_time_slots(data, be, key=("input",),
                                                        return_indices=True)
    assert indices == (1, 2, 0)
    assert [slots[f"input{t}"].shape for t in range(4)] == [(3, 1, 1), (3, 1, 1), (2, 1, 1),
                                                            (1, 1, 1)]
    np.testing.assert_array_equal(slots["input2"][:, 0, 0], [12.0, 22.0])
    back = unpack_time_slot_data(be, slots, max_length=4, max_size=3, output_dim=1,
                                 key="input")
    np.testing.assert_array_equal(back[0, :, 0], [10, 11, 12, 13])
    np.testing.assert_array_equal(back[2, :, 0], [0, 1, 0, 0])


# Whisper (whisper/whisper_model.py) ----------------------------------------------------

def torch_whisper(p, x, ids, heads):
    def attention(x, pre, causal, xa=None):
        src = x if xa is None else xa
        q = lin(x, p, pre + "q_proj")
        k = lin(src, p, pre + "k_proj", bias=False)
        v = lin(src, p, pre + "v_proj")
        B, T, D = x.shape
        S = src.shape[1]
        q = q.reshape(B, T, heads, -1).transpose(1, 2)
        k = k.reshape(B, S, heads, -1).transpose(1, 2)
        v = v.reshape(B, S, heads, -1).transpose(1, 2)
        o = sdpa(q, k, v, is_causal=causal)
        return lin(o.transpose(1, 2).reshape(B, T, D), p, pre + "out_proj")

    def ffn(x, pre):
        return lin(F.gelu(lin(layer_norm(x, p, pre + "final_layer_norm"), p, pre + "fc1")),
                   p, pre + "fc2")

    e = "model.encoder."
    h = F.gelu(F.conv1d(x, p[e + "conv1.weight"], p[e + "conv1.bias"], padding=1))
    h = F.gelu(F.conv1d(h, p[e + "conv2.weight"], p[e + "conv2.bias"], stride=2, padding=1))
    h = p[e + "weight"] + h.transpose(1, 2)
    pre = e + "layers.0."
    h = h + attention(layer_norm(h, p, pre + "self_attn_layer_norm"), pre + "self_attn.", False)
    h = h + ffn(h, pre)
    memory = layer_norm(h, p, e + "layer_norm")

    d = "model.decoder."
    T = ids.shape[1]
    y = p[d + "weight"][ids] + p[d + "weight_1"][:T]
    pre = d + "layers.0."
    y = y + attention(layer_norm(y, p, pre + "self_attn_layer_norm"), pre + "self_attn.", True)
    y = y + attention(layer_norm(y, p, pre + "encoder_attn_layer_norm"), pre + "encoder_attn.",
                      False, memory)
    y = y + ffn(y, pre)
    y = layer_norm(y, p, d + "layer_norm")
    return F.linear(y, p["proj_out.weight"])


def test_whisper():
    from original_examples.whisper_model import whisper_model
    model = whisper_model(num_layers=1, input_dim=8, num_heads=2, ffn_dim=16)
    assert sorted(model.input_keys) == ["decoder_input_ids", "input"]
    assert len(model.output_keys) == 1
    pm = ml.compile(model, backend(), shapes={"input": [2, 4, 3000], "decoder_input_ids": [2, 5]},
                    inference=True)
    params = init(pm.randomize_params())
    rng = np.random.default_rng(4)
    data = {"input": rng.standard_normal((2, 4, 3000)),
            "decoder_input_ids": rng.integers(0, 51865, (2, 5))}
    out = pm.evaluate(params, data)
    want = torch_whisper(tt(params), torch.tensor(data["input"]),
                         torch.tensor(data["decoder_input_ids"]), heads=2)
    # The proj_out Linear's output is the model's unnamed canonical output
    # (the original names it "output" by its origin; here it keeps its key).
    (key,) = pm.output_keys
    close(out[key], want, what="logits")


# T5 (t5.py) ----------------------------------------------------------------------------

T5_CONFIG = dict(d_kv=4, d_model=8, num_heads=2, d_ff=16, vocab_size=11, num_layers=1,
                 relative_attention_num_buckets=8, relative_attention_max_distance=20)


def torch_t5_bias(p, name, length, bidirectional, num_buckets, max_distance):
    context = torch.arange(length)[:, None]
    memory = torch.arange(length)[None, :]
    relative = memory - context
    buckets = torch.zeros_like(relative)
    if bidirectional:
        num_buckets //= 2
        buckets = buckets + (relative > 0).to(torch.int64) * num_buckets
        relative = relative.abs()
    else:
        relative = -torch.minimum(relative, torch.zeros_like(relative))
    max_exact = num_buckets // 2
    is_small = relative < max_exact
    scale = (num_buckets - max_exact) / math.log(max_distance / max_exact)
    log = torch.log(relative.to(torch.float32) / max_exact)
    large = torch.minimum((max_exact + log * scale).to(torch.int64),
                          torch.tensor(num_buckets - 1))
    buckets = buckets + torch.where(is_small, relative, large)
    return p[name][buckets].permute(2, 0, 1)


def torch_t5_attention(p, pre, x, memory, heads, mask=None):
    B, L, _ = x.shape
    S = memory.shape[1]
    q = F.linear(x, p[pre + "query_proj.weight"]).reshape(B, L, heads, -1).transpose(1, 2)
    k = F.linear(memory, p[pre + "key_proj.weight"]).reshape(B, S, heads, -1).permute(0, 2, 3, 1)
    v = F.linear(memory, p[pre + "value_proj.weight"]).reshape(B, S, heads, -1).transpose(1, 2)
    scores = q @ k
    if mask is not None:
        scores = scores + mask
    weights = torch.softmax(scores.to(torch.float32), dim=-1).to(scores.dtype)
    out = (weights @ v).transpose(1, 2).reshape(B, L, -1)
    return F.linear(out, p[pre + "out_proj.weight"])


def torch_t5_rms(x, w):
    return x / torch.sqrt((x ** 2).mean(-1, keepdim=True) + 1e-5) * w


def torch_t5_dense(p, pre, x):
    return F.linear(F.relu(F.linear(x, p[pre + "wi.weight"])), p[pre + "wo.weight"])


def torch_t5(p, ids, memory=None):
    c = T5_CONFIG
    heads, L = c["num_heads"], ids.shape[1]
    x = p["weight"][ids]
    if memory is None:
        bias = torch_t5_bias(p, "encoder.relative_attention_bias.weight", L, True,
                             c["relative_attention_num_buckets"],
                             c["relative_attention_max_distance"])
        pre = "encoder.layers_0."
        h = torch_t5_rms(x, p[pre + "ln1.weight"])
        x = x + torch_t5_attention(p, pre + "attention.", h, h, heads, bias)
        x = x + torch_t5_dense(p, pre + "dense.", torch_t5_rms(x, p[pre + "ln2.weight"]))
        return {"output": torch_t5_rms(x, p["encoder.ln.weight"]), "pos_bias": bias}
    bias = torch_t5_bias(p, "decoder.relative_attention_bias.weight", L, False,
                         c["relative_attention_num_buckets"], c["relative_attention_max_distance"])
    pre = "decoder.layers_0."
    h = torch_t5_rms(x, p[pre + "ln1.weight"])
    x = x + torch_t5_attention(p, pre + "self_attention.", h, h, heads, bias)
    h = torch_t5_rms(x, p[pre + "ln2.weight"])
    x = x + torch_t5_attention(p, pre + "cross_attention.", h, memory, heads)
    x = x + torch_t5_dense(p, pre + "dense.", torch_t5_rms(x, p[pre + "ln3.weight"]))
    x = torch_t5_rms(x, p["decoder.ln.weight"]) * c["d_model"] ** -0.5
    return {"output": x @ p["weight"].T}


def check_t5(t5_encode, t5_decode):
    rng = np.random.default_rng(5)
    ids = rng.integers(0, T5_CONFIG["vocab_size"], (2, 5))
    memory = rng.standard_normal((2, 6, T5_CONFIG["d_model"]))
    encoder = ml.compile(t5_encode(T5_CONFIG), backend(), shapes={"input": [2, 5]},
                         inference=True)
    params = init(encoder.randomize_params())
    out = encoder.evaluate(params, {"input": ids})
    want = torch_t5(tt(params), torch.tensor(ids))
    # The example's attention takes its softmax in float32.
    close(out["output"], want["output"], F32, "encoder output")
    close(out["pos_bias"], want["pos_bias"], what="encoder position bias")
    decoder = ml.compile(t5_decode(T5_CONFIG), backend(),
                         shapes={"input": [2, 5], "memory": [2, 6, T5_CONFIG["d_model"]]},
                         inference=True)
    params = init(decoder.randomize_params())
    out = decoder.evaluate(params, {"input": ids, "memory": memory})
    close(out["output"], torch_t5(tt(params), torch.tensor(ids), torch.tensor(memory))["output"],
          F32, "decoder logits")


def test_t5():
    from original_examples.t5 import t5_decode, t5_encode
    check_t5(t5_encode, t5_decode)


# Flux layers (flux/layers.py) ----------------------------------------------------------

def torch_rms(x, scale):
    xf = x.to(torch.float32)
    rrms = 1 / torch.sqrt((xf ** 2).mean(-1, keepdim=True) + 1e-6)
    return (xf * rrms).to(x.dtype) * scale


def torch_modulation(p, pre, vec, double):
    out = lin(F.silu(vec), p, pre + "lin")[:, None, :]
    if double:
        first, second = out.chunk(2, dim=-1)
        return first.chunk(3, dim=-1), second.chunk(3, dim=-1)
    return out.chunk(3, dim=-1), None


def torch_rearrange(x, heads):
    B, L = x.shape[:2]
    return x.reshape(B, L, 3, heads, -1).permute(2, 0, 3, 1, 4)


def torch_apply_rope(xq, xk, freqs):
    def rope(x):
        x_ = x.reshape(*x.shape[:3], -1, 1, 2)
        out = freqs[..., 0] * x_[..., 0] + freqs[..., 1] * x_[..., 1]
        return out.reshape(x.shape).to(x.dtype)
    return rope(xq), rope(xk)


def torch_attention(q, k, v, pe):
    q, k = torch_apply_rope(q, k, pe)
    x = sdpa(q, k, v)
    return x.transpose(1, 2).reshape(x.shape[0], x.shape[2], -1)


def torch_single_stream(p, x, vec, pe, hidden, heads, mlp_ratio=4.0):
    mod, _ = torch_modulation(p, "modulation.", vec, False)
    x_mod = (1 + mod[1]) * F.layer_norm(x, (hidden,), eps=1e-5) + mod[0]
    lin1 = lin(x_mod, p, "linear1")
    qkv, mlp = lin1[..., :3 * hidden], lin1[..., 3 * hidden:]
    q, k, v = torch_rearrange(qkv, heads)
    q = torch_rms(q, p["norm.query_norm.scale"])
    k = torch_rms(k, p["norm.key_norm.scale"])
    attn = torch_attention(q, k, v, pe)
    out = lin(torch.cat([attn, F.gelu(mlp, approximate="tanh")], dim=2), p, "linear2")
    return x + mod[2] * out


def torch_double_stream(p, img, txt, vec, pe, heads):
    hidden = img.shape[-1]

    def stream(x, name):
        m1, m2 = torch_modulation(p, name + "_mod.", vec, True)
        normed = F.layer_norm(x, (hidden,), eps=1e-6)
        qkv = F.linear((1 + m1[1]) * normed + m1[0], p[name + "_attn_qkv.weight"])
        q, k, v = torch_rearrange(qkv, heads)
        q = torch_rms(q, p[name + "_attn_norm.query_norm.scale"])
        k = torch_rms(k, p[name + "_attn_norm.key_norm.scale"])
        return m1, m2, q, k, v

    i1, i2, iq, ik, iv = stream(img, "img")
    t1, t2, tq, tk, tv = stream(txt, "txt")
    attn = torch_attention(torch.cat([tq, iq], 2), torch.cat([tk, ik], 2),
                           torch.cat([tv, iv], 2), pe)

    def finish(x, attn_part, m1, m2, name):
        x = x + m1[2] * lin(attn_part, p, name + "_attn_proj")
        h = (1 + m2[1]) * F.layer_norm(x, (hidden,), eps=1e-6) + m2[0]
        h = lin(F.gelu(lin(h, p, name + "_mlp.0"), approximate="tanh"), p, name + "_mlp.2")
        return x + m2[2] * h

    return (finish(img, attn[:, 256:], i1, i2, "img"),
            finish(txt, attn[:, :256], t1, t2, "txt"))


def torch_rope(pos, dim, theta):
    omega = 1.0 / (theta ** (torch.arange(0, dim, 2).to(torch.float32) / dim))
    out = pos[..., None] * omega
    out = torch.stack([out.cos(), -out.sin(), out.sin(), out.cos()], dim=-1)
    return out.reshape(*out.shape[:-1], 2, 2).to(torch.float32)


def test_flux_double_stream_block():
    import original_examples.flux_layers as fl
    H, heads, hd = 8, 2, 4
    shapes = {"img": [2, 3, H], "txt": [2, 256, H], "vec": [2, H],
              "pe": [2, 1, 259, hd // 2, 2, 2]}
    pm = ml.compile(fl.double_stream_block(H, heads, 2.0), backend(), shapes=shapes,
                    inference=True)
    params = init(pm.randomize_params())
    rng = np.random.default_rng(6)
    data = {k: rng.standard_normal(v) for k, v in shapes.items()}
    out = pm.evaluate(params, data)
    d = tt(data)
    img, txt = torch_double_stream(tt(params), d["img"], d["txt"], d["vec"], d["pe"], heads)
    # The example's rms_norm normalizes in float32.
    close(out["img_out"], img, F32, "img_out")
    close(out["txt_out"], txt, F32, "txt_out")
    m1, m2 = torch_modulation(tt(params), "img_mod.", d["vec"], True)
    for i in range(3):
        close(out[f"img_mod_1[{i}]"], m1[i], what=f"img_mod_1[{i}]")
        close(out[f"img_mod_2[{i}]"], m2[i], what=f"img_mod_2[{i}]")


def test_flux_single_stream_block():
    import original_examples.flux_layers as fl
    H, heads, hd = 8, 2, 4
    shapes = {"input": [2, 5, H], "vec": [2, H], "pe": [2, 1, 5, hd // 2, 2, 2]}
    pm = ml.compile(fl.single_stream_block(H, heads), backend(), shapes=shapes, inference=True)
    params = init(pm.randomize_params())
    rng = np.random.default_rng(7)
    data = {k: rng.standard_normal(v) for k, v in shapes.items()}
    out = pm.evaluate(params, data)
    d = tt(data)
    want = torch_single_stream(tt(params), d["input"], d["vec"], d["pe"], H, heads)
    close(out["output"], want, F32, "output")


def test_flux_last_layer_mlp_embedder_and_timestep_embedding():
    import original_examples.flux_layers as fl
    rng = np.random.default_rng(8)
    pm = ml.compile(fl.last_layer(4, 2, 3), backend(), shapes={"input": [2, 5, 4], "vec": [2, 4]},
                    inference=True)
    params = init(pm.randomize_params())
    data = {"input": rng.standard_normal((2, 5, 4)), "vec": rng.standard_normal((2, 4))}
    p, d = tt(params), tt(data)
    mod = lin(d["vec"] * torch.sigmoid(d["vec"]), p, "adaLN_modulation.1")
    shift, scale = mod.chunk(2, dim=1)
    want = lin((1 + scale[:, None, :]) * F.layer_norm(d["input"], (4,)) + shift[:, None, :], p,
               "linear")
    close(pm.evaluate(params, data)["output"], want, what="last_layer")

    pm = ml.compile(fl.mlp_embedder(8), backend(), shapes={"input": [2, 5]}, inference=True)
    params = init(pm.randomize_params())
    x = rng.standard_normal((2, 5))
    p = tt(params)
    want = lin(F.silu(lin(torch.tensor(x), p, "in_layer")), p, "out_layer")
    close(pm.evaluate(params, {"input": x})["output"], want, what="mlp_embedder")

    for dim in (6, 7):
        pm = ml.compile(fl.timestep_embedding(dim), backend(), shapes={"input": [3]},
                        inference=True)
        t = rng.uniform(0, 1e-3, 3)
        # In float32, as the example casts.
        args = (torch.tensor(t) * 1000.0)[:, None].to(torch.float32)
        freqs = torch.exp(-math.log(10000) * torch.arange(0, dim // 2).to(torch.float32)
                          / (dim // 2))
        emb = torch.cat([torch.cos(args * freqs[None]), torch.sin(args * freqs[None])], dim=-1)
        if dim % 2:
            emb = torch.zeros_like(emb[:, :1])  # the example's odd branch outputs the zeros
        close(pm.evaluate({}, {"input": t})["output"], emb.to(torch.float64), F32,
              f"timestep_embedding({dim})")


def test_flux_embed_nd_and_rope():
    import original_examples.flux_layers as fl
    pos = np.random.default_rng(9).integers(0, 4, (2, 3, 2)).astype(np.float64)
    pm = ml.compile(fl.embed_nd(10000, [4, 2]), backend(), shapes={"input": [2, 3, 2]},
                    inference=True)
    out = pm.evaluate({}, {"input": pos})["output"]
    p = torch.tensor(pos)
    want = torch.cat([torch_rope(p[..., 0], 4, 10000), torch_rope(p[..., 1], 2, 10000)],
                     dim=-3)[:, None]
    assert out.dtype == np.float32
    close(out, want, F32, "embed_nd")


def test_flux_apply_rope_and_attention():
    import original_examples.flux_layers as fl
    rng = np.random.default_rng(10)
    shapes = {"q": [2, 2, 3, 4], "k": [2, 2, 3, 4], "v": [2, 2, 3, 4], "pe": [2, 1, 3, 2, 2, 2]}
    pm = ml.compile(fl.attention(), backend(), shapes=shapes, inference=True)
    data = {k: rng.standard_normal(v) for k, v in shapes.items()}
    d = tt(data)
    close(pm.evaluate({}, data)["output"], torch_attention(d["q"], d["k"], d["v"], d["pe"]),
          what="attention")


# Flux auto-encoder (flux/auto_encoder.py) ----------------------------------------------

def torch_group_norm(x, p, name, eps=1e-6):
    return F.group_norm(x, 32, p[name + ".weight"].flatten(), p[name + ".bias"].flatten(), eps)


def torch_ae_resnet(p, pre, x):
    h = conv2d(F.silu(torch_group_norm(x, p, pre + "norm1")), p, pre + "conv1", 1, 1)
    h = conv2d(F.silu(torch_group_norm(h, p, pre + "norm2")), p, pre + "conv2", 1, 1)
    if pre + "nin_shortcut.weight" in p:
        x = conv2d(x, p, pre + "nin_shortcut")
    return x + h


def torch_ae_attention(p, pre, x):
    h = torch_group_norm(x, p, pre + "norm")
    B, C, H, W = h.shape

    def heads(name):
        return conv2d(h, p, pre + name).permute(0, 2, 3, 1).reshape(B, 1, -1, C)

    out = sdpa(heads("q"), heads("k"), heads("v"))
    out = out.reshape(B, H, W, C).permute(0, 3, 1, 2)
    return conv2d(out, p, pre + "proj_out") + x


def torch_ae_encoder(p, x, ch_mult, num_res_blocks):
    h = conv2d(x, p, "conv_in", 1, 1)
    for level in range(len(ch_mult)):
        for i in range(num_res_blocks):
            h = torch_ae_resnet(p, f"down.{level}.block.{i}.", h)
        if level != len(ch_mult) - 1:
            h = conv2d(F.pad(h, (0, 1, 0, 1)), p, f"down.{level}.downsample.conv", 2)
    h = torch_ae_resnet(p, "mid_block_1.", h)
    h = torch_ae_attention(p, "mid_attn_1.", h)
    h = torch_ae_resnet(p, "mid_block_2.", h)
    return conv2d(F.silu(torch_group_norm(h, p, "norm_out")), p, "conv_out", 1, 1)


def torch_ae_decoder(p, z, ch_mult, num_res_blocks, prefix=""):
    p = {k[len(prefix):]: v for k, v in p.items() if k.startswith(prefix)}
    h = conv2d(z, p, "conv_in", 1, 1)
    h = torch_ae_resnet(p, "mid_block_1.", h)
    h = torch_ae_attention(p, "mid_attn_1.", h)
    h = torch_ae_resnet(p, "mid_block_2.", h)
    for level in range(len(ch_mult)):
        index = len(ch_mult) - level - 1
        for i in range(num_res_blocks + 1):
            h = torch_ae_resnet(p, f"up.{index}.block.{i}.", h)
        if index != 0:
            h = h.repeat_interleave(2, dim=2).repeat_interleave(2, dim=3)
            h = conv2d(h, p, f"up.{index}.upsample.conv", 1, 1)
    return conv2d(F.silu(torch_group_norm(h, p, "norm_out")), p, "conv_out", 1, 1)


# attn_block fixes 512 channels (ch * ch_mult[-1]); a 4x4 image keeps it small.
SMALL_AUTO_ENCODER = dict(resolution=4, in_channels=3, ch=256, out_ch=3, ch_mult=[1, 2],
                          num_res_blocks=1, z_channels=2, scale_factor=0.3, shift_factor=0.1)


def test_flux_auto_encoder_encoder_and_decoder():
    import original_examples.flux_auto_encoder as ae
    rng = np.random.default_rng(11)
    # attn_block fixes 512 channels: ch * ch_mult[-1] = 512.
    pm = ml.compile(ae.encoder(256, [1, 2], 1, 2), backend(), shapes={"input": [1, 3, 4, 4]},
                    inference=True)
    params = init(pm.randomize_params())
    x = rng.standard_normal((1, 3, 4, 4))
    want = torch_ae_encoder(tt(params), torch.tensor(x), [1, 2], 1)
    close(pm.evaluate(params, {"input": x})["output"], want, what="encoder")

    ae_params = ae.AutoEncoderParams(**SMALL_AUTO_ENCODER)
    pm = ml.compile(ae.decode(ae_params), backend(), shapes={"input": [1, 2, 2, 2]},
                    inference=True)
    params = init(pm.randomize_params())
    z = rng.standard_normal((1, 2, 2, 2))
    want = torch_ae_decoder(tt(params), torch.tensor(z) / 0.3 - 0.1, [1, 2], 1,
                            prefix="decoder.")
    close(pm.evaluate(params, {"input": z})["output"], want, what="decode")


def default_key_samples(shape):
    """The samples a Randn without a key draws (key 42), in float64."""
    model = ml.Model()
    model |= Randn(shape=tuple(shape))(output="output")
    return ml.compile(model, backend(), inference=True).evaluate({}, {})["output"]


def test_flux_diagonal_gaussian_and_auto_encoder_sample_with_randn():
    """diagonal_gaussian: mean + exp(logvar / 2) * the Randn samples of the
    mean's shape; auto_encoder: encoder, that sampling, shift and scale,
    decoder."""
    import original_examples.flux_auto_encoder as ae
    rng = np.random.default_rng(16)
    pm = ml.compile(ae.diagonal_gaussian(), backend(), shapes={"input": [2, 6, 3, 3]},
                    inference=True)
    x = rng.standard_normal((2, 6, 3, 3))
    eps = default_key_samples((2, 3, 3, 3))
    close(pm.evaluate({}, {"input": x})["output"], x[:, :3] + np.exp(0.5 * x[:, 3:]) * eps,
          what="diagonal gaussian sample")

    ae_params = ae.AutoEncoderParams(**SMALL_AUTO_ENCODER)
    pm = ml.compile(ae.auto_encoder(ae_params), backend(), shapes={"input": [1, 3, 4, 4]},
                    inference=True)
    params = init(pm.randomize_params())
    x = rng.standard_normal((1, 3, 4, 4))
    p = tt(params)
    moments = torch_ae_encoder({k.removeprefix("encoder."): v for k, v in p.items()},
                               torch.tensor(x), [1, 2], 1)
    mean, logvar = moments.chunk(2, dim=1)
    z = mean + torch.exp(0.5 * logvar) * torch.tensor(default_key_samples(mean.shape))
    want = torch_ae_decoder(p, (z - 0.1) * 0.3, [1, 2], 1, prefix="decoder.")
    close(pm.evaluate(params, {"input": x})["output"], want, what="auto-encoder")


# CLIP (clip/model.py) ------------------------------------------------------------------

def torch_clip_resblock(p, pre, x, heads, mask):
    B, L, d = x.shape  # the example's names: B is the sequence, L the batch

    h = layer_norm(x, p, pre + "ln_1")
    proj = lin(h, p, pre + "attn.in_proj").reshape(B, L, 3, -1).reshape(1, B, L, 3, d)
    proj = proj.permute(3, 1, 2, 0, 4).reshape(3, B, L, -1)
    q, k, v = (proj[i].reshape(B, L, heads, d // heads).permute(1, 2, 0, 3) for i in range(3))
    attn = sdpa(q, k, v, attn_mask=mask)
    attn = lin(attn.permute(2, 0, 1, 3).reshape(B * L, d), p, pre + "attn.out_proj")
    attn = attn.reshape(B, L, d)
    h = layer_norm(x + attn, p, pre + "ln_2")
    h = lin(h, p, pre + "mlp.c_fc")
    h = lin(h * torch.sigmoid(1.702 * h), p, pre + "mlp.c_proj")
    return x + attn + h


def test_clip_text_transformer_and_norm():
    import original_examples.clip_model as cm
    pm = ml.compile(cm.transformer(8, 2, 2, use_attn_mask=True), backend(),
                    shapes={"input": [77, 2, 8]}, inference=True)
    params = init(pm.randomize_params())
    x = np.random.default_rng(12).standard_normal((77, 2, 8))
    p = tt(params)
    mask = torch.where(torch.arange(77)[:, None] >= torch.arange(77)[None, :], 0.0,
                       float("-inf")).to(torch.float64)
    h = torch.tensor(x)
    for i in range(2):
        h = torch_clip_resblock(p, f"resblocks.{i}.", h, 2, mask)
    close(pm.evaluate(params, {"input": x})["output"], h, what="text transformer")

    pm = ml.compile(cm.norm(p=2, axis=1, keepdim=True), backend(), shapes={"input": [3, 4]},
                    inference=True)
    x = np.random.default_rng(13).standard_normal((3, 4))
    close(pm.evaluate({}, {"input": x})["output"], np.linalg.norm(x, axis=1, keepdims=True),
          what="norm")


def test_clip_vision_transformer():
    """Patches by a strided convolution, the class embedding (added to the
    zeros the example makes from Randn samples) before them, position
    embeddings, ln_pre, the transformer, ln_post, the class token projected."""
    import original_examples.clip_model as cm
    width, heads, patch, resolution = 8, 2, 4, 8
    pm = ml.compile(cm.vision_transformer(resolution, patch, width, 1, heads, 6, use_proj=True),
                    backend(), shapes={"input": [2, 3, resolution, resolution]}, inference=True)
    params = init(pm.randomize_params())
    x = np.random.default_rng(17).standard_normal((2, 3, resolution, resolution))
    p = tt(params)
    h = F.conv2d(torch.tensor(x), p["conv1.weight"], stride=patch).flatten(2).permute(0, 2, 1)
    cls = p["class_embedding"].expand(2, 1, width)
    h = torch.cat([cls, h], dim=1) + p["positional_embedding"]
    h = layer_norm(h, p, "ln_pre").permute(1, 0, 2)
    h = torch_clip_resblock(p, "transformer.resblocks.0.", h, heads, None).permute(1, 0, 2)
    h = layer_norm(h, p, "ln_post")
    close(pm.evaluate(params, {"input": x})["output"], h[:, 0, :] @ p["proj"],
          what="vision transformer")


def torch_clip_modified_resnet(p, d, x, layers):
    def gn(x, name):
        return F.group_norm(x, 1, p[name + ".weight"].flatten(), p[name + ".bias"].flatten())

    def bottleneck(x, pre, inplanes, planes, stride):
        h = F.relu(gn(conv2d(x, p, pre + "conv1", bias=False), pre + "bn1"))
        h = F.relu(gn(conv2d(h, p, pre + "conv2", padding=1, bias=False), pre + "bn2"))
        if stride > 1:
            h = F.max_pool2d(h, stride)
        h = gn(conv2d(h, p, pre + "conv3", bias=False), pre + "bn3")
        if stride > 1 or inplanes != planes * 4:
            skip = F.max_pool2d(x, stride)
            skip = gn(conv2d(skip, p, pre + "downsample_0", bias=False), pre + "downsample_1")
        else:
            skip = x
        return F.relu(h + skip)

    h = F.relu(gn(conv2d(x, p, "conv1", 2, 1, bias=False), "bn1"))
    h = F.relu(gn(conv2d(h, p, "conv2", padding=1, bias=False), "bn2"))
    h = F.relu(gn(conv2d(h, p, "conv3", padding=1, bias=False), "bn3"))
    h = F.max_pool2d(h, 2)
    for idx, blocks in enumerate(layers):
        planes, stride = 64 * 2 ** idx, 1 if idx == 0 else 2
        h = bottleneck(h, f"layer{idx + 1}.model_0.", 64, planes, stride)
        for i in range(1, blocks):
            h = bottleneck(h, f"layer{idx + 1}.model_{i}.", 256, planes, 1)
    # The example's attention pool: the mean after the positions.
    h = h.flatten(2).permute(2, 0, 1)
    h = torch.cat([h, h.mean(0, keepdim=True)], dim=0) + d["positional_embedding"][:, None, :]
    query, key = h[:1], h
    heads, dim = 32, 2048
    scaling = (dim // heads) ** -0.5
    q = (query @ d["q_proj_weight"].T + d["in_proj_bias"][:dim]) * scaling
    k = key @ d["k_proj_weight"].T + d["in_proj_bias"][dim:2 * dim]
    v = key @ d["v_proj_weight"].T + d["in_proj_bias"][2 * dim:]
    q = q.reshape(1, heads, dim // heads).transpose(0, 1)
    k = k.reshape(-1, heads, dim // heads).transpose(0, 1)
    v = v.reshape(-1, heads, dim // heads).transpose(0, 1)
    out = sdpa(q, k, v).transpose(0, 1).reshape(1, 1, dim)
    out = out @ d["out_proj_weight"].T + d["out_proj_bias"]
    return out.squeeze().reshape(1, 1024)


def attention_pool_data(rng, positional_name: str) -> dict:
    """The ModifiedResNet attention pool's projections, data inputs of the
    2048 width the example fixes (the position embedding under the name the
    model gives it)."""
    return {"q_proj_weight": rng.standard_normal((2048, 2048)) / 45,
            "k_proj_weight": rng.standard_normal((2048, 2048)) / 45,
            "v_proj_weight": rng.standard_normal((2048, 2048)) / 45,
            "in_proj_bias": 0.1 * rng.standard_normal(6144),
            "out_proj_weight": rng.standard_normal((1024, 2048)) / 45,
            "out_proj_bias": 0.1 * rng.standard_normal(1024),
            positional_name: rng.standard_normal((50, 2048))}


def test_clip_modified_resnet():
    """The example's ModifiedResNet fixes a 224x224 image and a 2048-wide
    attention pool (its projections are data inputs of those sizes)."""
    import original_examples.clip_model as cm
    model = cm.modified_resnet((2, 2, 2, 2), 1024, 32)
    pm = ml.compile(model, backend(), inference=True)
    rng = np.random.default_rng(14)
    data = {"input": rng.standard_normal((1, 3, 224, 224)),
            **attention_pool_data(rng, "positional_embedding")}
    params = init(pm.randomize_params())
    out = pm.evaluate(params, data)
    want = torch_clip_modified_resnet(tt(params), tt(data), torch.tensor(data["input"]),
                                      (2, 2, 2, 2))
    close(out["output"], want, what="ModifiedResNet")


def test_clip_image_and_text_towers():
    """The whole `clip`: the ModifiedResNet image tower, the text tower
    (token and position embeddings, the masked transformer, ln_final), the
    end-of-text tokens found by an integer ArgMax of the token ids, the
    projections, and the scaled cosine logits."""
    import original_examples.clip_model as cm
    width, heads, context = 8, 2, 77
    model = cm.clip(1024, 224, (2, 2, 2, 2), 64, 32, context, 11, width, heads, 1)
    pm = ml.compile(model, backend(), shapes={"text": [2, context], "image": [1, 3, 224, 224]},
                    inference=True)
    rng = np.random.default_rng(15)
    text = rng.integers(0, 10, (2, context))
    text[0, 5] = text[1, 40] = 10  # the end-of-text token: the largest id
    data = {"image": rng.standard_normal((1, 3, 224, 224)), "text": text,
            **attention_pool_data(rng, "positional_embeddin_visual")}
    params = init(pm.randomize_params())
    out = pm.evaluate(params, data)

    p, d = tt(params), tt(data)
    visual = {k.removeprefix("visual."): v for k, v in p.items()}
    image = torch_clip_modified_resnet(
        visual, {**d, "positional_embedding": d["positional_embeddin_visual"]}, d["image"],
        (2, 2, 2, 2))
    mask = torch.where(torch.arange(context)[:, None] >= torch.arange(context)[None, :], 0.0,
                       float("-inf")).to(torch.float64)
    h = (p["weight"][torch.tensor(text)] + p["positional_embedding"]).permute(1, 0, 2)
    h = torch_clip_resblock(p, "transformer.resblocks.0.", h, heads, mask).permute(1, 0, 2)
    h = layer_norm(h, p, "ln_final")
    eot = h[torch.arange(2), torch.tensor(text.argmax(-1))]
    words = eot @ p["text_projection"]
    image = image / image.norm(dim=1, keepdim=True)
    words = words / words.norm(dim=1, keepdim=True)
    logits = p["logit_scale"].exp() * (image @ words.T)
    close(out["logits_per_image"], logits, what="logits per image")
    close(out["logits_per_text"], logits.T, what="logits per text")


# SegFormer (segformer/) ----------------------------------------------------------------

def torch_segformer_encoder(p, x, config):
    states = []
    h = x
    for i in range(config.num_encoder_blocks):
        pre = f"patch_embeddings_{i}."
        h = conv2d(h, p, pre + "proj", config.strides[i], config.patch_sizes[i] // 2)
        B, C, height, width = h.shape
        h = layer_norm(h.flatten(2).transpose(1, 2), p, pre + "layer_norm")
        heads, sr = config.num_attention_heads[i], config.sr_ratios[i]
        for j in range(config.depths[i]):
            pre = f"block_{i}.{j}."
            a = layer_norm(h, p, pre + "layer_norm_1")
            s = pre + "attention.self."

            def split(t):
                return t.reshape(B, -1, heads, C // heads).transpose(1, 2)

            q = split(lin(a, p, s + "query"))
            kv = a
            if sr > 1:
                kv = conv2d(a.transpose(1, 2).reshape(B, C, height, width), p, s + "sr", sr)
                kv = layer_norm(kv.reshape(B, C, -1).transpose(1, 2), p, s + "layer_norm")
            k, v = split(lin(kv, p, s + "key")), split(lin(kv, p, s + "value"))
            scores = torch.softmax(q @ k.transpose(-1, -2) / (C // heads) ** 0.5, dim=-1)
            context = (scores @ v).transpose(1, 2).reshape(B, -1, C)
            h = lin(context, p, pre + "attention.output.dense") + h
            m = lin(layer_norm(h, p, pre + "layer_norm_2"), p, pre + "mlp.dense1")
            m = m.transpose(1, 2).reshape(B, -1, height, width)
            m = conv2d(m, p, pre + "mlp.dwconv.dwconv", 1, 1, groups=m.shape[1])
            m = lin(F.gelu(m.flatten(2).transpose(1, 2)), p, pre + "mlp.dense2")
            h = m + h
        h = layer_norm(h, p, f"layer_norm_{i}")
        h = h.reshape(B, height, width, -1).permute(0, 3, 1, 2)
        states.append(h)
    return states


def torch_segformer_decode_head(p, states, running_mean, running_var, prefix=""):
    p = {k[len(prefix):]: v for k, v in p.items() if k.startswith(prefix)}
    size = states[0].shape[2:]
    upsampled = []
    for i, h in enumerate(states):
        B, C, height, width = h.shape
        h = lin(h.flatten(2).transpose(1, 2), p, f"linear_c_{i}.proj")
        h = h.transpose(1, 2).reshape(B, -1, height, width)
        upsampled.append(F.interpolate(h, size=size, mode="bilinear", align_corners=False))
    h = F.conv2d(torch.cat(upsampled[::-1], dim=1), p["linear_fuse.weight"])
    h = F.batch_norm(h, running_mean, running_var, p["batch_norm.weight"].flatten(),
                     p["batch_norm.bias"].flatten(), eps=1e-5)
    return conv2d(F.relu(h), p, "classifier")


SMALL_SEGFORMER = SimpleNamespace(
    num_encoder_blocks=2, patch_sizes=[7, 3], strides=[4, 2], hidden_sizes=[8, 16],
    num_attention_heads=[1, 2], depths=[2, 1], sr_ratios=[2, 1], mlp_ratios=[2, 2],
    reshape_last_stage=True, decoder_hidden_size=8, num_labels=3)

# The decode head fixes the hidden states of a 512x512 image through
# hidden sizes 64, 128, 320 and 512.
SEGFORMER_512 = SimpleNamespace(
    num_encoder_blocks=4, patch_sizes=[7, 3, 3, 3], strides=[4, 2, 2, 2],
    hidden_sizes=[64, 128, 320, 512], num_attention_heads=[1, 2, 5, 8], depths=[1, 1, 1, 1],
    sr_ratios=[8, 4, 2, 1], mlp_ratios=[1, 1, 1, 1], reshape_last_stage=True,
    decoder_hidden_size=8, num_labels=3)


def test_segformer_encoder():
    import original_examples.segformer as sg
    pm = ml.compile(sg.segformer_encoder(SMALL_SEGFORMER), backend(),
                    shapes={"input": [2, 3, 16, 16]}, inference=True)
    params = init(pm.randomize_params())
    x = np.random.default_rng(15).standard_normal((2, 3, 16, 16))
    out = pm.evaluate(params, {"input": x})
    states = torch_segformer_encoder(tt(params), torch.tensor(x), SMALL_SEGFORMER)
    close(out["output"], states[-1], what="last hidden state")
    for i, state in enumerate(states):
        close(out[f"hidden_states[{i}]"], state, what=f"hidden_states[{i}]")


def test_segformer_bilinear_interpolate_is_torchs():
    import original_examples.segformer as sg
    for size in ((8, 6), (3, 2)):
        pm = ml.compile(sg.segformer_bilinear_interpolate(), backend(),
                        shapes={"input": [2, 3, 4, 5]}, constant_keys={"size": size},
                        inference=True)
        x = np.random.default_rng(16).standard_normal((2, 3, 4, 5))
        want = F.interpolate(torch.tensor(x), size=size, mode="bilinear", align_corners=False)
        close(pm.evaluate({}, {"input": x})["output"], want, what=f"bilinear to {size}")


def segformer_data(rng):
    return {"running_mean": 0.1 * rng.standard_normal(8),
            "running_var": 1 + 0.1 * np.abs(rng.standard_normal(8))}


def test_segformer_semantic_segmentation():
    """The encoder's tuple of hidden states into the decode head, whose
    hidden_shapes fix a 512x512 image (its bilinear resize is compared with
    F.interpolate)."""
    import original_examples.segformer as sg
    pm = ml.compile(sg.segformer_semantic_segmentation(SEGFORMER_512), backend(),
                    shapes={"input": [1, 3, 512, 512]}, inference=True)
    params = init(pm.randomize_params())
    rng = np.random.default_rng(18)
    data = {"input": rng.standard_normal((1, 3, 512, 512)), **segformer_data(rng)}
    out = pm.evaluate(params, data)
    p = tt(params)
    states = torch_segformer_encoder({k[len("segformer.encoder."):]: v for k, v in p.items()
                                      if k.startswith("segformer.encoder.")},
                                     torch.tensor(data["input"]), SEGFORMER_512)
    want = torch_segformer_decode_head(p, states, torch.tensor(data["running_mean"]),
                                       torch.tensor(data["running_var"]), prefix="decode_head.")
    close(out["logits"], want, what="logits")
