# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""examples/gpt: the GPT written with the model API, in a tiny configuration,
against the same model in torch (float64): logits, the loss, its gradients,
and a few Adam steps that lower the loss."""

import os
import sys

import numpy as np
import pytest
import torch

import mithril as ml

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples", "gpt"))
from model import create_gpt, create_gpt_train_model  # noqa: E402
from torch_model import TorchGPT  # noqa: E402

LAYERS, DIMS, HEADS, BLOCK, BATCH, VOCAB = 1, 16, 2, 8, 2, 13
CONFIG = dict(bias=True, block_size=BLOCK, dims=DIMS, num_heads=HEADS, num_layers=LAYERS,
              vocab_size=VOCAB)


@pytest.fixture(scope="module")
def setup():
    pm = ml.compile(create_gpt_train_model(create_gpt(**CONFIG), VOCAB),
                    ml.MlirBackend(dtype=ml.float64),
                    shapes={"input": [BATCH, BLOCK], "target": [BATCH * BLOCK]})
    rng = np.random.default_rng(0)
    # LayerNorm weights and biases away from 1 and 0, so that they matter.
    params = {k: v + (1.0 if k.endswith("ln_1.weight") else 0.0)
              for k, v in pm.randomize_params(seed=1).items()}
    text = rng.integers(0, VOCAB, BATCH * BLOCK + 1)
    data = {"input": text[:-1].reshape(BATCH, BLOCK), "target": text[1:]}
    model = TorchGPT(**CONFIG).double()
    model.load_mithril(params)
    return pm, params, data, model


def test_logits_and_gradients_match_torch(setup):
    pm, params, data, model = setup
    out, grads = pm.evaluate(params, data, output_gradients=True)
    logits = model(torch.from_numpy(data["input"]))
    loss = torch.nn.functional.cross_entropy(logits.reshape(-1, VOCAB),
                                             torch.from_numpy(data["target"]))
    loss.backward()
    np.testing.assert_allclose(out["output"], logits.detach().numpy(), rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(out["final_cost"], loss.item(), rtol=1e-8)
    want = model.mithril_grads()
    assert sorted(grads) == sorted(params) == sorted(want)
    for key in ["transformer.wte_weight", "transformer.wpe_weight",
                "transformer.h.0.ln_1.weight", "transformer.h.0.attn.c_attn.weight",
                "transformer.h.0.attn.c_proj.bias", "transformer.h.0.mlp.c_fc.weight",
                "transformer.ln_f.bias", "lm_head.weight"]:
        np.testing.assert_allclose(grads[key], want[key], rtol=1e-8, atol=1e-12, err_msg=key)


def test_adam_steps_lower_the_loss(setup):
    pm, params, data, _ = setup
    params = {k: v.copy() for k, v in params.items()}
    optimizer = ml.Adam(learning_rate=1e-2)
    losses = [float(pm.train_step(params, data, optimizer)["final_cost"]) for _ in range(8)]
    assert all(b < a for a, b in zip(losses, losses[1:])), losses
    assert losses[-1] < 0.9 * losses[0], losses


def test_train_script_runs_and_agrees_with_torch(capsys):
    """examples/gpt/train.py end to end in a tiny configuration: the first
    loss agrees with torch's to 1e-5 (float32), and it samples."""
    import train
    assert os.path.dirname(train.__file__) == os.path.dirname(sys.modules["model"].__file__)
    threads = torch.get_num_threads()
    try:
        result = train.main(["--steps", "3", "--layers", "1", "--dims", "16", "--heads", "2",
                             "--block", "8", "--batch", "2", "--sample", "4", "--torch"])
    finally:
        torch.set_num_threads(threads)
    out = capsys.readouterr().out
    assert "host CPU:" in out and "greedy sample:" in out and "tokens/s" in out
    assert result["torch"]["first_step_diff"] < 1e-5
    assert np.isfinite(result["loss_end"]) and result["tokens_per_s"] > 0
