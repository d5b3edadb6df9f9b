# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""ml.Trainer, mithril.models.train_model.train and batch_inference, checked
against the same training in torch."""

import numpy as np
import pytest
import torch

import mithril as ml
from mithril.models import Linear, Model, Relu


def classifier():
    model = Model()
    model |= Linear(8)(input="input")
    model += Relu()
    model += Linear(3)
    return model


def data(n=50, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 4))
    y = (x[:, 0] > 0).astype(np.int64) + (x[:, 1] > 0.5)
    return x, y


def torch_train(params, batches, epochs, lr):
    t = {k: torch.tensor(v.copy(), requires_grad=True) for k, v in params.items()}
    opt = torch.optim.Adam(list(t.values()), lr=lr)
    for _ in range(epochs):
        for x, y in batches:
            h = torch.relu(torch.tensor(x) @ t["linear_0.weight"].T + t["linear_0.bias"])
            logits = h @ t["linear_1.weight"].T + t["linear_1.bias"]
            loss = torch.nn.functional.cross_entropy(logits, torch.tensor(y))
            opt.zero_grad()
            loss.backward()
            opt.step()
    return {k: v.detach().numpy() for k, v in t.items()}


def test_trainer_matches_torch_with_a_short_last_batch():
    x, y = data()
    batches = [(x[i:i + 16], y[i:i + 16]) for i in range(0, len(x), 16)]  # 16, 16, 16, 2
    pm = ml.compile(classifier(), ml.MlirBackend(dtype=ml.float64), shapes={"input": [16, 4]})
    trainer = ml.Trainer(model=pm, optimizer=ml.Adam(learning_rate=0.01),
                         loss=ml.CrossEntropyLoss())
    start = {k: v.copy() for k, v in trainer.params.items()}
    history = trainer.train(batches, epochs=3)
    assert [h["epoch"] for h in history] == [1, 2, 3]
    want = torch_train(start, batches, 3, 0.01)
    for key in want:
        np.testing.assert_allclose(trainer.params[key], want[key], rtol=1e-9, atol=1e-12)
    # evaluate: the mean loss and accuracy over every sample.
    metrics = trainer.evaluate(batches)
    t = {k: torch.tensor(v) for k, v in trainer.params.items()}
    logits = (torch.relu(torch.tensor(x) @ t["linear_0.weight"].T + t["linear_0.bias"])
              @ t["linear_1.weight"].T + t["linear_1.bias"])
    loss = torch.nn.functional.cross_entropy(logits, torch.tensor(y)).item()
    assert metrics["loss"] == pytest.approx(loss, rel=1e-10)
    assert metrics["accuracy"] == pytest.approx((logits.argmax(1).numpy() == y).mean())
    # The compiled model runs with the trained parameters, and the user's
    # logical model was left as it was.
    np.testing.assert_allclose(pm(x[:16]), logits[:16].numpy(), rtol=1e-10)
    np.testing.assert_allclose(trainer.predict(x[:16]), logits[:16].numpy(), rtol=1e-10)


def test_trainer_learns_from_a_torch_dataloader():
    x, y = data(200, seed=1)
    loader = torch.utils.data.DataLoader(
        torch.utils.data.TensorDataset(torch.tensor(x), torch.tensor(y)), batch_size=32)
    pm = ml.compile(classifier(), ml.MlirBackend(dtype=ml.float64), shapes={"input": [32, 4]})
    trainer = ml.Trainer(model=pm, optimizer=ml.Adam(learning_rate=0.05),
                         loss=ml.CrossEntropyLoss())
    before = trainer.evaluate(loader)
    trainer.train(loader, epochs=15)
    after = trainer.evaluate(loader)
    assert after["loss"] < before["loss"] / 2
    assert after["accuracy"] > 0.9


def test_train_function_and_mse():
    from mithril.models.train_model import train
    rng = np.random.default_rng(2)
    x = rng.standard_normal((64, 3))
    y = x @ np.array([[1.0], [-2.0], [0.5]]) + 0.3
    model = Model()
    model |= Linear(1)(input="input")
    pm = ml.compile(model, ml.MlirBackend(dtype=ml.float64), shapes={"input": [16, 3]})
    batches = [(x[i:i + 16], y[i:i + 16]) for i in range(0, 64, 16)]
    trainer = train(pm, batches, ml.SGD(learning_rate=0.1), ml.MSELoss(), epochs=40)
    assert trainer.history[-1]["loss"] < 1e-4
    assert "accuracy" not in trainer.history[-1]
    np.testing.assert_allclose(trainer.params["linear_0.weight"], [[1.0, -2.0, 0.5]], atol=1e-2)


def test_batch_inference_and_document_imports():
    from mithril.framework.physical import PhysicalModel
    pm = ml.compile(classifier(), ml.MlirBackend(dtype=ml.float64), shapes={"input": [None, 4]})
    assert isinstance(pm, PhysicalModel)
    x, _ = data(10)
    outs = pm.batch_inference([x[:4], x[4:], {"input": x[:1]}])
    assert [o.shape for o in outs] == [(4, 3), (6, 3), (1, 3)]
    np.testing.assert_allclose(np.concatenate(outs[:2]), pm(x))


def test_trainer_errors():
    pm = ml.compile(classifier(), ml.MlirBackend(), shapes={"input": [4, 4]})
    with pytest.raises(TypeError, match="needs a loss"):
        ml.Trainer(model=pm)
    with pytest.raises(TypeError, match="ml loss"):
        ml.Trainer(model=pm, loss=torch.nn.CrossEntropyLoss())
    trainer = ml.Trainer(model=pm, loss=ml.CrossEntropyLoss())
    with pytest.raises(TypeError, match="an \\(inputs, targets\\) pair"):
        trainer.train([np.zeros((4, 4))])
    with pytest.raises(ml.MithrilError, match="no batches"):
        trainer.train([])
    with pytest.raises(ValueError, match="learning rate"):
        ml.Adam(learning_rate=-1)
    with pytest.raises(TypeError, match="not both"):
        ml.SGD(0.1, learning_rate=0.1)


def test_trainer_of_a_model_compiled_without_shapes():
    # The documents' flow: `ml.compile(model, backend)` with nothing giving
    # the input's shape, then a Trainer on it. The training step compiles
    # at the first batch and draws the parameters then.
    x, y = data()
    batches = [(x[i:i + 16], y[i:i + 16]) for i in range(0, len(x), 16)]
    pm = ml.compile(classifier(), ml.MlirBackend(dtype=ml.float64))
    trainer = ml.Trainer(model=pm, optimizer=ml.Adam(learning_rate=0.01),
                         loss=ml.CrossEntropyLoss())
    assert trainer.params is None
    with pytest.raises(ml.MithrilError, match="train first"):
        trainer.predict(x[:16])
    trainer.evaluate(batches[:1])  # draws the parameters, updates nothing
    start = {k: v.copy() for k, v in trainer.params.items()}
    assert start["linear_0.weight"].shape == (8, 4)
    trainer.train(batches, epochs=2)
    want = torch_train(start, batches, 2, 0.01)
    for key in want:
        np.testing.assert_allclose(trainer.params[key], want[key], rtol=1e-9, atol=1e-12)
    t = {k: torch.tensor(v) for k, v in want.items()}
    logits = (torch.relu(torch.tensor(x[:5]) @ t["linear_0.weight"].T + t["linear_0.bias"])
              @ t["linear_1.weight"].T + t["linear_1.bias"]).numpy()
    np.testing.assert_allclose(trainer.predict(x[:5]), logits, rtol=1e-10)
    # The compiled model's pm(x) runs with the trained parameters.
    np.testing.assert_allclose(pm(x[:5]), logits, rtol=1e-10)
