# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""Primitive models: each is one mithril op, with Mithril's terminal names."""

from __future__ import annotations

import re

import numpy as np

from ..errors import MithrilError
from ..expressions import ExprOps
from ..framework import TBD, Primitive, TerminalSpec


def _axes(axis):
    if axis is None:
        return None
    if isinstance(axis, int):
        return [axis]
    return list(axis)


class _Unary(Primitive):
    inputs = ("input",)


class _Binary(Primitive):
    inputs = ("left", "right")


class Activation(_Unary):
    """The original's Activation(formula_key, polymorphic_constraint=False,
    input=TBD, *, name=None, **keys): the base class of the elementwise
    activations (Relu, Sigmoid, LeakyRelu, ... are Activations), and, given
    the name of a mithril op (docs/reference/MithrilDialect.md), an
    activation computed by that op: `input` is its first operand, the other
    keys (IOKey, Tensor or TBD) its further operands in the order given, and
    `output` its result. `polymorphic_constraint` is the original's typing
    rule; the op's own type rule decides here. An op that does not exist or
    takes other operands is an error naming it when the model is compiled."""

    def __init__(self, formula_key: str, polymorphic_constraint: bool = False, input=TBD, *,
                 name=None, **keys) -> None:
        if not isinstance(formula_key, str) or not formula_key:
            raise MithrilError(f"Activation: formula_key must be the name of an op, got "
                               f"{formula_key!r}")
        self.inputs = ("input",) + tuple(k for k in keys if k != "output")
        super().__init__(name)
        self.op = formula_key.removeprefix("mithril.")
        self.formula_key = formula_key
        self.polymorphic_constraint = bool(polymorphic_constraint)
        self.in_place = False
        for key, value in (("input", input), *keys.items()):
            if key == "output":
                continue
            shape = getattr(value, "shape_template", None)
            if shape is not None:
                self._specs[key] = TerminalSpec(shape=tuple(shape))
            given = getattr(value, "value", None)
            if given is not None and not isinstance(value, str) and value is not TBD:
                self._set_terminal_value(key, given)


class _Activation(Activation):
    """An elementwise activation of the library. `in_place=True` lets its
    result take over its input's name: `Relu(in_place=True)(input="hidden",
    output="hidden")` makes "hidden" the activation's output from then on
    (the value it had is still what earlier consumers read). The memory is
    the compiler's choice either way: an activation is computed in its
    producer's loop, or over its input's buffer when nothing reads that
    input later."""

    def __init__(self, in_place: bool = False, name=None) -> None:
        _Unary.__init__(self, name)
        self.in_place = bool(in_place)


def _unary(cls_name: str, op: str, doc: str, base: type = _Unary):
    cls = type(cls_name, (base,), {"op": op, "__doc__": doc})
    return cls


def _binary(cls_name: str, op: str, doc: str):
    return type(cls_name, (_Binary,), {"op": op, "__doc__": doc})


Add = _binary("Add", "add", "left + right, with broadcasting")
Subtract = _binary("Subtract", "subtract", "left - right, with broadcasting")
Multiply = _binary("Multiply", "multiply", "left * right, with broadcasting")
class Divide(Primitive):
    """numerator / denominator, with broadcasting"""
    op = "divide"
    inputs = ("numerator", "denominator")


class FloorDivide(Divide):
    """floor(numerator / denominator)"""
    op = "floor_divide"
# The original's models with two canonical inputs: `+=` feeds whichever of
# left and right the connect() call leaves free.
for _cls in (Add, Multiply):
    _cls.canonical_inputs = ("left", "right")
Minimum = _binary("Minimum", "minimum", "elementwise minimum")
Maximum = _binary("Maximum", "maximum", "elementwise maximum")
Equal = _binary("Equal", "equal", "left == right")
NotEqual = _binary("NotEqual", "not_equal", "left != right")
Less = _binary("Less", "less", "left < right")
LessEqual = _binary("LessEqual", "less_equal", "left <= right")
Greater = _binary("Greater", "greater", "left > right")
GreaterEqual = _binary("GreaterEqual", "greater_equal", "left >= right")
LogicalAnd = _binary("LogicalAnd", "logical_and", "left and right")
LogicalOr = _binary("LogicalOr", "logical_or", "left or right")
LogicalXOr = _binary("LogicalXOr", "logical_xor", "left xor right")
for _cls in (Minimum, Maximum, Equal, NotEqual, LogicalAnd, LogicalOr, LogicalXOr):
    _cls.canonical_inputs = ("left", "right")
MatrixMultiply = _binary("MatrixMultiply", "matmul", "numpy.matmul")

Relu = _unary("Relu", "relu", "max(input, 0)", _Activation)
Sigmoid = _unary("Sigmoid", "sigmoid", "1 / (1 + exp(-input))", _Activation)
Tanh = _unary("Tanh", "tanh", "tanh(input)", _Activation)
Softplus = _unary("Softplus", "softplus", "log(1 + exp(input))", _Activation)
Exponential = _unary("Exponential", "exp", "exp(input)")


class _Robust(_Unary):
    """A function with Mithril's `robust` form: finite, with finite gradients,
    near 0 (see the dialect's robust_* ops)."""
    plain = robust_op = ""

    def __init__(self, robust: bool = False, threshold: float | None = None, name=None) -> None:
        self.op = self.robust_op if robust else self.plain
        if threshold is not None and not robust:
            raise MithrilError(f"{type(self).__name__}: threshold needs robust=True")
        super().__init__(name)
        self._set_attrs(threshold=None if threshold is None else float(threshold))


class Log(_Robust):
    """log(input); with robust=True, log(|input|) made linear below `threshold`."""
    plain, robust_op = "log", "robust_log"


class Sqrt(_Robust):
    """sqrt(input); with robust=True, sqrt(|input|) made linear below `threshold`."""
    plain, robust_op = "sqrt", "robust_sqrt"


class StableReciprocal(_Unary):
    """1 / input, made linear where |input| < threshold so that it stays finite."""
    op = "stable_reciprocal"

    def __init__(self, threshold: float | None = None, name=None) -> None:
        super().__init__(name)
        self._set_attrs(threshold=None if threshold is None else float(threshold))
Sine = _unary("Sine", "sin", "sin(input)")
Cosine = _unary("Cosine", "cos", "cos(input)")
Absolute = _unary("Absolute", "abs", "|input|")
Negate = _unary("Negate", "negate", "-input")
Minus = Negate
Square = _unary("Square", "square", "input * input")
Sign = _unary("Sign", "sign", "sign(input)")
Reciprocal = _unary("Reciprocal", "reciprocal", "1 / input")
StopGradient = _unary("StopGradient", "stop_gradient", "input, with no gradient")
LogicalNot = _unary("LogicalNot", "logical_not", "not input")


class Buffer(_Unary):
    """The identity (of a tensor or a list)."""
    op = ""
    accepts_lists = True

    def emit(self, builder, operands, path, float_dtype="float32"):
        return {"output": operands["input"]}


class Power(Primitive):
    """base ** exponent; with robust=True, |base| ** exponent made linear near 0
    where its gradient would be infinite."""
    op = "power"
    inputs = ("base", "exponent")

    def __init__(self, robust: bool = False, threshold: float | None = None, name=None) -> None:
        if robust:
            self.op = "robust_power"
        elif threshold is not None:
            raise MithrilError("Power: threshold needs robust=True")
        super().__init__(name)
        self._set_attrs(threshold=None if threshold is None else float(threshold))


class _IntegerBinary(Primitive):
    inputs = ("input", "shift")

    def __init__(self, name=None) -> None:
        super().__init__(name)
        self._specs = {k: TerminalSpec(dtype="int64") for k in self.inputs}


class ShiftLeft(_IntegerBinary):
    """input << shift, on integers"""
    op = "shift_left"


class ShiftRight(_IntegerBinary):
    """input >> shift, on integers (arithmetic: the sign is kept)"""
    op = "shift_right"


class PolynomialFeatures(_Unary):
    """The monomials of degree 1..degree of the columns of [N, d] input, in
    Mithril's (and scikit-learn's) order, without the bias column."""
    op = "polynomial_features"

    def __init__(self, degree: int = 2, name=None) -> None:
        if isinstance(degree, bool) or not isinstance(degree, int) or degree < 1:
            raise MithrilError(f"PolynomialFeatures: degree must be a positive int, got {degree!r}")
        super().__init__(name)
        self._set_attrs(degree=degree)


class EyeLike(_Unary):
    """The identity matrix shaped like the (matrix) input; no gradient."""
    op = "eye_like"


class PermuteTensor(Primitive):
    """input[indices]: the rows of `input` in the order `indices` gives."""
    op = "embedding"
    inputs = ("input", "indices")

    def __init__(self, name=None) -> None:
        super().__init__(name)
        self._specs["indices"] = TerminalSpec(dtype="int64")

    def emit(self, builder, operands, path, float_dtype="float32"):
        # embedding(indices, table) gathers the rows of a [rows, width] table
        # (and scatters gradients back): view the input as one, then reshape.
        table = operands["input"]
        shape, _ = builder.type_of(table)
        rest = list(shape[1:])
        # A matrix is the table itself; a higher rank is viewed as one, which
        # needs the row width.
        if not shape or (len(shape) != 2 and any(d is None for d in rest)):
            raise MithrilError(f"{path}: PermuteTensor needs an input of rank >= 1 whose "
                               f"trailing dimensions are known, got shape {list(shape)}")
        if len(shape) == 2:
            rows = builder.add_op("embedding", [operands["indices"], table], {}, path)[0]
            return {"output": rows}
        width = int(np.prod(rest, dtype=np.int64))
        # Rows of no elements: -1 cannot stand for the row count.
        count = shape[0] if width == 0 and shape[0] is not None else -1
        if count == -1 and width == 0:
            raise MithrilError(f"{path}: PermuteTensor of an input with no elements per row "
                               f"needs a known row count, got shape {list(shape)}")
        table = builder.add_op("reshape", [table], {"shape": [count, width]}, path)[0]
        rows = builder.add_op("embedding", [operands["indices"], table], {}, path)[0]
        index_shape, _ = builder.type_of(operands["indices"])
        lead = index_shape[0] if width == 0 and index_shape and index_shape[0] is not None else -1
        rows = builder.add_op("reshape", [rows], {"shape": [lead] + rest}, path)[0]
        return {"output": rows}


class LeakyRelu(_Activation):
    op = "leaky_relu"

    # Mithril's default slope (torch's too).
    def __init__(self, slope: float = 0.01, in_place: bool = False, name=None) -> None:
        super().__init__(in_place, name)
        self._set_attrs(slope=float(slope))


class Gelu(_Activation):
    op = "gelu"

    def __init__(self, approximate: bool = False, in_place: bool = False, name=None) -> None:
        super().__init__(in_place, name)
        self._set_attrs(approximate=bool(approximate))


class Softmax(_Unary):
    op = "softmax"

    def __init__(self, axis: int = -1, name=None) -> None:
        super().__init__(name)
        self._set_attrs(axis=int(axis))


class LogSoftmax(_Unary):
    op = "log_softmax"

    def __init__(self, axis: int = -1, name=None) -> None:
        super().__init__(name)
        self._set_attrs(axis=int(axis))


class _Reduce(_Unary):
    def __init__(self, axis=None, keepdim: bool = False, name=None) -> None:
        super().__init__(name)
        self._set_attrs(axes=_axes(axis), keepdim=bool(keepdim))


class Sum(_Reduce):
    op = "sum"


class Mean(_Reduce):
    op = "mean"


class Max(_Reduce):
    op = "max"


class Min(_Reduce):
    op = "min"


class Prod(_Reduce):
    op = "prod"


class Variance(_Reduce):
    op = "variance"

    def __init__(self, axis=None, keepdim: bool = False, correction: float = 0.0,
                 name=None) -> None:
        Primitive.__init__(self, name)
        self._set_attrs(axes=_axes(axis), keepdim=bool(keepdim), correction=float(correction))


class ArgMax(_Unary):
    op = "argmax"

    def __init__(self, axis: int | None = None, keepdim: bool = False, name=None) -> None:
        super().__init__(name)
        self._set_attrs(axis=axis, keepdim=bool(keepdim))


class ArgMin(ArgMax):
    op = "argmin"


class Transpose(_Unary):
    op = "transpose"

    def __init__(self, axes=None, name=None) -> None:
        super().__init__(name)
        self._set_attrs(permutation=list(axes) if axes is not None else None)


def _static_shape(owner: str, shape):
    """(attribute shape, None) for ints, or (None, sizes spec) when the shape
    is given later (TBD: a `shape` terminal) or holds sizes of shapes."""
    from ..expressions import Dim, Shape as _ShapeOf
    if shape is None or shape is TBD:
        return None, None
    if isinstance(shape, _ShapeOf) or any(isinstance(d, Dim) for d in shape):
        return None, shape
    if isinstance(shape, (int, np.integer)):
        shape = (shape,)
    return [-1 if d is None else int(d) for d in shape], None


class _ShapedByValue(_Unary):
    """An op whose `shape` attribute is a constructor argument, or, left TBD
    (the original's default), a `shape` terminal whose value must be known
    at compile time (a tuple, `x.shape`, sizes of shapes)."""

    def __init__(self, shape=TBD, name=None) -> None:
        fixed, later = _static_shape(type(self).__name__, shape)
        if fixed is None and later is None:
            self.inputs = ("input", "shape")
        super().__init__(name)
        self._later = later
        if fixed is not None:
            self._set_attrs(shape=fixed)

    def connect(self, *args, **connections):
        if self._later is not None:
            connections.setdefault("shape", self._later)
            if "shape" not in self.inputs:
                self.inputs = ("input", "shape")
                self._specs = {k: TerminalSpec() for k in self.inputs}
        return super().connect(*args, **connections)

    __call__ = connect

    def emit(self, builder, operands, path, float_dtype="float32"):
        if "shape" not in self.inputs:
            return super().emit(builder, operands, path, float_dtype)
        from .. import static
        shape = static.python_value(builder, operands["shape"], f"{type(self).__name__}'s shape",
                                    path)
        if isinstance(shape, (int, np.integer)):
            shape = (shape,)
        attrs = {"shape": [-1 if d is None else int(d) for d in shape]}
        results = builder.add_op(self.op, [operands["input"]], attrs, path)
        static.fold(builder, self.op, attrs, [operands["input"]], results)
        return {"output": results[0]}


class Reshape(_ShapedByValue):
    """input reshaped to `shape` (one size may be -1 or None)."""
    op = "reshape"


class Flatten(_Unary):
    op = "flatten"

    def __init__(self, start_dim: int = 0, end_dim: int = -1, name=None) -> None:
        super().__init__(name)
        self._set_attrs(start_dim=int(start_dim), end_dim=int(end_dim))


class Squeeze(_Unary):
    op = "squeeze"

    def __init__(self, axis=None, name=None) -> None:
        super().__init__(name)
        self._set_attrs(axes=_axes(axis))


class Unsqueeze(_Unary):
    op = "unsqueeze"

    def __init__(self, axis: int = 0, name=None) -> None:
        super().__init__(name)
        self._set_attrs(axis=int(axis))


class BroadcastTo(_ShapedByValue):
    """input broadcast to `shape` (numpy's rules)."""
    op = "broadcast_to"


class Cast(_Unary):
    """input converted to `dtype`; left TBD (the original's default), dtype is
    a terminal whose value must be known at compile time (`x.dtype()`, a
    dtype constant)."""
    op = "cast"

    def __init__(self, dtype=TBD, name=None) -> None:
        from ..types import compiled_dtype_name
        if dtype is TBD or dtype is None:
            self.inputs = ("input", "dtype")
        super().__init__(name)
        if dtype is TBD or dtype is None:
            return
        # "float_like": the backend's float type, resolved when emitted.
        self._set_attrs(element_type=dtype if dtype == "float_like" else
                        compiled_dtype_name(dtype, "Cast"))

    def connect(self, *args, **connections):
        given = connections.get("dtype")
        if "dtype" in self.inputs and given is not None and not isinstance(
                given, (str, ExprOps)) and not (hasattr(given, "connections") or
                                                 hasattr(given, "key")):
            # A dtype itself (ml.float32): the cast's attribute.
            from ..types import compiled_dtype_name
            connections.pop("dtype")
            self.inputs = ("input",)
            self._specs = {"input": TerminalSpec()}
            self._set_attrs(element_type=compiled_dtype_name(given, "Cast"))
        return super().connect(*args, **connections)

    __call__ = connect

    def emit(self, builder, operands, path, float_dtype="float32"):
        if "dtype" not in self.inputs:
            return super().emit(builder, operands, path, float_dtype)
        from .. import static
        from ..types import compiled_dtype_name
        dtype = static.require(builder, operands["dtype"], "Cast's dtype", path)
        name = str(dtype) if isinstance(dtype, static.DtypeValue) else compiled_dtype_name(
            dtype, "Cast")
        attrs = {"element_type": name}
        results = builder.add_op(self.op, [operands["input"]], attrs, path)
        static.fold(builder, self.op, attrs, [operands["input"]], results)
        return {"output": results[0]}


class Shape(_Unary):
    op = "shape"


class Slice(_Unary):
    """input[start:stop:step] along `axis` (Python slice semantics)."""
    op = "slice"

    def __init__(self, start=None, stop=None, step=None, axis: int = 0, name=None) -> None:
        big = 2**62
        super().__init__(name)
        self._set_attrs(axes=[int(axis)], start=[0 if start is None else int(start)],
                        stop=[big if stop is None else int(stop)],
                        step=[1 if step is None else int(step)])


class Concat(Primitive):
    """Joins tensors along `axis`; axis=None flattens each first.

    As the original's, `Concat(axis)` has one terminal `input` that takes a
    list: of connections (`Concat(axis=1)(input=["a", "b", "c"])`, which is
    `Concat(n=3, axis=1)(input1="a", input2="b", input3="c")`), or, left
    unconnected or connected to a name, of the arrays given at run time
    (`pm.evaluate({"input": [a, b, c]})`), whose number is fixed by the
    shapes the model is compiled for (`shapes={"input": [[2, 3], [2, 4]]}`
    or the first call's arrays). `Concat(n)` and `input1=`, `input2=`, ...
    name the inputs one by one."""
    op = "concat"

    max_inputs = 4096

    def __init__(self, n: int | None = None, axis: int | None = 0, name=None) -> None:
        super().__init__(name)
        if n is None:
            self._set_list()
        else:
            self._set_count(n)
        self.axis = None if axis is None else int(axis)
        self._set_attrs(axis=0 if axis is None else int(axis))

    def _set_list(self) -> None:
        self.inputs = ("input",)
        self._specs = {"input": TerminalSpec(is_list=True)}

    def _set_count(self, n) -> None:
        # n comes from users' dictionaries too: bound it before making terminals.
        if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= self.max_inputs:
            raise MithrilError(f"Concat: n must be an int from 1 to {self.max_inputs}, got {n!r}")
        self.inputs = tuple(f"input{i + 1}" for i in range(n))
        self._specs = {k: TerminalSpec() for k in self.inputs}

    def connect(self, *args, **connections):
        if args and isinstance(args[0], (list, tuple)):
            # The original's positional order: input (the list), output.
            if "input" in connections:
                raise TypeError("Concat.connect() got multiple values for terminal 'input'")
            connections["input"], args = args[0], args[1:]
            if len(args) > 1:
                raise TypeError("Concat.connect() takes the input list and the output")
            if args:
                connections.setdefault("output", args[0])
                args = ()
        numbered = [k for k in connections if re.fullmatch(r"input[1-9][0-9]*", k)]
        if self.inputs == ("input",) and numbered:
            # Concat() joined input by input, as before the list terminal.
            if "input" in connections:
                raise TypeError("Concat: give input= (a list) or input1=, input2=, ..., not both")
            self._set_count(max(2, *(int(k[5:]) for k in numbered)))
            getattr(self, "_factory_args", {})["n"] = len(self.inputs)
        given = connections.get("input")
        if isinstance(given, (list, tuple)):
            if self.parent is not None:
                raise MithrilError("Concat is already part of a model; create a new instance")
            connections.pop("input")
            self._set_count(len(given))
            # Written by model_to_dict: the list became numbered terminals.
            getattr(self, "_factory_args", {})["n"] = len(given)
            connections.update({f"input{i + 1}": c for i, c in enumerate(given)})
        elif given is not None and self.inputs != ("input",):
            raise TypeError(f"Concat(n={len(self.inputs)}): input= takes a list of connections "
                            "(or use input1=, input2=, ...)")
        return super().connect(*args, **connections)

    __call__ = connect

    def emit(self, builder, operands, path, float_dtype="float32"):
        if self.inputs == ("input",):
            values = operands["input"]
            if not isinstance(values, list):
                raise MithrilError(f"{path}: Concat's input is a list of tensors")
        else:
            values = [operands[k] for k in self.inputs]
        if self.axis is None:
            # The original's axis=None: every input flattened, then joined.
            values = [builder.add_op("reshape", [v], {"shape": [-1]}, path)[0] for v in values]
        return dict(zip(self.outputs, builder.add_op(self.op, values, self.attrs, path)))


class Where(Primitive):
    op = "where"
    inputs = ("cond", "input1", "input2")

    def __init__(self, name=None) -> None:
        super().__init__(name)
        self._specs["cond"] = TerminalSpec(dtype="bool")


class Embedding(Primitive):
    """Rows of `weight` [num_embeddings, dim] at integer `input` indices."""
    op = "embedding"
    inputs = ("input", "weight")

    def __init__(self, num_embeddings: int | None = None, dim: int | None = None,
                 name=None) -> None:
        super().__init__(name)
        self._specs["input"] = TerminalSpec(dtype="int64")
        self._specs["weight"] = TerminalSpec("param", (num_embeddings, dim))


# Losses -------------------------------------------------------------------

class _Loss(Primitive):
    inputs = ("input", "target")


SquaredError = type("SquaredError", (_Loss,), {"op": "squared_error"})
AbsoluteError = type("AbsoluteError", (_Loss,), {"op": "absolute_error"})
HingeLoss = type("HingeLoss", (_Loss,), {"op": "hinge"})
QuadHingeLoss = type("QuadHingeLoss", (_Loss,), {"op": "quad_hinge"})
KLDivergence = type("KLDivergence", (_Loss,), {"op": "kl_divergence"})


class QuantileLoss(_Loss):
    op = "quantile"

    def __init__(self, quantile: float = 0.5, name=None) -> None:
        super().__init__(name)
        self._set_attrs(quantile=float(quantile))


class BinaryCrossEntropy(_Loss):
    op = "binary_cross_entropy"

    def __init__(self, input_type: str = "logits", robust: bool = False, pos_weight=None,
                 name=None) -> None:
        if pos_weight not in (None, 1, 1.0, False):
            raise ValueError("BinaryCrossEntropy pos_weight is not supported")
        if input_type not in ("logits", "probs"):
            raise ValueError(f"input_type must be 'logits' or 'probs', got {input_type!r}")
        super().__init__(name)
        self._set_attrs(from_logits=input_type == "logits")
        self.robust = bool(robust) and input_type == "probs"

    def emit(self, builder, operands, path, float_dtype="float32"):
        if not self.robust:
            return super().emit(builder, operands, path, float_dtype)
        # -(t log p + (1 - t) log(1 - p)) with robust logarithms, finite at 0 and 1.
        p, t = operands["input"], operands["target"]
        one = builder.add_constant(np.ones((), dtype=float_dtype), path)

        def op(name, *args):
            return builder.add_op(name, list(args), {}, path)[0]

        log_p = op("robust_log", p)
        log_q = op("robust_log", op("subtract", one, p))
        s = op("add", op("multiply", t, log_p), op("multiply", op("subtract", one, t), log_q))
        return {"output": op("negate", s)}


class CrossEntropy(_Loss):
    """Per-sample cross entropy over the class axis 1; `target` holds class
    indices (categorical) or probabilities.

    weights: class weights, as torch's `weight` (reduction="none"): None (or
    the original's "", False) none; a sequence or array of one weight per
    class, a constant; True, an input terminal `weights` [C]. A categorical
    sample's loss is scaled by its class's weight; with probability targets
    each class's term is."""
    op = "cross_entropy"

    def __init__(self, input_type: str = "logits", categorical: bool = True,
                 robust: bool = False, weights=None, name=None) -> None:
        if input_type not in ("logits", "probs", "log_probs"):
            raise ValueError(f"input_type must be 'logits', 'probs' or 'log_probs', "
                             f"got {input_type!r}")
        constant = None
        if weights is True:
            self.inputs = ("input", "target", "weights")
        elif weights is not None and weights is not False and not (
                isinstance(weights, str) and weights == ""):
            if isinstance(weights, str):
                raise ValueError(f"CrossEntropy weights must be per-class numbers, True (an "
                                 f"input terminal) or None, got {weights!r}")
            constant = np.asarray(weights, dtype=np.float64)
            if constant.ndim != 1:
                raise ValueError(f"CrossEntropy weights must be one number per class, got "
                                 f"shape {list(constant.shape)}")
        super().__init__(name)
        self._set_attrs(from_logits=input_type == "logits",
                        from_log_probs=input_type == "log_probs")
        self.input_type = input_type
        self.categorical = bool(categorical)
        self.robust = bool(robust) and input_type == "probs"
        self.constant_weights = constant
        if categorical:
            self._specs["target"] = TerminalSpec(dtype="int64")
        if weights is True:
            self._specs["weights"] = TerminalSpec("data", (None,))

    def _log_probs(self, builder, x, path):
        if self.input_type == "logits":
            return builder.add_op("log_softmax", [x], {"axis": 1}, path)[0]
        if self.input_type == "log_probs":
            return x
        return builder.add_op("robust_log" if self.robust else "log", [x], {}, path)[0]

    def emit(self, builder, operands, path, float_dtype="float32"):
        x, target = operands["input"], operands["target"]
        weights = operands.get("weights")
        if self.constant_weights is not None:
            weights = builder.add_constant(self.constant_weights.astype(float_dtype),
                                           path + "_weights")
        if weights is not None and not self.categorical:
            # -sum_c w_c t_c log p_c, the weights along the class axis 1.
            rank = len(builder.type_of(x)[0])
            w = builder.add_op("reshape", [weights], {"shape": [-1] + [1] * (rank - 2)},
                               path)[0]
            terms = builder.add_op("multiply", [target, self._log_probs(builder, x, path)], {},
                                   path)[0]
            terms = builder.add_op("multiply", [terms, w], {}, path)[0]
            total = builder.add_op("sum", [terms], {"axes": [1], "keepdim": False}, path)[0]
            return {"output": builder.add_op("negate", [total], {}, path)[0]}
        if self.robust:
            # Robust: the loss reads log-probabilities from a robust logarithm.
            log_p = builder.add_op("robust_log", [x], {}, path)[0]
            attrs = dict(self.attrs, from_logits=False, from_log_probs=True)
            loss = builder.add_op(self.op, [log_p, target], attrs, path)[0]
        else:
            loss = builder.add_op(self.op, [x, target], self.attrs, path)[0]
        if weights is None:
            return {"output": loss}
        # Each sample's loss times its class's weight: the weights as a
        # one-column table indexed by the targets.
        table = builder.add_op("reshape", [weights], {"shape": [-1, 1]}, path)[0]
        rows = builder.add_op("embedding", [target, table], {}, path)[0]
        per_sample = builder.add_op("squeeze", [rows], {"axes": [-1]}, path)[0]
        return {"output": builder.add_op("multiply", [loss, per_sample], {}, path)[0]}
