# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""ml.Trainer: the user guide's training loop over compiled training steps.

    trainer = ml.Trainer(model=compiled_model, optimizer=ml.Adam(learning_rate=1e-3),
                         loss=ml.CrossEntropyLoss())
    history = trainer.train(train_loader, epochs=10)
    metrics = trainer.evaluate(test_loader)      # {"loss": ..., "accuracy": ...}

`model` is a physical model from ml.compile (or a logical model, compiled here
for `backend`). The trainer wraps the logical model in a TrainModel with the
loss, compiles it once with the batch axis of the data dynamic (a training
step is compiled per batch size it meets, so a short last batch is fine), and
runs each batch as one native step: forward, backward and the optimizer's
update. A loader is any iterable of batches: (inputs, targets) pairs of
arrays (numpy, torch tensors, lists) or dicts of named arrays; a torch
DataLoader works as it is.
"""

from __future__ import annotations

import copy
import sys
import time
from collections.abc import Iterable, Mapping

import numpy as np

from .deferred import DeferredPhysicalModel
from .errors import KeyNotFoundError, MithrilError
from .optimizers import SGD, Optimizer


class Loss:
    """A loss for Trainer: the per-sample model, reduced by the mean."""

    name = "loss"
    classification = False

    def model(self):
        raise NotImplementedError

    def target_shape(self, output_shape: list) -> list:
        """The target's shape for an output of `output_shape`."""
        return list(output_shape)


class CrossEntropyLoss(Loss):
    """torch.nn.CrossEntropyLoss: logits [N, C] and class indices [N]; the
    trainer also reports accuracy."""

    classification = True

    def __init__(self, input_type: str = "logits") -> None:
        self.input_type = input_type

    def model(self):
        from .models import CrossEntropy
        return CrossEntropy(input_type=self.input_type)

    def target_shape(self, output_shape: list) -> list:
        return list(output_shape[:-1])  # class indices


class MSELoss(Loss):
    """torch.nn.MSELoss: the mean of squared errors."""

    def model(self):
        from .models import SquaredError
        return SquaredError()


class BCEWithLogitsLoss(Loss):
    """torch.nn.BCEWithLogitsLoss: logits and 0/1 targets of the same shape."""

    def model(self):
        from .models import BinaryCrossEntropy
        return BinaryCrossEntropy(input_type="logits")


def _as_array(value):
    if hasattr(value, "detach"):  # a torch tensor
        value = value.detach().cpu().numpy()
    return np.asarray(value)


class Trainer:
    def __init__(self, model, optimizer: Optimizer | None = None, loss: Loss | None = None,
                 backend=None, params: Mapping | None = None, input_key: str | None = None,
                 target_key: str = "target", seed: int = 0, progress: bool | None = None):
        from .physical import PhysicalModel
        if isinstance(model, PhysicalModel):
            logical = getattr(model, "logical_model", None)
            if logical is None:
                raise MithrilError("Trainer needs a physical model from ml.compile")
            backend = backend or model.backend
            compile_args = dict(model.compile_args)
            forward = model
        elif isinstance(model, DeferredPhysicalModel):
            # Compiled without shapes: the training step is too, at its first
            # batch, for that batch's shapes.
            logical, forward = model.logical_model, model
            backend = backend or model.backend
            compile_args = dict(model.compile_args)
        else:
            if backend is None:
                raise TypeError("Trainer(model=<logical model>) needs backend=ml.MlirBackend(...)")
            logical, compile_args, forward = model, {}, None
        if loss is None:
            raise TypeError("Trainer needs a loss (ml.CrossEntropyLoss(), ml.MSELoss(), ...)")
        if not isinstance(loss, Loss):
            raise TypeError(f"loss must be an ml loss such as ml.CrossEntropyLoss(), got "
                            f"{type(loss).__name__}")
        self.loss = loss
        self.optimizer = optimizer or SGD(lr=0.01)
        self.backend = backend
        self.target_key = target_key
        self.progress = sys.stderr.isatty() if progress is None else bool(progress)
        # A data-parallel run shows one progress bar: rank 0's.
        self.progress = self.progress and getattr(backend, "rank", 0) == 0
        self.history: list[dict] = []

        from .compile import compile as compile_model
        from .models import TrainModel
        # The user's model stays as it is: the trainer wraps a copy.
        inner = copy.deepcopy(logical)
        output = inner.canonical_output
        if output is None:
            raise MithrilError("Trainer: the model has no canonical output to apply the loss to")
        self.output_key = output if isinstance(output, str) else getattr(output, "key", output)
        self.input_key = input_key or inner.canonical_input
        if self.input_key is None:
            raise MithrilError("Trainer: the model has no canonical input: give input_key=")
        if isinstance(self.input_key, str) and self.input_key not in inner.input_keys:
            raise KeyNotFoundError(f"Trainer: no input '{self.input_key}' (inputs: "
                                   f"{inner.input_keys})")
        train = TrainModel(inner)
        train.add_loss(loss.model(), input=output, target=target_key)
        # Data inputs keep their sizes but the batch axis, which stays
        # dynamic; parameters keep theirs.
        shapes = {}
        if isinstance(forward, PhysicalModel):
            trainable = set(forward.trainable_keys)
            for key, shape in forward.get_shapes().items():
                if key in forward.input_keys:
                    shapes[key] = list(shape) if key in trainable or not shape else \
                        [None] + list(shape[1:])
            out = forward.get_shapes().get(self.output_key)
            if out:
                shapes[target_key] = loss.target_shape([None] + list(out[1:]))
        else:
            shapes = {k: list(v) for k, v in (compile_args.pop("shapes", None) or {}).items()}
        compile_args.pop("shapes", None)
        compile_args.pop("trainable_keys", None)
        self.physical = compile_model(train, backend, shapes=shapes, **compile_args)
        if params is not None:
            self.params = {k: np.array(v, copy=True) for k, v in params.items()}
        elif forward is not None and getattr(forward, "_call_params", None) is not None:
            self.params = {k: v.copy() for k, v in forward._call_params.items()}
        elif isinstance(self.physical, DeferredPhysicalModel):
            self.params = None  # drawn at the first batch, once its shapes are known
        else:
            self.params = self.physical.randomize_params(seed=seed)
        self._seed = seed
        self._forward = forward

    def _ensure_params(self, feeds: dict) -> None:
        if self.params is None:
            self.params = self.physical.compiled_for(feeds).randomize_params(seed=self._seed)

    # Batches -------------------------------------------------------------
    def _feeds(self, batch) -> dict:
        if isinstance(batch, Mapping):
            return {k: _as_array(v) for k, v in batch.items()}
        if isinstance(batch, (tuple, list)) and len(batch) == 2:
            x, y = batch
            return {self.input_key: _as_array(x), self.target_key: _as_array(y)}
        raise TypeError("a batch is an (inputs, targets) pair or a dict of named arrays, got "
                        f"{type(batch).__name__}")

    def _batch_metrics(self, feeds: dict, outputs: dict) -> tuple[float, int, int]:
        """(summed loss, samples, correct predictions) of one batch."""
        n = int(np.shape(feeds[self.input_key])[0]) if np.ndim(feeds[self.input_key]) else 1
        loss = float(outputs["final_cost"]) * n
        correct = 0
        if self.loss.classification and self.output_key in outputs:
            logits = outputs[self.output_key]
            target = feeds[self.target_key]
            if target.ndim == logits.ndim:  # probabilities or one-hot
                target = target.argmax(-1)
            correct = int((logits.argmax(-1) == target).sum())
        return loss, n, correct

    def _summary(self, loss, n, correct) -> dict:
        metrics = {"loss": loss / max(n, 1)}
        if self.loss.classification:
            metrics["accuracy"] = correct / max(n, 1)
        return metrics

    def _bar(self, what: str, done: int, total: int | None, start: float, metrics: dict):
        if not self.progress:
            return
        shown = " ".join(f"{k} {v:.4f}" for k, v in metrics.items())
        if total:
            filled = int(30 * done / total)
            bar = f"[{'=' * filled}{' ' * (30 - filled)}] {done}/{total}"
        else:
            bar = f"{done} batches"
        end = "\n" if total and done == total else ""
        print(f"\r{what} {bar} {time.time() - start:6.1f}s {shown}", end=end, file=sys.stderr,
              flush=True)

    # Training ------------------------------------------------------------
    def train(self, loader: Iterable, epochs: int = 1) -> list[dict]:
        """Trains for `epochs` passes over `loader`. Returns the history: one
        dict per epoch (loss, accuracy for classification, seconds)."""
        if isinstance(epochs, bool) or not isinstance(epochs, int) or epochs < 0:
            raise ValueError(f"epochs must be a non-negative int, got {epochs!r}")
        for epoch in range(epochs):
            start = time.time()
            total = len(loader) if hasattr(loader, "__len__") else None
            loss = n = correct = 0
            batches = 0
            for batch in loader:
                feeds = self._feeds(batch)
                self._ensure_params(feeds)
                outputs = self.physical.train_step(self.params, feeds, self.optimizer)
                b_loss, b_n, b_correct = self._batch_metrics(feeds, outputs)
                loss, n, correct = loss + b_loss, n + b_n, correct + b_correct
                batches += 1
                self._bar(f"epoch {epoch + 1}/{epochs}", batches, total, start,
                          self._summary(loss, n, correct))
            if batches == 0:
                raise MithrilError("Trainer.train: the loader gave no batches")
            record = dict(self._summary(loss, n, correct), epoch=epoch + 1,
                          seconds=time.time() - start)
            self.history.append(record)
        if self._forward is not None:
            # pm(x) on the compiled model now uses the trained parameters.
            self._forward._call_params = self.params
        return self.history

    def evaluate(self, loader: Iterable) -> dict:
        """The loss (and accuracy, for classification) over `loader`, with the
        current parameters; nothing is updated."""
        loss = n = correct = 0
        for batch in loader:
            feeds = self._feeds(batch)
            self._ensure_params(feeds)
            params = {k: v for k, v in self.params.items()}
            data = {k: v for k, v in feeds.items() if k not in params}
            outputs = self.physical.evaluate(params, data)
            b_loss, b_n, b_correct = self._batch_metrics(feeds, outputs)
            loss, n, correct = loss + b_loss, n + b_n, correct + b_correct
        if n == 0:
            raise MithrilError("Trainer.evaluate: the loader gave no batches")
        return self._summary(loss, n, correct)

    def predict(self, x) -> np.ndarray:
        """The compiled model's output for inputs `x` with the trained
        parameters (a Trainer made from a physical model)."""
        if self._forward is None:
            raise MithrilError("Trainer.predict needs the physical model from ml.compile")
        data = {self.input_key: _as_array(x)}
        if self.params is None:
            raise MithrilError("Trainer.predict: train first (the parameters are drawn at the "
                               "first batch of a model compiled without shapes)")
        forward = self._forward
        if isinstance(forward, DeferredPhysicalModel):
            forward = forward.compiled_for(data)
        params = {k: self.params[k] for k in forward.trainable_keys}
        outputs = forward.evaluate(params, data)
        return outputs[self.output_key]
