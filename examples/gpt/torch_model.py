# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""The same GPT in torch (nanoGPT's modules, without dropout), for checking
the compiled model's numbers and for timing it side by side.

`TorchGPT.load_mithril(params)` copies a parameter dict of the compiled
model into the torch modules: our names are torch's state_dict names, except
the two embedding tables (see `torch_name`)."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F


def torch_name(name: str) -> str:
    """Our parameter name -> the torch state_dict key."""
    return {"transformer.wte_weight": "transformer.wte.weight",
            "transformer.wpe_weight": "transformer.wpe.weight"}.get(name, name)


class LayerNorm(nn.Module):
    """nn.LayerNorm with an optional bias (torch < 2.1 has no bias=False)."""

    def __init__(self, dims: int, bias: bool = True, eps: float = 1e-5) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dims))
        self.bias = nn.Parameter(torch.zeros(dims)) if bias else None
        self.eps = eps

    def forward(self, x):
        return F.layer_norm(x, self.weight.shape, self.weight, self.bias, self.eps)


def causal_attention(q, k, v):
    """softmax(q k^T / sqrt(E) + causal mask) v (torch >= 2.0 has it as
    F.scaled_dot_product_attention(..., is_causal=True))."""
    t, s = q.shape[-2], k.shape[-2]
    scores = (q @ k.transpose(-2, -1)) / (q.shape[-1] ** 0.5)
    above = torch.ones(t, s, dtype=torch.bool, device=q.device).triu(1)
    return F.softmax(scores.masked_fill(above, float("-inf")), dim=-1) @ v


class CausalSelfAttention(nn.Module):
    def __init__(self, dims: int, num_heads: int, bias: bool = True) -> None:
        super().__init__()
        self.c_attn = nn.Linear(dims, 3 * dims, bias=bias)
        self.c_proj = nn.Linear(dims, dims, bias=bias)
        self.num_heads = num_heads

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.c_attn(x).split(d, dim=2)
        q, k, v = (z.view(b, t, self.num_heads, d // self.num_heads).transpose(1, 2)
                   for z in (q, k, v))
        y = causal_attention(q, k, v)
        return self.c_proj(y.transpose(1, 2).contiguous().view(b, t, d))


class MLP(nn.Module):
    def __init__(self, dims: int, bias: bool = True) -> None:
        super().__init__()
        self.c_fc = nn.Linear(dims, 4 * dims, bias=bias)
        self.gelu = nn.GELU()
        self.c_proj = nn.Linear(4 * dims, dims, bias=bias)

    def forward(self, x):
        return self.c_proj(self.gelu(self.c_fc(x)))


class Block(nn.Module):
    def __init__(self, dims: int, num_heads: int, bias: bool = True) -> None:
        super().__init__()
        self.ln_1 = LayerNorm(dims, bias)
        self.attn = CausalSelfAttention(dims, num_heads, bias)
        self.ln_2 = LayerNorm(dims, bias)
        self.mlp = MLP(dims, bias)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class TorchGPT(nn.Module):
    def __init__(self, bias: bool, block_size: int, dims: int, num_heads: int,
                 num_layers: int, vocab_size: int) -> None:
        super().__init__()
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(vocab_size, dims),
            wpe=nn.Embedding(block_size, dims),
            h=nn.ModuleList([Block(dims, num_heads, bias) for _ in range(num_layers)]),
            ln_f=LayerNorm(dims, bias),
        ))
        self.lm_head = nn.Linear(dims, vocab_size, bias=False)

    def forward(self, idx):
        t = idx.shape[1]
        pos = torch.arange(0, t, dtype=torch.long, device=idx.device)
        x = self.transformer.wte(idx) + self.transformer.wpe(pos)
        for block in self.transformer.h:
            x = block(x)
        return self.lm_head(self.transformer.ln_f(x))

    def loss(self, idx, targets):
        logits = self(idx)
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))

    def load_mithril(self, params: dict) -> None:
        """Copies our parameters (numpy arrays) into this model."""
        state = {torch_name(k): torch.from_numpy(np.array(v)) for k, v in params.items()}
        self.load_state_dict(state, strict=True)

    def mithril_params(self) -> dict:
        """The parameters (numpy copies), under our names."""
        ours = {torch_name(k): k for k in ("transformer.wte_weight", "transformer.wpe_weight")}
        return {ours.get(k, k): p.detach().numpy().copy() for k, p in self.named_parameters()}

    def mithril_grads(self) -> dict:
        """The gradients of the parameters, under our names."""
        ours = {torch_name(k): k for k in ("transformer.wte_weight", "transformer.wpe_weight")}
        return {ours.get(k, k): p.grad.detach().numpy()
                for k, p in self.named_parameters() if p.grad is not None}
