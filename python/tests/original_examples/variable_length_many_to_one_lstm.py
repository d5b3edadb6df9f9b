# Follows the original Mithril's example examples/model_api/variable_length_many_to_one_lstm.py
# (github.com/synnada-ai/mithril).
#
# Copyright 2022 Synnada, Inc.
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
#     http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.
#
# The data preparation, the EncoderDecoder train model, its compile call and
# the EncoderDecoderInference model unchanged, in functions whose arguments
# are the example's sizes (so that the test picks small ones), with the
# backend line (MlirBackend for JaxBackend), and one addition: the compile
# call gives the shape of the decoder's output layer (see there). Left out: optax, the training
# loop, and the evaluation of the inference model with trained parameters
# (the test evaluates both models with random ones).

import mithril as ml
from mithril.models import (
    EncoderDecoder,
    EncoderDecoderInference,
    LSTMCell,
    Mean,
    SquaredError,
    TrainModel,
)
from mithril.utils.utils import pack_data_into_time_slots

# Define the backend
backend = ml.MlirBackend(dtype=ml.float64)
backend.set_seed(42)

cell_type = LSTMCell


def build_train_model(input_dim=1, hidden_dim=40, output_dim=1, sample_size=500,
                      min_length=4, max_length=7):
    # Create randomly generated input and target lengths.
    input_lengths = backend.randint(min_length, max_length + 1, (sample_size,))
    target_lengths = backend.randint(min_length, max_length + 1, (sample_size,))

    # Initialize train data as an empty list. This list
    # will be filled with input_target pairs which then
    # will be packed into time slots.
    train_data = []

    # Randomly generate start indices for each input sequence.
    start_indices = backend.randint(-100, 100, (sample_size,))
    for idx, start in enumerate(start_indices):
        # Prepare train data
        start = int(start)
        input_end = int(start + input_lengths[idx])
        target_end = int(input_end + target_lengths[idx])

        # NOTE: Pylance sees int, int type arguments but throws an error.
        single_input = backend.arange(start, input_end).reshape(-1, input_dim)  # type: ignore
        single_target = backend.arange(input_end, target_end).reshape(-1, output_dim)  # type: ignore

        single_data = (single_input, single_target)
        train_data.append(single_data)

    # Put data into its corresponding time slots.
    train_time_inputs, data_sorted_wrt_input = pack_data_into_time_slots(
        backend=backend, data=train_data, key=("input",), index=0
    )

    # Put target into its corresponding time slots with given sorted inputs.
    train_indices, train_time_targets, data_sorted_wrt_target = pack_data_into_time_slots(
        backend=backend,
        data=data_sorted_wrt_input,
        key=("target",),
        index=1,
        return_indices=True,
    )

    # Find the max lengths of input and target.
    input_max_length = data_sorted_wrt_input[0][0].shape[0]
    target_max_length = data_sorted_wrt_target[0][1].shape[0]

    # Prepare static inputs.
    train_static_inputs = (
        {
            "initial_hidden": backend.zeros(sample_size, 1, hidden_dim),
            "decoder_input": backend.zeros(sample_size, 1, input_dim),
            "indices": backend.array(train_indices),
            "initial_cell": backend.zeros(sample_size, 1, hidden_dim),
            "decoder_initial_cell": backend.zeros(sample_size, 1, hidden_dim),
        }
        | train_time_targets
        | train_time_inputs
    )

    # Create an EncoderDecoder model with LSTM Cell.
    model = EncoderDecoder(
        cell_type=cell_type(),
        max_input_sequence_length=input_max_length,
        max_target_sequence_length=target_max_length,
        teacher_forcing=True,
    )

    # Wrap it with TrainModel for training.
    train_ctx = TrainModel(model)

    # Add SquaredError loss model to each target.
    for idx in range(len(train_time_targets)):
        connections = {"input": f"output{idx}", "target": f"target{idx}"}
        train_ctx.add_loss(SquaredError(), reduce_steps=[Mean()], **connections)

    # Compile model with preferred backend which
    # is JaxBackend in this case.
    # (Here with the size of the decoder's output layer: the original's
    # compile ties each loss's input to its target's shape (safe_shapes),
    # which gives it; our shape inference does not tie them.)
    compiled_model = ml.compile(
        model=train_ctx,
        backend=backend,
        constant_keys=train_static_inputs,
        shapes={"decoder_w_out": [output_dim, hidden_dim], "decoder_bias_out": [output_dim]},
    )
    return compiled_model, train_static_inputs, input_max_length, target_max_length


def build_inference_model(input_dim=1, hidden_dim=40, output_dim=1, sample_size=500,
                          inference_max_input=5, inference_max_target_length=5,
                          starting_number=3.0):
    # Prepare the test input data.
    test_input = backend.arange(
        starting_number,
        starting_number + inference_max_input,  # type: ignore
    ).reshape(-1, input_dim)

    # Prepare the test data.
    test_data = [(test_input,)]

    # Pack the data into its corresponding time slots.
    test_static_inputs, data_sorted_wrt_input = pack_data_into_time_slots(
        backend=backend, data=test_data, key=("input",), index=0
    )

    # Prepare test static inputs. Provide zeros as in training
    # for the model specific initial hidden and cell states.
    test_static_inputs = {
        "decoder_input": backend.zeros(1, 1, output_dim),
        "initial_hidden": backend.zeros(1, 1, hidden_dim),
        "initial_cell": backend.zeros(sample_size, 1, hidden_dim),
        "decoder_initial_cell": backend.zeros(sample_size, 1, hidden_dim),
    } | test_static_inputs

    # Create the inference model.
    test_model = EncoderDecoderInference(
        cell_type=cell_type(),
        max_input_sequence_length=inference_max_input,
        max_target_sequence_length=inference_max_target_length,
    )

    # Compile the inference model
    compiled_test_model = ml.compile(
        model=test_model,
        backend=backend,
        data_keys={key for key in test_static_inputs},
    )
    return compiled_test_model, test_static_inputs
