# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""The original's list values and indexing: Split's list output, ToTuple and
ToList, and Indexer, numpy's indexing of tensors (basic and integer-array)
and of lists. A list is a Python list of IR values while the model is
emitted; a list output of a model is one output per element, `name[i]`, and
a list input one input per element (as Concat's)."""

from __future__ import annotations

import numbers

import numpy as np

from .. import static
from ..errors import MithrilError
from ..expressions import Dim, ExprOps, resolve_sizes, size_values
from ..framework import Primitive, Tensor
from .parity import Split as _SplitOutputs, _shape_of, _show

__all__ = ["Indexer", "Split", "ToList", "ToTuple"]


def _op(builder, name, operands, attrs, path):
    results = builder.add_op(name, operands, attrs, path)
    static.fold(builder, name, attrs, operands, results)
    return results[0]


class Split(_SplitOutputs):
    """The original's Split(split_size, axis): `split_size` equal chunks of
    the input along `axis`, as the list output `output` (index it:
    `model.split_out[0]`, `Split(3, -1)(input=x)[0]`, or pass it on). Each
    chunk is also an output of its own, output0, output1, ..."""

    def __init__(self, split_size: int, axis: int = 0, name=None) -> None:
        super().__init__(split_size, axis, name)
        self.outputs = ("output",) + self.outputs

    @property
    def list_outputs(self) -> tuple:
        return self.outputs[1:]

    def emit(self, builder, operands, path, float_dtype="float32"):
        outputs, self.outputs = self.outputs, self.outputs[1:]
        try:
            chunks = super().emit(builder, operands, path, float_dtype)
        finally:
            self.outputs = outputs
        return {"output": [chunks[k] for k in outputs[1:]], **chunks}


class ToTuple(Primitive):
    """The original's ToTuple(n): its inputs input1 .. input{n} as one list
    (tuple) output."""
    op = "concat"
    accepts_lists = True

    def __init__(self, n: int = 1, name=None) -> None:
        if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 1:
            raise MithrilError(f"{type(self).__name__}: n must be a positive int, got {n!r}")
        self.inputs = tuple(f"input{i + 1}" for i in range(int(n)))
        super().__init__(name)

    def emit(self, builder, operands, path, float_dtype="float32"):
        return {"output": [operands[k] for k in self.inputs]}


class ToList(ToTuple):
    """The original's ToList(n): as ToTuple."""


def _is_tensor_index(item) -> bool:
    return isinstance(item, ExprOps) or (isinstance(item, (list, np.ndarray))
                                         and not isinstance(item, bool))


class Indexer(Primitive):
    """input[index] with numpy's rules: ints, slices, None, ... and integer
    arrays or tensors (connections), on a tensor (basic indexing as slices
    and reshapes; integer-array indexing as a gather of rows, whose gradient
    scatters back); on a list, an int or a slice picks elements. The rank is
    read from the input's type when the model is emitted, so `x[..., 0]`
    works whatever the rank. Index tensors are inputs index0, index1, ..."""
    op = "slice"
    accepts_lists = True

    def __init__(self, index=None, name=None) -> None:
        items = list(index) if isinstance(index, tuple) else [index]
        self._items, tensors = [], []
        for item in items:
            if isinstance(item, Tensor):
                item = np.asarray(item.value)  # a constant index array
            if isinstance(item, (bool, np.bool_)):
                raise TypeError("boolean indexing is not supported")
            if isinstance(item, Dim):
                self._items.append(item)
            elif isinstance(item, slice) and any(isinstance(v, Dim) for v in
                                                 (item.start, item.stop, item.step)):
                self._items.append(item)
            elif _is_tensor_index(item):
                self._items.append(("tensor", len(tensors)))
                tensors.append(item)
            elif item is None or item is Ellipsis or isinstance(item, (slice, numbers.Integral)):
                self._items.append(item)
            else:
                raise TypeError(f"indexing takes ints, slices, None, ... and integer tensors, "
                                f"got {type(item).__name__}")
        self._tuple = isinstance(index, tuple)
        self._tensors = tensors
        # Sizes read from shapes in the index (`b[0:x.shape[2]]`).
        dims = [v for item in self._items if not isinstance(item, tuple)
                for v in ((item.start, item.stop, item.step) if isinstance(item, slice)
                          else (item,)) if isinstance(v, Dim)]
        self._sources = size_values(dims)
        self.inputs = (("input",) + tuple(f"index{i}" for i in range(len(tensors)))
                       + tuple(f"size{i}" for i in range(len(self._sources))))
        super().__init__(name)

    @property
    def operands(self) -> dict:
        return ({f"index{i}": t for i, t in enumerate(self._tensors)}
                | {f"size{i}": v for i, v in enumerate(self._sources)})

    def _resolved(self, builder, operands, path) -> list:
        if not self._sources:
            return list(self._items)
        by_id = {id(v): operands[f"size{i}"] for i, v in enumerate(self._sources)}

        def size(v):
            if not isinstance(v, Dim):
                return v
            try:
                return resolve_sizes(v, lambda c: _shape_of(builder, by_id[id(c)]))
            except (ValueError, IndexError) as e:
                raise MithrilError(f"{path}: {e}") from None
        return [slice(size(i.start), size(i.stop), size(i.step)) if isinstance(i, slice)
                else size(i) for i in self._items]

    def emit(self, builder, operands, path, float_dtype="float32"):
        saved = self._items
        self._items = self._resolved(builder, operands, path)
        try:
            return self._emit(builder, operands, path, float_dtype)
        finally:
            self._items = saved

    def _emit(self, builder, operands, path, float_dtype):
        x = operands["input"]
        if isinstance(x, list):
            return {"output": self._pick(x, path)}
        known = static.lookup(builder, x, None)
        if isinstance(known, tuple) and not self._tensors:
            # A tuple value (a shape): indexed in Python, the result known too.
            value = known[self._items[0]] if len(self._items) == 1 else None
            if value is not None:
                array = np.asarray([-1 if v is None else v for v in value]
                                   if isinstance(value, tuple) else value, dtype=np.int64)
                result = builder.add_constant(array, path)
                static.record(builder, result, value, weak=not isinstance(value, tuple))
                return {"output": result}
        if self._tensors:
            return {"output": self._gather(builder, x, operands, path)}
        return {"output": self._basic(builder, x, self._items, path)}

    def _pick(self, values: list, path: str):
        if len(self._items) != 1 or self._tensors:
            raise MithrilError(f"{path}: a list is indexed by one int or slice")
        item = self._items[0]
        if isinstance(item, slice):
            return values[item]
        if isinstance(item, numbers.Integral):
            if not -len(values) <= item < len(values):
                raise MithrilError(f"{path}: index {item} is out of range for a list of "
                                   f"{len(values)}")
            return values[item]
        raise MithrilError(f"{path}: a list is indexed by an int or a slice, got {item!r}")

    @staticmethod
    def _expand(items: list, rank: int, path: str) -> list:
        """The items with ... replaced by full slices."""
        used = sum(1 for i in items if i is not None and i is not Ellipsis)
        if items.count(Ellipsis) > 1:
            raise MithrilError(f"{path}: an index can only have a single ellipsis")
        if used > rank:
            raise MithrilError(f"{path}: too many indices ({used}) for a tensor of rank {rank}")
        if Ellipsis in items:
            where = items.index(Ellipsis)
            items = items[:where] + [slice(None)] * (rank - used) + items[where + 1:]
        return items

    def _basic(self, builder, x, items, path):
        shape = _shape_of(builder, x)
        items = self._expand(list(items), len(shape), path)
        # Walk the input's axes: slices and ints on them, None inserting.
        axis, squeezed, inserted = 0, [], []
        value = x
        position = 0
        for item in items:
            if item is None:
                inserted.append(position)
                position += 1
                continue
            if isinstance(item, slice):
                if item != slice(None):
                    value = _op(builder, "slice", [value],
                                {"axes": [axis], "start": [0 if item.start is None else
                                                           int(item.start)],
                                 "stop": [2**62 if item.stop is None else int(item.stop)],
                                 "step": [1 if item.step is None else int(item.step)]}, path)
                position += 1
            else:
                i = int(item)
                size = shape[axis]
                if size is not None and not -size <= i < size:
                    raise MithrilError(f"{path}: index {i} is out of range for axis {axis} of "
                                       f"size {size}")
                value = _op(builder, "slice", [value],
                            {"axes": [axis], "start": [i], "stop": [2**62 if i == -1 else i + 1],
                             "step": [1]}, path)
                squeezed.append(axis)
            axis += 1
        if squeezed:
            value = _op(builder, "squeeze", [value], {"axes": squeezed}, path)
        for where in inserted:
            value = _op(builder, "unsqueeze", [value], {"axis": where}, path)
        return value

    def _gather(self, builder, x, operands, path):
        """numpy's integer-array indexing: the index tensors (and ints among
        them) broadcast together; slices keep their axes."""
        shape = _shape_of(builder, x)
        items = self._expand(list(self._items), len(shape), path)
        if any(item is None for item in items):
            raise MithrilError(f"{path}: None (a new axis) together with integer-array "
                               "indexing is not supported")
        items = items + [slice(None)] * (len(shape) - len(items))
        # Slices first (they keep the axes), then the advanced axes gathered.
        value = self._basic(builder, x, [i if isinstance(i, slice) else slice(None)
                                         for i in items], path)
        shape = _shape_of(builder, value)
        advanced = [a for a, i in enumerate(items) if not isinstance(i, slice)]
        rest = [a for a in range(len(shape)) if a not in advanced]
        if any(shape[a] is None for a in advanced) or any(shape[a] is None for a in rest):
            raise MithrilError(f"{path}: integer-array indexing needs the input's sizes known "
                               f"at compile time, got {_show(shape)}")
        # The index of each advanced axis as an int64 tensor.
        indices = []
        for a in advanced:
            item = items[a]
            if isinstance(item, tuple):
                index = operands[f"index{item[1]}"]
                if builder.type_of(index)[1] != "int64":
                    index = _op(builder, "cast", [index], {"element_type": "int64"}, path)
            else:
                index = builder.add_constant(np.asarray(int(item), dtype=np.int64), path)
            size = builder.add_constant(np.asarray(shape[a], dtype=np.int64), path)
            zero = builder.add_constant(np.asarray(0, dtype=np.int64), path)
            # Negative indices count from the end, as numpy's.
            negative = _op(builder, "cast", [_op(builder, "less", [index, zero], {}, path)],
                           {"element_type": "int64"}, path)
            index = _op(builder, "add", [index, _op(builder, "multiply", [negative, size], {},
                                                    path)], {}, path)
            indices.append(index)
        # Advanced axes first, flattened into rows of the rest.
        permutation = advanced + rest
        if permutation != list(range(len(shape))):
            value = _op(builder, "transpose", [value], {"permutation": permutation}, path)
        rows = int(np.prod([shape[a] for a in advanced], dtype=np.int64))
        width = int(np.prod([shape[a] for a in rest], dtype=np.int64))
        table = _op(builder, "reshape", [value], {"shape": [rows, width]}, path)
        linear = indices[0]
        for a, index in zip(advanced[1:], indices[1:]):
            size = builder.add_constant(np.asarray(shape[a], dtype=np.int64), path)
            linear = _op(builder, "add", [_op(builder, "multiply", [linear, size], {}, path),
                                          index], {}, path)
        # The broadcast shape of the indices.
        index_shape = list(np.broadcast_shapes(*[tuple(_shape_of(builder, i)) for i in indices]))
        linear = _op(builder, "broadcast_to", [linear], {"shape": index_shape}, path) \
            if list(_shape_of(builder, linear)) != index_shape else linear
        if not index_shape:
            linear = _op(builder, "reshape", [linear], {"shape": [1]}, path)
        gathered = _op(builder, "embedding", [linear, table], {}, path)
        result_shape = index_shape + [shape[a] for a in rest]
        gathered = _op(builder, "reshape", [gathered], {"shape": result_shape}, path)
        # Adjacent advanced axes put the result's index axes where they were.
        adjacent = advanced == list(range(advanced[0], advanced[-1] + 1))
        before = advanced[0] if adjacent else 0
        if before:
            k = len(index_shape)
            order = (list(range(k, k + before)) + list(range(k))
                     + list(range(k + before, len(result_shape))))
            gathered = _op(builder, "transpose", [gathered], {"permutation": order}, path)
        return gathered
