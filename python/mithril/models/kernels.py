# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""Kernel methods: kernels, the kernelized SVM and its quadratic-form
regularizer, with Mithril's terminal names."""

from __future__ import annotations

from ..errors import MithrilError
from ..framework import BaseModel, Model
from ._compose import Composer
from .layers import Linear, _activation
from .primitives import (Add, Divide, Exponential, MatrixMultiply, Multiply, Power, Square,
                         Subtract, Sum, Transpose, Unsqueeze)


def cartesian_difference(c: Composer, left: str, right: str) -> str:
    """left[:, None, :] - right[None, :, :], as [N, M, d]."""
    return c(Subtract(), left=c(Unsqueeze(axis=1), input=left),
             right=c(Unsqueeze(axis=0), input=right))


class RBFKernel(Model):
    """output[i, j] = l_scale^2 exp(-|input1[i] - input2[j]|^2 / (2 sigma^2)),
    for input1 [N, d], input2 [M, d] and l_scale, sigma of shape [1]."""

    def __init__(self, name=None) -> None:
        super().__init__(name)
        c = Composer(self)
        squared = c(Sum(axis=2), input=c(Square(), input=cartesian_difference(c, "input1",
                                                                                "input2")))
        exponent = c(Divide(), numerator=c(Multiply(), left=squared, right=-0.5),
                     denominator=c(Square(), input="sigma"))
        c(Multiply(), left=c(Multiply(), left="l_scale", right="l_scale"),
          right=c(Exponential(), input=exponent), output="output")
        c.finish("input1")


class PolynomialKernel(Model):
    """output = (input1 @ input2.T + poly_coef) ** degree; with robust (the
    default, as in Mithril) the power is the robust one, of the absolute value."""

    def __init__(self, robust: bool = True, name=None) -> None:
        super().__init__(name)
        c = Composer(self)
        gram = c(MatrixMultiply(), left="input1", right=c(Transpose(), input="input2"))
        c(Power(robust=robust), base=c(Add(), left=gram, right="poly_coef"), exponent="degree",
          output="output")
        c.finish("input1")


class KernelizedSVM(Model):
    """output = kernel(input1, input2, ...) @ weight.T + bias. The kernel (a
    model or a library model's name) keeps its input names, and its matrix is
    the output `kernel` too."""

    def __init__(self, kernel, name=None) -> None:
        super().__init__(name)
        kernel_model = _activation(kernel)
        if not isinstance(kernel_model, BaseModel) or len(kernel_model.input_keys) < 2:
            raise MithrilError("KernelizedSVM: the kernel needs at least two inputs")
        if len(kernel_model.output_keys) != 1:
            raise MithrilError("KernelizedSVM: the kernel needs exactly one output")
        c = Composer(self)
        (kernel_output,) = kernel_model.output_keys
        self |= kernel_model.connect(**{k: k for k in kernel_model.input_keys},
                                     **{kernel_output: "kernel"})
        self.nets["kernel"].expose = True
        c(Linear(), input="kernel", weight="weight", bias="bias", output="output")
        c.finish(kernel_model.canonical_input or kernel_model.input_keys[0])


class QuadraticFormRegularizer(Model):
    """output = 0.5 * input @ kernel @ input.T, for input [1, N] and kernel [N, N]."""

    def __init__(self, name=None) -> None:
        super().__init__(name)
        c = Composer(self)
        left = c(MatrixMultiply(), left="input", right="kernel")
        form = c(MatrixMultiply(), left=left, right=c(Transpose(), input="input"))
        c(Multiply(), left=form, right=0.5, output="output")
        c.finish("input")
