# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""Distance-based embeddings, with Mithril's terminal names: distance
matrices, multidimensional scaling (MDS) and t-SNE."""

from __future__ import annotations

from ..errors import MithrilError
from ..framework import Model, Primitive, TerminalSpec
from ._compose import Composer
from .kernels import cartesian_difference
from .primitives import (Absolute, Add, Buffer, Divide, EyeLike, FloorDivide, KLDivergence,
                         Multiply, Power, Square, StableReciprocal, Subtract, Sum)


class NormModifier(Model):
    """Maps any real `input` onto the norms [1, 5] as Mithril does: a triangle
    wave of period 8 that is the identity on [1, 5]."""

    def __init__(self, name=None) -> None:
        super().__init__(name)
        c = Composer(self)
        shifted = c(Subtract(), left="input", right=1.0)
        # shifted mod 8, floored as Python's % is.
        wrapped = c(Subtract(), left=shifted,
                    right=c(Multiply(), left=c(FloorDivide(), numerator=shifted, denominator=8.0),
                            right=8.0))
        inner = c(Subtract(), left=c(Divide(), numerator=wrapped, denominator=8.0), right=0.5)
        tri = c(Subtract(), left=1.0, right=c(Multiply(), left=c(Absolute(), input=inner),
                                              right=2.0))
        c(Add(), left=c(Multiply(), left=tri, right=4.0), right=1.0, output="output")
        c.finish("input")


class DistanceMatrix(Model):
    """output[i, j] = sum_k |left[i, k] - right[j, k]| ** norm"""

    def __init__(self, name=None) -> None:
        super().__init__(name)
        c = Composer(self)
        diff = c(Absolute(), input=cartesian_difference(c, "left", "right"))
        c(Sum(axis=2), input=c(Power(), base=diff, exponent="norm"), output="output")
        c.finish("left")


class EncoderDistanceMatrix(Model):
    """The `norm`-distance matrix of the rows of input1 and input2 (the norm
    passed through NormModifier); without get_final_distance, its power
    `norm` (no root taken)."""

    def __init__(self, get_final_distance: bool = True, robust: bool = True, name=None) -> None:
        super().__init__(name)
        c = Composer(self)
        norm = c(NormModifier(), input="norm")
        if get_final_distance:
            powered = c(DistanceMatrix(), left="input1", right="input2", norm=norm)
            root = c(Divide(), numerator=1.0, denominator=norm)
            c(Power(robust=robust), base=powered, exponent=root, output="output")
        else:
            c(DistanceMatrix(), left="input1", right="input2", norm=norm, output="output")
        c.finish("input1")


class MDSCore(Model):
    """Kruskal's stress of predicted distances against given ones, in the
    norm `norm`: (sum |d - p|^n / sum d^n) ** (1/n). With exact_distances the
    predictions are powered distances (their n-th root is taken first);
    otherwise both are."""

    requires_norm = True

    def __init__(self, exact_distances: bool = True, robust: bool = True, name=None) -> None:
        super().__init__(name)
        c = Composer(self)
        norm = c(NormModifier(), input="norm")
        inverse = c(StableReciprocal(), input=norm)

        def power(base, exponent):
            return c(Power(robust=robust), base=base, exponent=exponent)

        predicted = power("pred_distances", inverse)
        if exact_distances:
            given, scale = "distances", c(Sum(), input=power("distances", norm))
        else:
            given, scale = power("distances", inverse), c(Sum(), input="distances")
        error = c(Absolute(), input=c(Subtract(), left=given, right=predicted))
        stress = c(Multiply(), left=c(Sum(), input=power(error, norm)),
                   right=c(StableReciprocal(), input=scale))
        c(Power(robust=robust), base=stress, exponent=inverse, output="output")
        c.finish("distances")


class TsnePJoint(Primitive):
    """t-SNE's joint probabilities of `squared_distances` [N, N] at
    `target_perplexity` (a number: `TsnePJoint(target_perplexity=20.0)` or a
    connected scalar), as Mithril computes them: a bisection per row for the
    bandwidth whose conditional probabilities reach the perplexity, then
    (P + P^T) / (2 N). `threshold` clips the probabilities in the entropy
    (default: the machine epsilon of the element type). The dialect's
    `mithril.tsne_p_joint`; it has no gradient, as in Mithril."""
    op = "tsne_p_joint"
    inputs = ("squared_distances", "target_perplexity")

    def __init__(self, threshold: float | None = None, *, name=None) -> None:
        super().__init__(name)
        if threshold is not None:
            self.inputs = (*type(self).inputs, "threshold")
            self._specs["threshold"] = TerminalSpec()
            self._set_terminal_value("threshold", float(threshold))


class TSNECore(Model):
    """t-SNE's cost: KL(p_joint || q) summed, with q the Student-t affinities
    of the predicted squared distances, normalized off the diagonal. The joint
    probabilities `p_joint` are an input, or, with calculate_p_joint=True,
    computed from `distances` at `perplexity` (TsnePJoint; squared first
    where exact_distances)."""

    requires_norm = False

    def __init__(self, exact_distances: bool = True, calculate_p_joint: bool = False,
                 perplexity: float = 20.0, name=None) -> None:
        super().__init__(name)
        c = Composer(self)
        p_joint = "p_joint"
        if calculate_p_joint:
            squared = c(Square(), input="distances") if exact_distances else "distances"
            p_joint = c(TsnePJoint(target_perplexity=float(perplexity)),
                        squared_distances=squared)
        affinity = c(Divide(), numerator=1.0, denominator=c(Add(), left=1.0,
                                                           right="pred_distances"))
        off_diagonal = c(Subtract(), left=1.0, right=c(EyeLike(), input="distances"))
        q = c(Multiply(), left=affinity, right=off_diagonal)
        q = c(Divide(), numerator=q, denominator=c(Sum(), input=q))
        c(Sum(), input=c(KLDivergence(), input=q, target=p_joint), output="output")
        c.finish("distances")


class _DistanceEncoder(Model):
    """Learns coordinates `coords` whose distance matrix matches `input` (a
    distance matrix, a powered one, or points whose distances are taken)."""

    def __init__(self, base: Model, input_type: str, name=None) -> None:
        super().__init__(name)
        if input_type not in ("distances", "powered_distances", "points"):
            raise MithrilError(f"input_type must be 'distances', 'powered_distances' or "
                               f"'points', got {input_type!r}")
        c = Composer(self)
        given = "input"
        if input_type == "points":
            given = c(EncoderDistanceMatrix(get_final_distance=False), input1="input",
                      input2="input", norm="norm")
        predicted = c(EncoderDistanceMatrix(get_final_distance=False), input1="coords",
                      input2="coords", norm="norm")
        bindings = {"distances": given, "pred_distances": predicted}
        if base.requires_norm:
            bindings["norm"] = "norm"
        c(base, output="output", **bindings)
        c(Buffer(), input="coords", output="predicted_coords")
        c.finish("input")


class MDS(_DistanceEncoder):
    """Multidimensional scaling into `prediction_dim` dimensions."""

    def __init__(self, prediction_dim: int, input_type: str = "distances", name=None) -> None:
        super().__init__(MDSCore(exact_distances=input_type == "distances"), input_type, name)
        self.nets["coords"].shape = (None, prediction_dim)


class TSNE(_DistanceEncoder):
    """t-SNE into `prediction_dim` dimensions; `p_joint` is an input, or
    computed from the input's distances with calculate_p_joint=True."""

    def __init__(self, prediction_dim: int, input_type: str = "distances",
                 preplexity: float = 20.0, calculate_p_joint: bool = False, name=None) -> None:
        super().__init__(TSNECore(exact_distances=input_type == "distances",
                                  calculate_p_joint=calculate_p_joint, perplexity=preplexity),
                         input_type, name)
        self.nets["coords"].shape = (None, prediction_dim)
