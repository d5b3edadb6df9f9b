# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""A small GPT (nanoGPT's architecture) written with Mithril's model API.

The layout follows Mithril's own GPT example (examples/gpt/model.py in
synnada-ai/mithril): models named as nanoGPT / Hugging Face GPT-2 name their
modules (transformer, wte, wpe, h.<i>, ln_1, attn.c_attn, attn.c_proj, ln_2,
mlp.c_fc, mlp.c_proj, ln_f, lm_head), composed with `|=` / `+=`, a fused
q/k/v projection split in three, heads formed by reshapes whose sizes are
read from the input's shape, and positions from an Arange as long as the
token axis. So the logical model fixes no batch or sequence size: they come
from `shapes=` when it is compiled (and must be known then).

Where our API cannot yet say what the original says, the line is marked
"Workaround" (README.md lists them).
"""

from __future__ import annotations

from mithril import IOKey
from mithril.models import (
    Add,
    Arange,
    CrossEntropy,
    Embedding,
    Gelu,
    LayerNorm,
    Linear,
    Mean,
    Model,
    ScaledDotProduct,
    Split,
    TrainModel,
)


def causal_attention(input_dim: int, num_heads: int, bias: bool = True) -> Model:
    """Causal multi-head self-attention over [B, T, input_dim]."""
    if input_dim % num_heads != 0:
        raise ValueError("Requires input dims to be divisible by num_heads")
    model = Model(name="attn")
    model += Linear(input_dim * 3, use_bias=bias, name="c_attn")("input", output="c_attn_out")

    # [B, T, d] -> [B, num_heads, T, d / num_heads]
    t_axes = (0, 2, 1, 3)
    shp_con = model.input.shape
    reshape_con = (shp_con[0], shp_con[1], num_heads, -1)

    # Workaround: the original names Split's list output ("split_out") and
    # indexes model.split_out; here the call itself is indexed.
    split_out = Split(3, axis=-1)(model.c_attn_out)
    tq = split_out[0].reshape(reshape_con).transpose(t_axes)
    tk = split_out[1].reshape(reshape_con).transpose(t_axes)
    tv = split_out[2].reshape(reshape_con).transpose(t_axes)

    model += ScaledDotProduct(is_causal=True)(query=tq, key=tk, value=tv, output="sdp_out")
    t_sdp = model.sdp_out.transpose(t_axes).reshape(shp_con[:3])
    model += Linear(input_dim, use_bias=bias, name="c_proj")(t_sdp)
    return model


def mlp(n_embd: int, bias: bool = True) -> Model:
    block = Model(name="mlp")
    block += Linear(n_embd * 4, use_bias=bias, name="c_fc")(input="input")
    block += Gelu()
    block += Linear(n_embd, use_bias=bias, name="c_proj")(output=IOKey("output"))
    return block


def create_block(name: str, dims: int, num_heads: int, bias: bool = True,
                 eps: float = 1e-5) -> Model:
    """Pre-LayerNorm transformer block: x + attn(ln_1(x)), then + mlp(ln_2(.))."""
    block = Model(name=name)
    # Workaround: LayerNorm takes keywords only; the original passes "input"
    # positionally, as for the other models here.
    block += LayerNorm(use_bias=bias, eps=eps, name="ln_1")(input="input")
    block += causal_attention(dims, num_heads, bias)
    block += Add()("input", block.canonical_output, "add_out")
    block += LayerNorm(use_bias=bias, eps=eps, name="ln_2")
    block += mlp(dims, bias)
    block += Add()("add_out", right=block.canonical_output)
    return block


def create_gpt(bias: bool, block_size: int, dims: int, num_heads: int, num_layers: int,
               vocab_size: int) -> Model:
    """input [B, T] token ids (T <= block_size) -> output [B, T, vocab_size] logits."""
    transformer = Model(name="transformer")
    # Workaround: a named primitive's parameter does not take the primitive's
    # name (both tables would be "transformer.weight..."), so they are named.
    transformer += Embedding(name="wte", num_embeddings=vocab_size, dim=dims)(
        "input", weight="wte_weight", output="token_out")
    # Workaround: the original counts positions with Size(dim=1) of the input
    # feeding Arange(start=0, step=1) through `+=`; Size is not a model here
    # and Arange's stop is not a terminal, so the stop reads the input's shape.
    positions = Arange(start=0, stop=transformer.input.shape[1], step=1)
    transformer |= Embedding(name="wpe", num_embeddings=block_size, dim=dims)(
        input=positions, weight="wpe_weight", output="pos_out")
    transformer += Add()("pos_out", "token_out")

    blocks = Model(name="h")
    for idx in range(num_layers):
        blocks += create_block(f"{idx}", dims, num_heads, bias)
    transformer += blocks
    transformer += LayerNorm(use_bias=bias, name="ln_f")(output="output")

    gpt = Model(name="gpt")
    gpt += transformer(input="input")
    gpt += Linear(vocab_size, use_bias=False, name="lm_head")(output=IOKey("output"))
    gpt.input.set_differentiability(False)
    return gpt


def create_gpt_train_model(gpt: Model, vocab_size: int) -> TrainModel:
    """The mean cross entropy of the next-token logits: logits [B, T, V] are
    flattened to [B*T, V] against targets [B*T]."""
    train = TrainModel(gpt)
    train.add_loss(CrossEntropy(), reduce_steps=[Mean()],
                   input=train.output.reshape(-1, vocab_size), target="target")
    return train
