# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""Exceptions raised by the mithril package."""


class MithrilError(RuntimeError):
    """A model, shape or compilation error. The message carries the compiler's
    diagnostics with the names of the terminals involved."""


class OutOfMemoryError(MithrilError, MemoryError):
    """A buffer could not be allocated; the message names its size."""


class ShapeError(MithrilError, ValueError):
    """Shapes given for a model conflict with each other or with the model."""


class MissingShapeError(ShapeError):
    """A model input whose shape nothing gives (compile defers such a model
    to its first call, whose arrays give the shapes)."""

    def __init__(self, message: str, terminal: str) -> None:
        super().__init__(message)
        self.terminal = terminal


class KeyNotFoundError(MithrilError, KeyError):
    """A terminal name that the model does not have."""

    def __str__(self) -> str:  # KeyError quotes its message; keep it readable.
        return str(self.args[0]) if self.args else ""
