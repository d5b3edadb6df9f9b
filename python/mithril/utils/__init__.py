# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""Helpers: Mithril's model-dict format."""

from .dict_conversions import model_to_dict
from .dict_to_model import ModelDictError, dict_to_model

__all__ = ["ModelDictError", "dict_to_model", "model_to_dict"]
