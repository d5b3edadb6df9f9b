# Follows the original Mithril's example examples/model_api/cnn_forcast_sine_training.py
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
# The model and its TrainModel unchanged, with the example's backend line
# (MlirBackend for TorchBackend). Left out: the sine-wave data (made with the
# backend's rand_uniform/linspace/sin/stack), torch's DataLoader, the compile
# call and the training loop with the example's own Adam (utils.optimizers),
# and the plot; the test compiles the train model itself.

import mithril as ml
from mithril.models import (
    Convolution1D,
    Flatten,
    Linear,
    MaxPool1D,
    Mean,
    Model,
    Relu,
    SquaredError,
    TrainModel,
)

# Define backend. It would also work with any available backend you prefer.
backend = ml.MlirBackend(dtype=ml.float64)

seq_len = 50

# Create a simple CNN model.
cnn_model = Model()
cnn_model |= Convolution1D(out_channels=16, kernel_size=5, stride=1, padding=2)
cnn_model += Relu()
cnn_model += MaxPool1D(kernel_size=2, stride=2)
cnn_model += Flatten(start_dim=1)
cnn_model += Linear(64)
cnn_model += Relu()
cnn_model += Linear(1)

# Wrap it with TrainModel for training.
train_model = TrainModel(cnn_model)
train_model.expose_keys(predictions=cnn_model.cout)  # type: ignore

# Add loss to the output of the model.
train_model.add_loss(
    SquaredError(),
    input=cnn_model.cout,
    target="target",
    reduce_steps=[Mean()],
)

train_model.set_shapes(input=[None, 1, seq_len])
