# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""The original's inference forms of its sequence models: OneToManyInference
(a decoder whose every step reads the output of the step before) and
EncoderDecoderInference (a ManyToOne encoder feeding it), built from the same
cells as ManyToOne/OneToMany (mithril.models.parity)."""

from __future__ import annotations

from ..framework import Connection, Model, _fresh_copy
from .parity import ManyToOne, _cell_terminals, _exposed, _sequence_length


class OneToManyInference(Model):
    """The cell run max_sequence_length steps from `input` [N, 1, d] and
    initial_hidden (and initial_cell for an LSTM), every step with the same
    weights; the input of step t >= 1 is the whole output of step t-1 (so the
    cell's output has the input's size). Outputs output0 .. output{L-1};
    canonical input `input`, canonical output output{L-1}."""

    def __init__(self, cell_type, max_sequence_length: int, *, name=None) -> None:
        states, shared = _cell_terminals(cell_type, "OneToManyInference")
        length = _sequence_length(max_sequence_length, "max_sequence_length",
                                  "OneToManyInference")
        super().__init__(name)
        self.cell_type, self.max_sequence_length = cell_type, length
        weights = {k: k for k in shared}
        previous: dict = {f"prev_{k}": f"initial_{k}" for k in states}
        step_input = "input"
        for t in range(length):
            cell = _fresh_copy(cell_type)
            self |= cell.connect(input=step_input, output=_exposed(f"output{t}"),
                                 **weights, **previous)
            previous = {f"prev_{k}": Connection(cell, k) for k in states}
            step_input = Connection(cell, "output")
        self._cin, self._cout = self.nets["input"], self.nets[f"output{length - 1}"]


class EncoderDecoderInference(Model):
    """The original's EncoderDecoderInference: a ManyToOne encoder whose
    hidden_concat is the initial_hidden of a OneToManyInference decoder (no
    reordering, unlike EncoderDecoder's `indices`). The encoder's inputs keep
    their names (input0 .., initial_hidden, the cell's weights); the decoder's
    are named decoder_<name> (decoder_input, decoder_w_ih,
    decoder_initial_cell, ...); its outputs output0 .. output{T-1} are the
    model's."""

    def __init__(self, cell_type, max_input_sequence_length: int,
                 max_target_sequence_length: int, *, name=None) -> None:
        encoder = ManyToOne(cell_type, max_input_sequence_length)
        decoder = OneToManyInference(cell_type, max_target_sequence_length)
        super().__init__(name)
        self.cell_type = cell_type
        self.max_input_sequence_length = encoder.max_sequence_length
        self.max_target_sequence_length = decoder.max_sequence_length
        self |= encoder.connect(**{k: k for k in encoder.input_keys})
        bindings = {k: "decoder_" + k for k in decoder.input_keys if k != "initial_hidden"}
        bindings.update({k: _exposed(k) for k in decoder.output_keys})
        self |= decoder.connect(initial_hidden=Connection(encoder, "hidden_concat"), **bindings)
        self._cin = self.nets["input0"]
        self._cout = self.nets[decoder.canonical_output]
