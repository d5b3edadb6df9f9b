# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""Helpers the model tests share: compile and evaluate with gradients, and
the same computation in torch."""

import numpy as np
import torch

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
