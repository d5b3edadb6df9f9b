# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""A helper for library composites written as a chain of primitives."""

from __future__ import annotations

import itertools

from ..framework import BaseModel, IOKey, Model


class Composer:
    """Adds submodels to a composite. Each call binds the submodel's inputs
    (connection names or constant values) and returns the name of its output
    connection: a hidden, generated one unless `output` names an exposed
    terminal of the composite."""

    def __init__(self, model: Model) -> None:
        self.model = model
        self._count = itertools.count()

    def __call__(self, submodel: BaseModel, output: str | None = None, **inputs) -> str:
        if output is not None:
            self.model |= submodel.connect(**inputs, output=IOKey(output, expose=True))
            return output
        name = f"_{submodel.class_name.lower()}{next(self._count)}"
        self.model |= submodel.connect(**inputs, output=name)
        self.model.nets[name].auto = True
        return name

    def finish(self, canonical_input: str, canonical_output: str = "output") -> None:
        self.model._cin = self.model.nets[canonical_input]
        self.model._cout = self.model.nets[canonical_output]
