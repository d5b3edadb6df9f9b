# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""The model library: primitives, layers and losses with Mithril's names."""

from ..framework import TBD, Connection, IOKey, Model, Tensor
# The original's key specification of PrimitiveModel terminals: an IOKey here.
BaseKey = IOKey
from ..expressions import functional
from .primitives import *  # noqa: F401,F403
from .primitives import __dict__ as _p
from .train import L1, L2, TrainModel
from .layers import (MLP, AvgPool2D, BatchNorm2D, Convolution1D, Convolution2D, Layer, LayerNorm,
                     LinearSVM, LogisticRegression,
                     Linear, MaxPool1D, MaxPool2D, PolynomialRegression, RNNCell, Cell)
from .kernels import KernelizedSVM, PolynomialKernel, QuadraticFormRegularizer, RBFKernel
from .manifold import (MDS, TSNE, DistanceMatrix, EncoderDistanceMatrix, MDSCore, NormModifier,
                       TSNECore, TsnePJoint)
from .parity import (AUC, F1, Accuracy, Clamp, EncoderDecoder, Eye, Floor, GroupNorm,
                     IsNan, LSTMCell, LSTMCellBody, ManyToOne, NanToNum, OneToMany, Ones, PositionalEncoding,
                     Pad, Precision, Recall, ScaledDotProduct, SiLU, SwapAxes, Unique, ZerosLike)
from .parity import (Cholesky, Eigvalsh, GaussProcessRegressionCore, GPRAlpha, GPRLoss, GPRVOuter,
                     TransposedDiagonal)
# The original's models its example programs use (python/tests/original_examples).
from .sequence import EncoderDecoderInference, OneToManyInference
from .scalars import (Arange, Item, PrimitiveRandInt, PrimitiveRandn, RandInt, Randn, Size,
                      ToTensor)
from .lists import Indexer, Split, ToList, ToTuple
from .reference import *  # noqa: F401,F403  (the original's models added there)
# The original's positional connect() orders of the models defined in parity.
GroupNorm._connect_order = ("input", "output")
ScaledDotProduct._connect_order = ("query", "key", "value", "dropout_p", "attn_mask",
                                   "is_causal", "scale", "output")
# torch.nn-style layers. Their Flatten and Linear share names with Mithril's
# and are only reached as mithril.models.torch_layers.Flatten / .Linear.
from . import torch_layers
from .torch_layers import AvgPool2d, BatchNorm2d, Conv2d, GlobalAvgPool2d, MaxPool2d, ReLU

__all__ = ["IOKey", "Model", "Tensor", "TBD", "Connection", "functional", "L1", "L2", "TrainModel", "Layer", "LinearSVM", "LogisticRegression", "MLP", "AvgPool2D", "BatchNorm2D", "Convolution1D",
           "Convolution2D", "LayerNorm", "Linear", "MaxPool1D", "MaxPool2D", "RNNCell",
           "PolynomialRegression", "KernelizedSVM", "PolynomialKernel",
           "QuadraticFormRegularizer", "RBFKernel", "MDS", "TSNE", "TsnePJoint", "DistanceMatrix",
           "EncoderDistanceMatrix", "MDSCore", "NormModifier", "TSNECore",
           "AvgPool2d", "BatchNorm2d", "Conv2d", "GlobalAvgPool2d", "MaxPool2d", "ReLU",
           "Clamp", "GroupNorm", "LSTMCell", "PositionalEncoding", "ScaledDotProduct", "SiLU",
           "SwapAxes", "Split", "Arange", "Eye", "Floor", "IsNan", "NanToNum", "Ones", "ZerosLike",
           "ManyToOne", "OneToMany", "EncoderDecoder", "Accuracy", "Precision", "Recall", "F1",
           "AUC", "Cholesky", "Eigvalsh", "GaussProcessRegressionCore", "GPRAlpha", "GPRLoss",
           "GPRVOuter", "TransposedDiagonal", "Unique"] + reference.__all__ + [
    k for k, v in _p.items() if isinstance(v, type) and not k.startswith("_")
    and k not in ("Primitive", "TerminalSpec")]
