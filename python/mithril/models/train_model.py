# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""`train(physical_model, train_data, optimizer, loss_fn, epochs=10)`, as the
user guide writes it: ml.Trainer in one call (see mithril.training)."""

from __future__ import annotations

from ..training import Trainer


def train(physical_model, train_data, optimizer, loss_fn, epochs: int = 10, **kwargs) -> Trainer:
    """Trains `physical_model` (from ml.compile) on `train_data`, an iterable
    of (inputs, targets) batches or dicts of named arrays, with `optimizer`
    (ml.SGD, ml.Adam) and `loss_fn` (ml.CrossEntropyLoss(), ml.MSELoss(), ...).
    Returns the Trainer: its `params` are the trained parameters, `history`
    the per-epoch loss (and accuracy), and `physical_model(x)` uses them."""
    trainer = Trainer(physical_model, optimizer=optimizer, loss=loss_fn, **kwargs)
    trainer.train(train_data, epochs=epochs)
    return trainer
