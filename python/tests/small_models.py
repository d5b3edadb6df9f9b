# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""Small models shared by several test files."""

from mithril.models import Convolution2D, Flatten, Linear, MaxPool2D, Model, Relu


def small_cnn(classes: int) -> Model:
    """Two 3x3 convolutions (8 and 16 channels, padded), each with a ReLU and
    a 2x2 max pooling, then a Linear layer of `classes` outputs."""
    model = Model()
    model |= Convolution2D(kernel_size=3, out_channels=8, padding=1)(input="input")
    model += Relu()
    model += MaxPool2D(kernel_size=2)
    model += Convolution2D(kernel_size=3, out_channels=16, padding=1)
    model += Relu()
    model += MaxPool2D(kernel_size=2)
    model += Flatten(start_dim=1)
    model += Linear(classes)(output="output")
    return model
