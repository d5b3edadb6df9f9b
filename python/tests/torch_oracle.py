# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""Helpers the model tests share: compile and evaluate with gradients, and
the same computation in torch."""

import numpy as np
import torch
import torch.nn.functional as F

import mithril as ml


def compile_eval(model, backend, data, params, seeds, shapes=None):
    """Compiles `model` with every key of `params` trainable, runs it on
    `data` and `params`, and returns (outputs, gradients) for the seeds."""
    given = {**data, **params}
    shapes = shapes or {k: list(np.shape(v)) for k, v in given.items()}
    pm = ml.compile(model, backend, shapes=shapes, trainable_keys=list(params))
    return pm.evaluate(params, data, output_gradients=seeds)


def torch_run(fn, data, params, seeds):
    """fn's outputs (a dict) and the gradients of `params` for the seeds."""
    td = {k: torch.tensor(v) for k, v in data.items()}
    tp = {k: torch.tensor(v, requires_grad=True) for k, v in params.items()}
    outs = fn(**td, **tp)
    torch.autograd.backward([outs[k] for k in seeds], [torch.tensor(s) for s in seeds.values()])
    grads = {k: (v.grad.numpy() if v.grad is not None else np.zeros_like(params[k]))
             for k, v in tp.items()}
    return {k: v.detach().numpy() for k, v in outs.items()}, grads


def lstm_step(x, hidden, cell, w_f, w_i, w_c, w_o, w_out, bias_f, bias_i, bias_c, bias_o,
              bias_out):
    """One step of Mithril's LSTMCell: the first N rows of the state advance
    (N = x's rows); returns (hidden and cell, the other rows, output)."""
    n = x.shape[0]
    joint = torch.cat([x, hidden[:n]], dim=-1)
    forget = torch.sigmoid(F.linear(joint, w_f, bias_f))
    admit = torch.sigmoid(F.linear(joint, w_i, bias_i))
    candidate = torch.tanh(F.linear(joint, w_c, bias_c))
    out_gate = torch.sigmoid(F.linear(joint, w_o, bias_o))
    c = cell[:n] * forget + admit * candidate
    h = torch.tanh(c) * out_gate
    return {"hidden": h, "cell": c}, hidden[n:], F.linear(h, w_out, bias_out)
