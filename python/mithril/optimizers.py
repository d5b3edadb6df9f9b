# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""Optimizers compiled into the training step (see mithril-optimizer).

    opt = ml.Adam(lr=1e-3)
    for x, y in batches:
        outputs = pm.train_step(params, {"input": x, "target": y}, opt)

`train_step` runs forward, backward and the update as one native function and
updates `params` (and the optimizer's state) in place.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class Optimizer:
    lr: float
    algorithm: str = "sgd"
    momentum: float = 0.0
    weight_decay: float = 0.0
    steps: int = 0
    state: dict = field(default_factory=dict)
    _spare: dict = field(default_factory=dict)
    # Dynamic loss scaling of float16 training (as torch's GradScaler): the
    # loss's seed. A step whose gradients are not all finite changes nothing
    # and halves it; loss_scale_growth_interval finite steps in a row double
    # it. 2**15: float16's largest power of two (65504 is its largest value).
    loss_scale: float = 2.0 ** 15
    loss_scale_growth_interval: int = 2000
    skipped_steps: int = 0
    _finite_steps: int = 0

    def key(self) -> tuple:
        return (self.algorithm, self.momentum, self.weight_decay)

    def _scaled_step_done(self, finite: bool) -> None:
        """The scale after a loss-scaled step (taken if `finite`)."""
        if finite:
            self._finite_steps += 1
            if self._finite_steps >= self.loss_scale_growth_interval:
                self.loss_scale *= 2.0
                self._finite_steps = 0
            return
        # Not taken: Adam's bias correction counts only the steps taken.
        self.steps -= 1
        self.skipped_steps += 1
        self.loss_scale = max(self.loss_scale * 0.5, 2.0 ** -24)
        self._finite_steps = 0

    def state_keys(self, param: str) -> list[str]:
        if self.algorithm == "adam":
            return [f"state:{param}.m", f"state:{param}.v"]
        if self.momentum:
            return [f"state:{param}.velocity"]
        return []


def _rate(lr, learning_rate, default: float) -> float:
    """The step size, given as lr= or as the documents' learning_rate=."""
    if lr is not None and learning_rate is not None:
        raise TypeError("give lr or learning_rate, not both")
    value = lr if lr is not None else learning_rate if learning_rate is not None else default
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        raise ValueError(f"the learning rate must be a positive number, got {value!r}")
    return float(value)


def SGD(lr: float | None = None, momentum: float = 0.0, weight_decay: float = 0.0, *,
        learning_rate: float | None = None) -> Optimizer:
    """Stochastic gradient descent (lr 0.01 by default), with optional momentum
    and weight decay."""
    return Optimizer(lr=_rate(lr, learning_rate, 0.01), algorithm="sgd", momentum=momentum,
                     weight_decay=weight_decay)


def Adam(lr: float | None = None, weight_decay: float = 0.0, *,
         learning_rate: float | None = None) -> Optimizer:
    """Adam (lr 1e-3 by default, beta1 0.9, beta2 0.999, epsilon 1e-8)."""
    return Optimizer(lr=_rate(lr, learning_rate, 1e-3), algorithm="adam",
                     weight_decay=weight_decay)


def zeros_like(shape, dtype) -> np.ndarray:
    return np.zeros(shape, dtype=dtype)
