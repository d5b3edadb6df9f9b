# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""The memory compiled models hold for their temporaries, by torch.cuda's
names: what a run needs beyond its inputs and outputs (which are the
caller's arrays), process-wide, over every compiled model."""

from __future__ import annotations

from . import _mithril


def memory_allocated() -> int:
    """Bytes of the temporaries compiled code holds now (0 between runs)."""
    return int(_mithril.buffer_bytes()[0])


def max_memory_allocated() -> int:
    """The most bytes of temporaries held at once since the last
    reset_peak_memory_stats() (or the start of the process)."""
    return int(_mithril.buffer_bytes()[1])


def reset_peak_memory_stats() -> None:
    """Starts max_memory_allocated() again from what is held now."""
    _mithril.reset_peak_bytes()
