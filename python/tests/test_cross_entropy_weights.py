# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""CrossEntropy's class weights (the original's `weights`), against torch's
cross_entropy(weight=..., reduction="none"): values and gradients."""

import numpy as np
import pytest
import torch

import mithril as ml
from mithril.models import CrossEntropy, Model

F = torch.nn.functional
WEIGHTS = np.array([0.5, 2.0, 1.5])


@pytest.mark.parametrize("categorical", [True, False])
@pytest.mark.parametrize("shape", [(5, 3), (2, 3, 4)])
@pytest.mark.parametrize("how", ["constant", "terminal"])
def test_weighted_cross_entropy_matches_torch(categorical, shape, how):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape)
    labels = rng.integers(0, 3, size=(shape[0],) + shape[2:])
    if categorical:
        target = labels
    else:
        target = np.moveaxis(np.eye(3)[labels], -1, 1) * 0.7 + 0.1
    model = Model()
    weights = WEIGHTS if how == "constant" else True
    model |= CrossEntropy(categorical=categorical, weights=weights)(
        input="input", target="target", output="output")
    shapes = {"input": list(shape), "target": list(target.shape)}
    data = {"target": target}
    if how == "terminal":
        shapes["weights"] = [3]
        data["weights"] = WEIGHTS
    pm = ml.compile(model, ml.MlirBackend(dtype=ml.float64), shapes=shapes,
                    trainable_keys={"input"})
    seed = rng.standard_normal(labels.shape)
    out, grads = pm.evaluate({"input": x}, data, output_gradients={"output": seed})
    tx = torch.tensor(x, requires_grad=True)
    want = F.cross_entropy(tx, torch.tensor(target), weight=torch.tensor(WEIGHTS),
                           reduction="none")
    want.backward(torch.tensor(seed))
    np.testing.assert_allclose(out["output"], want.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(grads["input"], tx.grad.numpy(), rtol=1e-10, atol=1e-14)


def test_no_weights_spellings_and_errors():
    for none in (None, False, ""):
        assert CrossEntropy(weights=none).input_keys == ["input", "target"]
    with pytest.raises(ValueError, match="one number per class"):
        CrossEntropy(weights=np.ones((2, 2)))
    with pytest.raises(ValueError, match="per-class numbers"):
        CrossEntropy(weights="balanced")
