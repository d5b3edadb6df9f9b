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

    def key(self) -> tuple:
        return (self.algorithm, self.momentum, self.weight_decay)

    def state_keys(self, param: str) -> list[str]:
        if self.algorithm == "adam":
            return [f"state:{param}.m", f"state:{param}.v"]
        if self.momentum:
            return [f"state:{param}.velocity"]
        return []


def SGD(lr: float = 0.01, momentum: float = 0.0, weight_decay: float = 0.0) -> Optimizer:
    """Stochastic gradient descent, with optional momentum and weight decay."""
    return Optimizer(lr=lr, algorithm="sgd", momentum=momentum, weight_decay=weight_decay)


def Adam(lr: float = 1e-3, weight_decay: float = 0.0) -> Optimizer:
    """Adam (beta1 0.9, beta2 0.999, epsilon 1e-8)."""
    return Optimizer(lr=lr, algorithm="adam", weight_decay=weight_decay)


def zeros_like(shape, dtype) -> np.ndarray:
    return np.zeros(shape, dtype=dtype)
