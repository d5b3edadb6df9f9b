# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""The original's data helpers for sequence models (mithril.utils.utils):
variable-length sequences packed into time slots (`input0`, `input1`, ...,
one array per step with the sequences still running at that step) and back.
Arrays are numpy arrays; `backend` gives the element type (backend.array)."""

from __future__ import annotations

import numpy as np

__all__ = ["pack_data_into_time_slots", "unpack_time_slot_data",
           "pack_encoder_target_data_into_time_slots"]


def _array(backend, data):
    return backend.array(data) if backend is not None else np.asarray(data)


def pack_data_into_time_slots(data, backend, lengths=None, key: tuple = ("input",),
                              index: int = 0, return_indices: bool = False,
                              sorted_data: bool = False) -> tuple:
    """`data` is a list of tuples of arrays; element `index` of each is a
    sequence [length, dim]. The sequences are sorted by length, longest
    first (stable; unless `sorted_data`), padded and split by step: slot
    `{key[0]}{t}` is [n_t, 1, dim] with the n_t sequences longer than t.
    Returns (slots, sorted data), or (indices, slots, sorted data) with
    `return_indices`: the original position of each sorted sequence."""
    if lengths is None:
        lengths = np.array([np.shape(d[index])[0] for d in data])
    lengths = np.asarray(lengths)
    indices = tuple(range(len(data)))
    if not sorted_data:
        order = sorted(enumerate(data), key=lambda d: np.shape(d[1][index])[0], reverse=True)
        indices = tuple(i for i, _ in order)
        data = tuple(d for _, d in order)
        lengths = np.sort(lengths)[::-1]
    max_length = int(lengths[0])
    padded = [np.pad(np.asarray(d[index]), ((0, max_length - np.shape(d[index])[0]), (0, 0)))
              for d in data]
    stacked = _array(backend, np.stack(padded))
    slots = {}
    remaining = lengths.copy()
    for t in range(max_length):
        slots[f"{key[0]}{t}"] = stacked[:len(remaining), t, :][:, None, ...]
        remaining = remaining - 1
        remaining = remaining[remaining != 0]
    return (indices, slots, data) if return_indices else (slots, data)


def unpack_time_slot_data(backend, data: dict, max_length: int, max_size: int,
                          output_dim: int, key: str = "decoder_out",
                          indices: list[int] | None = None):
    """The slots `{key}0 ..` of `data` padded to `max_size` rows and joined
    into [max_size, steps, output_dim]; with `indices` (as
    pack_data_into_time_slots returned them), back in the original order."""
    parts = [np.pad(np.asarray(data[f"{key}{t}"]),
                    [(0, max_size - np.shape(data[f"{key}{t}"])[0]), (0, 0), (0, 0)])
             for t in range(max_length) if f"{key}{t}" in data]
    joined = np.concatenate(parts, axis=-1).reshape(max_size, -1, output_dim)
    if indices is not None:
        reverse = [i for i, _ in sorted(enumerate(indices), key=lambda x: x[1])]
        joined = joined[np.array(reverse)]
    return _array(backend, joined)


def pack_encoder_target_data_into_time_slots(backend, data: list, lengths=None,
                                             key: tuple = ("target",)) -> dict:
    """Targets grouped by their input's length: `{key[0]}{n-1}` stacks the
    targets (element 1) of the samples whose input (element 0) has n steps."""
    if lengths is None:
        lengths = np.array([np.shape(d[0])[0] for d in data])
    lengths = np.asarray(lengths)
    slots = {}
    for length in np.unique(lengths):
        chosen = [d[1] for d, keep in zip(data, lengths == length) if keep]
        slots[f"{key[0]}{int(length) - 1}"] = _array(backend, np.stack(chosen, axis=0))
    return slots
