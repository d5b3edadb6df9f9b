# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""TrainModel and compiled training steps against torch."""

import numpy as np
import pytest
import torch

import mithril as ml
from mithril.models import (L1, L2, CrossEntropy, Linear, Mean, Model, Relu, SquaredError,
                            TrainModel)


def mlp_train_model():
    model = Model()
    model |= Linear(8).connect(input="input")
    model += Relu()
    model += Linear(1).connect(output="output")
    train = TrainModel(model)
    train.add_loss(SquaredError(), reduce_steps=[Mean()], input="output", target="target")
    return train


def torch_mlp(t, x):
    w0 = next(k for k in t if k.endswith("linear_0.weight"))
    w1 = next(k for k in t if k.endswith("linear_1.weight"))
    h = torch.relu(torch.tensor(x) @ t[w0].T + t[w0[:-6] + "bias"])
    return h @ t[w1].T + t[w1[:-6] + "bias"]


@pytest.mark.parametrize("make,make_torch", [
    (lambda: ml.SGD(lr=0.1), lambda p: torch.optim.SGD(p, lr=0.1)),
    (lambda: ml.SGD(lr=0.1, momentum=0.9, weight_decay=0.01),
     lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9, weight_decay=0.01)),
    (lambda: ml.Adam(lr=0.01), lambda p: torch.optim.Adam(p, lr=0.01)),
])
def test_train_step_matches_torch(make, make_torch):
    pm = ml.compile(mlp_train_model(), ml.MlirBackend(dtype=ml.float64),
                    shapes={"input": [16, 3], "target": [16, 1]})
    rng = np.random.default_rng(0)
    x = rng.standard_normal((16, 3))
    y = (x.sum(1, keepdims=True) > 0).astype(float)
    params = pm.randomize_params(seed=0)
    t = {k: torch.tensor(v.copy(), requires_grad=True) for k, v in params.items()}
    opt, topt = make(), make_torch(list(t.values()))
    for _ in range(6):
        out = pm.train_step(params, {"input": x, "target": y}, opt)
        topt.zero_grad()
        loss = ((torch_mlp(t, x) - torch.tensor(y)) ** 2).mean()
        loss.backward()
        topt.step()
        assert abs(float(out["final_cost"]) - float(loss)) < 1e-12
    for k in params:
        np.testing.assert_allclose(params[k], t[k].detach().numpy(), rtol=1e-10, atol=1e-13)


def test_regularized_cross_entropy_gradients():
    model = Model()
    model |= Linear(3).connect(input="input", weight="w", bias="b", output=ml.IOKey("logits"))
    train = TrainModel(model)
    train.add_loss(CrossEntropy(), reduce_steps=[Mean()], input="logits", target="target")
    train.add_regularization(L2(), coef=0.1, input="w")
    train.add_regularization(L1(), coef=0.05, input="b")
    pm = ml.compile(train, ml.MlirBackend(dtype=ml.float64), shapes={"input": [5, 4]},
                    constant_keys={"target": np.array([0, 2, 1, 1, 0])})
    rng = np.random.default_rng(3)
    x = rng.standard_normal((5, 4))
    params = pm.randomize_params(seed=1)
    out, grads = pm.evaluate(params, {"input": x}, output_gradients={"final_cost": 1.0})
    w = torch.tensor(params["w"], requires_grad=True)
    b = torch.tensor(params["b"], requires_grad=True)
    logits = torch.tensor(x) @ w.T + b
    ce = torch.nn.functional.cross_entropy(logits, torch.tensor([0, 2, 1, 1, 0]))
    # Mithril scales regularization per sample of the mean-reduced loss.
    cost = ce + (0.1 * 0.5 * (w ** 2).sum() + 0.05 * b.abs().sum()) / 5
    cost.backward()
    np.testing.assert_allclose(out["final_cost"], cost.item(), rtol=1e-12)
    np.testing.assert_allclose(grads["w"], w.grad.numpy(), rtol=1e-10)
    np.testing.assert_allclose(grads["b"], b.grad.numpy(), rtol=1e-10)
