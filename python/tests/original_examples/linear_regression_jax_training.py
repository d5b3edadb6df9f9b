# Follows the original Mithril's example examples/model_api/linear_regression_jax_training.py
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
# The model, its TrainModel and the compile call unchanged, with the backend
# line (MlirBackend for JaxBackend). Left out: optax and the training loop.

import mithril as ml
from mithril.models import Linear, Mean, SquaredError, TrainModel

backend = ml.MlirBackend(dtype=ml.float64)

bias = 2
weight = 5


# Create random input and target data
x = backend.randn(1000, 1)
noise = backend.randn(1000, 1) * 0.1
y = x * weight + bias + noise

# Create a linear model
linear = Linear(dimension=1)

# Wrap the linear model with a TrainModel
train_model = TrainModel(linear)

# Add a loss to the TrainModel
train_model.add_loss(
    SquaredError(), input="output", target="target", reduce_steps=[Mean()]
)

# Prepare static data
static_data = {"input": x, "target": y}

# Compile the model
pm = ml.compile(model=train_model, backend=backend, constant_keys=static_data)
