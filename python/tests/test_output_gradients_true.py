# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""evaluate(..., output_gradients=True): the original's unit cotangent, on
final_cost for a TrainModel (its linear-regression example), on every float
output otherwise; False means no gradients."""

import numpy as np
import pytest
import torch

import mithril as ml
from mithril.models import Linear, Mean, Model, SquaredError, Tanh, TrainModel


def test_train_model_seeds_final_cost():
    # The original's model_api/linear_regression example, in our package.
    model = Linear(1)
    train = TrainModel(model)
    train.add_loss(SquaredError(), input=model.output, target="target", reduce_steps=[Mean()])
    pm = ml.compile(train, ml.MlirBackend(dtype=ml.float64), shapes={"input": [6, 2],
                                                                      "target": [6, 1]})
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((6, 2)), rng.standard_normal((6, 1))
    params = pm.randomize_params(seed=0)
    outputs, grads = pm.evaluate(params, {"input": x, "target": y}, output_gradients=True)
    w = torch.tensor(params["weight"], requires_grad=True)
    b = torch.tensor(params["bias"], requires_grad=True)
    loss = ((torch.tensor(x) @ w.T + b - torch.tensor(y)) ** 2).mean()
    loss.backward()
    np.testing.assert_allclose(outputs["final_cost"], loss.item(), rtol=1e-12)
    np.testing.assert_allclose(grads["weight"], w.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(grads["bias"], b.grad.numpy(), rtol=1e-12)
    assert pm.evaluate(params, {"input": x, "target": y}, output_gradients=False).keys() == \
        outputs.keys()


@pytest.mark.parametrize("dynamic", [False, True])
def test_plain_model_seeds_every_float_output_with_ones(dynamic):
    model = Model()
    model |= Linear(3)(input="input", output="h")
    model |= Tanh()(input="h", output="output")
    model.expose_keys("h", "output")
    pm = ml.compile(model, ml.MlirBackend(dtype=ml.float64),
                    shapes={"input": [None if dynamic else 4, 2]})
    params = pm.randomize_params(seed=1)
    x = np.random.default_rng(2).standard_normal((4, 2))
    _, grads = pm.evaluate(params, {"input": x}, output_gradients=True)
    seeds = {k: np.ones((4, 3)) for k in pm.output_keys}
    _, want = pm.evaluate(params, {"input": x}, output_gradients=seeds)
    for key in want:
        np.testing.assert_array_equal(grads[key], want[key])
