# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""Data and tensor parallelism over MPI: ml.MlirBackend(device_mesh=(dp,) or
(dp, tp)).

Every rank runs the same script (`mpirun -n N python3 script.py`) and passes
the same global arrays. Each rank computes on its share of the batch (axis 0
of the data inputs, split as evenly as it goes); the compiler's
mithril-batch-sharding analysis says how each output is then spread over the
ranks, and this module puts the global value back together: outputs split
along an axis are gathered, partial sums and means (a loss's mean over the
batch) are summed over the ranks. Parameter gradients are summed by the
compiled code itself (mithril.all_reduce, inserted by
mithril-all-reduce-gradients), before an optimizer step uses them, so every
rank applies the same update.

With a second mesh axis, tensor parallelism: each group of tp ranks that
share a batch share splits Linear layer pairs Megatron-style
(mithril-tensor-parallel). Every rank still passes the global parameters;
this module hands the compiled code each rank's slice of the split ones and
gathers their gradients and updates back to global arrays."""

from __future__ import annotations

import numpy as np

from . import _mithril
from .errors import MithrilError, ShapeError


def parse_mesh(device_mesh) -> tuple[int, int]:
    """(data, tensor) ranks of a device_mesh (None: (1, 1))."""
    if device_mesh is None:
        return 1, 1
    if isinstance(device_mesh, int) and not isinstance(device_mesh, bool):
        device_mesh = (device_mesh,)
    if (not isinstance(device_mesh, tuple) or not device_mesh or len(device_mesh) > 2
            or any(isinstance(d, bool) or not isinstance(d, int) or d < 1 for d in device_mesh)):
        raise ValueError(f"device_mesh must be (data,) or (data, tensor) with positive sizes, "
                         f"got {device_mesh!r}")
    return device_mesh[0], (device_mesh[1] if len(device_mesh) == 2 else 1)


_REPLICATED = ("replicated", -1)
# Partial values gather_outputs adds up natively.
_NATIVE_SUMS = (np.dtype(np.float32), np.dtype(np.float64), np.dtype(np.int32),
                np.dtype(np.int64))


class Ranks:
    """This process's place in a run of data x tensor ranks: `rank` and
    `size` count the data group (the ranks that split the batch), `tensor_rank`
    and `tensor_size` the tensor group (those that split the layer pairs)."""

    def __init__(self, data: int, tensor: int = 1) -> None:
        rank, world, library = _mithril.distributed_init()
        if world != data * tensor:
            mesh = f"({data},)" if tensor == 1 else f"({data}, {tensor})"
            raise MithrilError(
                f"device_mesh={mesh} asks for {data * tensor} ranks, but this run has {world}: "
                f"start it as `mpirun -n {data * tensor} python3 script.py`")
        self.world_rank, self.library = rank, library
        self.rank, self.tensor_rank = _mithril.setup_mesh(data, tensor)
        self.size, self.tensor_size = data, tensor

    def split(self, n: int) -> list[int]:
        """Each rank's share of a batch of n: as even as it goes."""
        if n < self.size:
            raise ShapeError(f"a batch of {n} cannot be split across {self.size} ranks")
        return [n // self.size + (1 if r < n % self.size else 0) for r in range(self.size)]

    def gather(self, local: np.ndarray, axis: int, group: str = "data") -> np.ndarray:
        """The group's arrays concatenated along `axis`, on every rank."""
        size = self.size if group == "data" else self.tensor_size
        moved = np.ascontiguousarray(np.moveaxis(local, axis, 0))
        rows = np.array([moved.shape[0]], dtype=np.int64)
        counts = np.frombuffer(_mithril.all_gather_bytes(rows.tobytes(), [8] * size, group),
                               dtype=np.int64)
        row_bytes = int(np.prod(moved.shape[1:], dtype=np.int64)) * moved.dtype.itemsize
        data = _mithril.all_gather_bytes(moved.tobytes(), [int(c) * row_bytes for c in counts],
                                         group)
        whole = np.frombuffer(data, dtype=moved.dtype).reshape(
            (int(counts.sum()),) + moved.shape[1:])
        return np.ascontiguousarray(np.moveaxis(whole, 0, axis))

    def sum(self, local: np.ndarray) -> np.ndarray:
        """The elementwise sum of the data group's arrays, on every rank."""
        dtype = local.dtype
        work = np.array(local, dtype=np.float64 if dtype == np.float64 else np.float32,
                        copy=True, order="C")
        _mithril.all_reduce_sum(work, "data")
        return work.astype(dtype, copy=False)


class DataParallelPlan:
    """What a data-parallel physical model does around its local runs: the
    inputs it splits and how each output comes back together."""

    def __init__(self, ranks: Ranks, batched: list[str], outputs: list[tuple],
                 local_shards: bool = False, batch: int | None = None) -> None:
        self.ranks = ranks
        # The global batch each rank's code was compiled for a share of
        # (None: any batch).
        self.batch = batch
        # Each rank passes (and gets) its own share of the batch instead of
        # the global arrays.
        self.local_shards = local_shards
        self.batched = list(batched)
        self.outputs = {name: (kind, axis) for name, kind, axis in outputs}

    def describe(self) -> str:
        tensor = (f" x tensor parallel over {self.ranks.tensor_size}"
                  if self.ranks.tensor_size > 1 else "")
        rows = [f"data parallel over {self.ranks.size} ranks{tensor} (MPI: {self.ranks.library})",
                f"  split along axis 0: {', '.join(self.batched)}"]
        for name, (kind, axis) in self.outputs.items():
            shown = f"sharded along axis {axis} (gathered)" if kind == "sharded" else {
                "partial_sum": "partial sum (summed over ranks)",
                "partial_mean": "partial mean (averaged over ranks by batch share)",
                "replicated": "replicated"}[kind]
            rows.append(f"  output {name}: {shown}")
        return "\n".join(rows)

    def shard(self, given: dict) -> tuple[dict, float]:
        """This rank's share of the batch-split inputs, and its weight in the
        batch (its share over the whole). The first split input's axis 0 is
        the batch; another's may hold a whole multiple of it (GPT's targets
        [B*T] against tokens [B, T]) and is split in proportion."""
        sizes = {k: np.shape(given[k])[0] for k in self.batched if k in given
                 and np.ndim(given[k]) > 0}
        if not sizes:
            return dict(given), 1.0 / self.ranks.size
        first = next(iter(sizes))
        n = sizes[first]
        if self.local_shards:
            # The rank's own rows: its weight is its share of all ranks' rows.
            total = self.ranks.sum(np.array([float(n)]))[0]
            return dict(given), n / total
        if self.batch is not None and n != self.batch:
            raise ShapeError(f"input '{first}': the model was compiled for a batch of "
                             f"{self.batch} split across {self.ranks.size} ranks, got {n} rows; "
                             f"give shapes={{'{first}': [None, ...]}} to ml.compile for any batch")
        counts = self.ranks.split(n)
        start = sum(counts[:self.ranks.rank])
        stop = start + counts[self.ranks.rank]
        local = dict(given)
        for k, size in sizes.items():
            if size % n:
                raise ShapeError(f"data parallelism splits the batch (axis 0) of {sorted(sizes)}: "
                                 f"'{k}' has {size} rows, not a multiple of '{first}''s {n}")
            factor = size // n
            local[k] = np.asarray(given[k])[start * factor:stop * factor]
        return local, counts[self.ranks.rank] / n

    def local_seeds(self, seeds: dict, weight: float, sliced: bool) -> dict:
        """Each rank's share of the output cotangents: a slice of a split
        output's (unless `sliced` already), the rank's weight of a partial
        mean's, all of a partial sum's, and a replicated output's on rank 0
        only (the ranks' gradients are summed)."""
        local = {}
        for name, seed in seeds.items():
            kind, axis = self.outputs[name]
            seed = np.asarray(seed)
            if kind == "sharded" and not sliced and not self.local_shards:
                n = seed.shape[axis]
                counts = self.ranks.split(n)
                start = sum(counts[:self.ranks.rank])
                index = [slice(None)] * seed.ndim
                index[axis] = slice(start, start + counts[self.ranks.rank])
                seed = seed[tuple(index)]
            elif kind == "partial_mean":
                seed = seed * np.asarray(weight, dtype=seed.dtype)
            elif kind == "replicated" and self.ranks.rank != 0:
                seed = np.zeros_like(seed)
            local[name] = np.array(seed, order="C")  # 0-d stays 0-d
        return local

    def combine(self, outputs: dict, weight: float) -> dict:
        """The global outputs from this rank's, in two collectives for all of
        them (each rank's sizes, then its values; the values alone when no
        output is split, its sizes then the same on every rank): split outputs
        concatenated, partial ones added up in rank order (in float64 for
        floats), so that every rank gets the same numbers. The native
        gather_outputs does it where it can (split along axis 0, sums of
        float32, float64, int32 and int64): numpy calls right after a compiled
        step cost some 0.1 ms a step of cache misses."""
        names, parts, partial = [], [], []
        for name, value in outputs.items():
            kind, axis = self.outputs.get(name, _REPLICATED)
            if kind == "replicated" or (kind == "sharded" and self.local_shards):
                continue
            if kind == "sharded":
                if axis != 0:
                    return self._combine_numpy(outputs, weight)
                mode = ""
            elif getattr(value, "dtype", None) in _NATIVE_SUMS:
                mode = "mean" if kind == "partial_mean" else "sum"
            else:
                return self._combine_numpy(outputs, weight)
            names.append(name)
            parts.append(np.ascontiguousarray(value) if mode == "" else np.asarray(value))
            partial.append(mode)
        if not names:
            return dict(outputs)
        combined = dict(outputs)
        for name, whole in zip(names, _mithril.gather_outputs(parts, partial, weight, "data")):
            combined[name] = whole
        return combined

    def _combine_numpy(self, outputs: dict, weight: float) -> dict:
        """combine for what gather_outputs does not take: outputs split along
        another axis, sums of other types (float16: in float64 as well)."""
        combined = dict(outputs)
        entries = []  # (name, kind, axis, dtype, this rank's part)
        split = False
        for name, value in outputs.items():
            kind, axis = self.outputs.get(name, _REPLICATED)
            if kind == "replicated" or (kind == "sharded" and self.local_shards):
                continue
            value = np.asarray(value)
            if kind == "sharded":
                split = True
                part = np.ascontiguousarray(value if axis == 0 else np.moveaxis(value, axis, 0))
            elif value.dtype.kind == "f":
                part = value.astype(np.float64)  # a copy; a 0-d loss stays 0-d
                if kind == "partial_mean":
                    part *= weight
            else:
                part = np.array(value, order="C")
            entries.append((name, kind, axis, value.dtype, part))
        if not entries:
            return combined
        size = self.ranks.size
        sizes = [e[4].nbytes for e in entries]
        if split:
            header = np.frombuffer(
                _mithril.all_gather_bytes(np.array(sizes, dtype=np.int64).tobytes(),
                                          [8 * len(sizes)] * size, "data"),
                dtype=np.int64).reshape(size, len(entries)).tolist()
        else:
            # Partial sums and means have the same shape on every rank: one
            # collective a step (a training step's loss), not two.
            header = [sizes] * size
        data = _mithril.all_gather_bytes(b"".join([e[4].tobytes() for e in entries]),
                                         [sum(row) for row in header], "data")
        pieces = [[] for _ in entries]
        offset = 0
        for row in header:
            for i, (_, kind, _, _, part) in enumerate(entries):
                nbytes = row[i]
                flat = np.frombuffer(data, dtype=part.dtype, count=nbytes // part.itemsize,
                                     offset=offset)
                pieces[i].append(flat.reshape((-1,) + part.shape[1:] if kind == "sharded"
                                              else part.shape))
                offset += nbytes
        for (name, kind, axis, dtype, _), parts in zip(entries, pieces):
            if kind == "sharded":
                whole = np.concatenate(parts, axis=0)
                combined[name] = whole if axis == 0 else np.ascontiguousarray(
                    np.moveaxis(whole, 0, axis))
            else:
                total = parts[0].copy()
                for part in parts[1:]:
                    total += part
                combined[name] = total.astype(dtype, copy=False)
        return combined

    # Tensor parallelism: the split parameters ---------------------------

    def local_parameters(self, given: dict, terminals: list) -> dict:
        """`given` with each split parameter (a terminal with tensor_split)
        replaced by this rank's slice of the global array: its part of each
        of the axis's tensor_blocks blocks (an attention block's q, k and
        v)."""
        if self.ranks.tensor_size == 1:
            return given
        local = dict(given)
        tp, t = self.ranks.tensor_size, self.ranks.tensor_rank
        for term in terminals:
            axis = term.get("tensor_split", -1)
            if axis < 0 or term["name"] not in given:
                continue
            blocks = term.get("tensor_blocks", 1)
            value = np.asarray(given[term["name"]])
            n = term["shape"][axis]
            if value.ndim != len(term["shape"]) or value.shape[axis] != n * tp:
                raise ShapeError(f"parameter '{term['name']}': expected the global shape, "
                                 f"{n * tp} on axis {axis} (this rank holds {n} of them), got "
                                 f"{list(value.shape)}")
            part = n // blocks
            # [..., blocks, tp, part, ...]: this rank's part of every block.
            split = value.reshape(value.shape[:axis] + (blocks, tp, part) + value.shape[axis + 1:])
            mine = np.take(split, t, axis=axis + 1)
            local[term["name"]] = np.ascontiguousarray(mine.reshape(term["shape"]))
        return local

    def global_parameters(self, arrays: dict, terminals: list, prefix: str = "") -> dict:
        """Arrays named `prefix + name` of split parameters gathered from
        the tensor group into global ones."""
        if self.ranks.tensor_size == 1:
            return arrays
        splits = {prefix + t["name"]: (t["tensor_split"], t.get("tensor_blocks", 1))
                  for t in terminals if t.get("tensor_split", -1) >= 0}
        out = {k: v for k, v in arrays.items() if k not in splits}
        parts = [(k, np.ascontiguousarray(v)) for k, v in arrays.items() if k in splits]
        if not parts:
            return out
        # One all-gather for all of them (every rank's slices have the same
        # shapes): this rank's slices back to back as bytes, the group's
        # in rank order.
        send = np.concatenate([v.reshape(-1).view(np.uint8) for _, v in parts])
        tp = self.ranks.tensor_size
        received = np.empty((tp, send.size), dtype=np.uint8)
        _mithril.all_gather_into(send, received, "tensor")
        offset = 0
        for k, v in parts:
            axis, blocks = splits[k]
            part = v.shape[axis] // blocks
            whole = np.empty(v.shape[:axis] + (v.shape[axis] * tp,) + v.shape[axis + 1:], v.dtype)
            # Rank r's [..., blocks, part, ...] into [..., blocks, r, part, ...].
            slots = whole.reshape(v.shape[:axis] + (blocks, tp, part) + v.shape[axis + 1:])
            for r in range(tp):
                slots[(slice(None),) * (axis + 1) + (r,)] = (
                    received[r, offset:offset + v.nbytes].view(v.dtype).reshape(
                        v.shape[:axis] + (blocks, part) + v.shape[axis + 1:]))
            offset += v.nbytes
            out[k] = whole
        # The arrays' order as given.
        return {k: out[k] for k in arrays}
