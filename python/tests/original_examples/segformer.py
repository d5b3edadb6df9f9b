# Follows the original Mithril's example examples/segformer/ (its three files
# segformer_encoder.py, segformer_decode_head.py and
# segformer_semantic_segmentation.py, here one after the other)
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
# Unchanged but for the relative imports between the three files (one module
# here). The example's tests load Hugging Face's weights and config; the test
# here builds a config object and evaluates the models with random weights.

from mithril.framework import Connection, IOKey, Tensor
from mithril.models import (
    Arange,
    BatchNorm2D,
    Buffer,
    Concat,
    Convolution2D,
    Flatten,
    Gelu,
    LayerNorm,
    Linear,
    Model,
    Relu,
    Softmax,
    ToTuple,
)
from mithril.types import Dtype

# segformer_encoder.py ----------------------------------------------------------


def segformer_dwconv(dim=768, *, name: str | None = None) -> Model:
    hidden_states = IOKey("input", type=Tensor[float])
    height = IOKey("height")
    width = IOKey("width")

    shape = hidden_states.shape
    batch_size = shape[0]
    num_channels = shape[2]
    hidden_states = hidden_states.transpose(axes=(0, 2, 1))
    hidden_states = hidden_states.reshape(
        shape=(batch_size, num_channels, height, width)
    )
    hidden_states = Convolution2D(
        kernel_size=3,
        out_channels=dim,
        padding=1,
        use_bias=True,
        groups=dim,
        name="dwconv",
    )(input=hidden_states)
    hidden_states = Flatten(start_dim=2)(input=hidden_states).transpose(axes=(0, 2, 1))
    # Final outputs
    return Model.create(name=name, output=hidden_states)


def segformer_mixffn(
    in_features, hidden_features=None, out_features=None, *, name: str | None = None
):
    input = IOKey("input", type=Tensor[float])
    height = IOKey("height")
    width = IOKey("width")

    out_features = out_features or in_features
    hidden_states = Linear(hidden_features, name="dense1")(input=input)
    hidden_states = segformer_dwconv(dim=hidden_features, name="dwconv")(
        input=hidden_states, height=height, width=width
    )
    hidden_states = Gelu(name="intermediate_act_fn")(hidden_states)
    hidden_states = Linear(out_features, name="dense2")(input=hidden_states)
    return Model.create(name=name, output=hidden_states)


def segformer_self_output(hidden_size, *, name: str | None = None):
    input = IOKey("input", type=Tensor[float])
    hidden_states = Linear(hidden_size, name="dense")(input=input)
    return Model.create(name=name, output=hidden_states)


def transpose_for_scores(
    num_attention_heads, attention_head_size, *, name: str | None = None
):
    hidden_states = IOKey("input", type=Tensor[float])
    hidden_states_shp = hidden_states.shape
    new_shape = (
        hidden_states_shp[0],
        hidden_states_shp[1],
        num_attention_heads,
        attention_head_size,
    )
    hidden_states = hidden_states.reshape(new_shape).transpose(axes=(0, 2, 1, 3))
    return Model.create(name=name, output=hidden_states)


def segformer_efficient_self_attention(
    hidden_size,
    num_attention_heads,
    sequence_reduction_ratio,
    *,
    name: str | None = None,
):
    hidden_states = IOKey("input", type=Tensor[float])
    height = IOKey("height")
    width = IOKey("width")

    if hidden_size % num_attention_heads != 0:
        raise ValueError(
            f"The hidden size ({hidden_size}) is not a multiple of"
            f"the number of attention heads ({num_attention_heads})"
        )
    # NOTE: "height" and "width" keys are only used if sequence_reduction_ratio > 1.
    # We have to add them to the model regardless of sequence_reduction_ratio
    # to keep the API consistent.
    height = Buffer()(input=height)
    width = Buffer()(input=width)

    attention_head_size = int(hidden_size / num_attention_heads)
    all_head_size = num_attention_heads * attention_head_size

    query = Linear(hidden_size, name="query")(input=hidden_states)
    query_layer = transpose_for_scores(num_attention_heads, attention_head_size)(
        input=query
    )

    if sequence_reduction_ratio > 1:
        shape = hidden_states.shape
        batch_size = shape[0]
        num_channels = shape[2]
        hidden_states = hidden_states.transpose(axes=(0, 2, 1)).reshape(
            (batch_size, num_channels, height, width)
        )
        hidden_states = Convolution2D(
            kernel_size=sequence_reduction_ratio,
            out_channels=hidden_size,
            stride=sequence_reduction_ratio,
            name="sr",
        )(input=hidden_states)
        hidden_states = hidden_states.reshape((batch_size, num_channels, -1)).transpose(
            axes=(0, 2, 1)
        )
        hidden_states = LayerNorm(name="layer_norm")(input=hidden_states)

    key = Linear(hidden_size, name="key")(input=hidden_states)
    key_layer = transpose_for_scores(num_attention_heads, attention_head_size)(
        input=key
    )
    value = Linear(hidden_size, name="value")(input=hidden_states)
    value_layer = transpose_for_scores(num_attention_heads, attention_head_size)(
        input=value
    )

    attention_scores = query_layer @ key_layer.transpose(axes=(0, 1, 3, 2))
    attention_scores = attention_scores / (attention_head_size**0.5)
    attention_probs = Softmax()(input=attention_scores)
    context_layer = attention_probs @ value_layer
    context_layer = context_layer.transpose(axes=(0, 2, 1, 3))
    context_shp = context_layer.shape
    new_context_layer_shape = (context_shp[0], context_shp[1], all_head_size)
    # new_context_layer_shape = context_layer.shape[:-2] + (all_head_size,)
    context_layer = context_layer.reshape(new_context_layer_shape)
    return Model.create(
        name=name, output=context_layer, height_out=height, width_out=width
    )


def segformer_attention(
    hidden_size,
    num_attention_heads,
    sequence_reduction_ratio,
    *,
    name: str | None = None,
):
    hidden_states = IOKey("input", type=Tensor[float])
    height = IOKey("height")
    width = IOKey("width")

    self_output, _, _ = segformer_efficient_self_attention(
        hidden_size, num_attention_heads, sequence_reduction_ratio, name="self"
    )(input=hidden_states, height=height, width=width)
    self_output = segformer_self_output(hidden_size, name="output")(input=self_output)
    return Model.create(name=name, output=self_output)


def segformer_layer(
    hidden_size,
    num_attention_heads,
    sequence_reduction_ratio,
    mlp_ratio,
    *,
    name: str | None = None,
):
    hidden_states = IOKey("input", type=Tensor[float])
    height = IOKey("height")
    width = IOKey("width")

    attention_input = LayerNorm(name="layer_norm_1")(input=hidden_states)
    attention_output = segformer_attention(
        hidden_size, num_attention_heads, sequence_reduction_ratio, name="attention"
    )(input=attention_input, height=height, width=width)
    hidden_states = attention_output + hidden_states
    mlp_input = LayerNorm(name="layer_norm_2")(input=hidden_states)
    mlp_hidden_size = int(hidden_size * mlp_ratio)
    mlp_output = segformer_mixffn(hidden_size, mlp_hidden_size, name="mlp")(
        input=mlp_input, height=height, width=width
    )
    layer_output = mlp_output + hidden_states
    return Model.create(name=name, output=layer_output)


def segformer_overlap_patch_embeddings(
    patch_size, stride, hidden_size, *, name: str | None = None
):
    pixel_values = IOKey("input", type=Tensor[float])
    embeddings = Convolution2D(
        patch_size, hidden_size, stride, patch_size // 2, name="proj"
    )(input=pixel_values)
    shape = embeddings.shape
    height, width = shape[2], shape[3]
    embeddings = Flatten(start_dim=2)(input=embeddings).transpose(axes=(0, 2, 1))
    embeddings = LayerNorm(name="layer_norm")(input=embeddings)
    return Model.create(name=name, embeddings=embeddings, height=height, width=width)


def segformer_block(
    hidden_size,
    num_attention_heads,
    depth,
    sequence_reduction_ratio,
    mlp_ratio,
    *,
    name: str | None = None,
) -> Model:
    hidden_states = IOKey("input", type=Tensor[float])
    height = IOKey("height")
    width = IOKey("width")

    for i in range(depth):
        hidden_states = segformer_layer(
            hidden_size,
            num_attention_heads,
            sequence_reduction_ratio,
            mlp_ratio,
            name=f"{i}",
        )(input=hidden_states, height=height, width=width)
    return Model.create(name=name, output=hidden_states)


def segformer_encoder(config, *, name: str | None = None):
    pixel_values = IOKey("input", type=Tensor[float])
    hidden_states = pixel_values
    num_encoder_blocks = config.num_encoder_blocks
    batch_size = pixel_values.shape[0]
    all_hidden_states = []
    for i in range(num_encoder_blocks):
        # Patch Embeddings.
        hidden_states, height, width = segformer_overlap_patch_embeddings(
            config.patch_sizes[i],
            config.strides[i],
            config.hidden_sizes[i],
            name=f"patch_embeddings_{i}",
        )(input=hidden_states)
        # Transformers.
        hidden_states = segformer_block(
            config.hidden_sizes[i],
            config.num_attention_heads[i],
            config.depths[i],
            config.sr_ratios[i],
            config.mlp_ratios[i],
            name=f"block_{i}",
        )(input=hidden_states, height=height, width=width)
        # Layer Norm.
        hidden_states = LayerNorm(name=f"layer_norm_{i}")(input=hidden_states)
        # Reshape back to (batch_size, num_channels, height, width).
        if i != num_encoder_blocks - 1 or (
            i == num_encoder_blocks - 1 and config.reshape_last_stage
        ):
            hidden_states = hidden_states.reshape(
                (batch_size, height, width, -1)
            ).transpose(axes=(0, 3, 1, 2))
        all_hidden_states.append(hidden_states)

    hidden_states_tuple = ToTuple(n=num_encoder_blocks)(*all_hidden_states)
    return Model.create(
        name=name, output=hidden_states, hidden_states=hidden_states_tuple
    )


# segformer_decode_head.py ------------------------------------------------------


def segformer_bilinear_interpolate(*, name: str | None = None):
    input = IOKey("input", type=Tensor[float])
    size = IOKey("size", type=tuple[int, ...])

    shape = input.shape
    H_in, W_in = shape[2], shape[3]
    H_out, W_out = size[0], size[1]
    # Scale factors
    scale_y = H_in / H_out
    scale_x = W_in / W_out

    # Create normalized grid (i.e., in input pixel space)
    yy = ((Arange()(stop=H_out) + 0.5) * scale_y - 0.5).clamp(0, H_in - 1)
    xx = ((Arange()(stop=W_out) + 0.5) * scale_x - 0.5).clamp(0, W_in - 1)

    y0 = yy.floor().cast(Dtype.int64)
    x0 = xx.floor().cast(Dtype.int64)
    y1 = (y0 + 1).clamp(0, H_in - 1)
    x1 = (x0 + 1).clamp(0, W_in - 1)

    ly = (yy - y0.cast(Dtype.float32)).reshape((1, 1, H_out, 1))
    lx = (xx - x0.cast(Dtype.float32)).reshape((1, 1, 1, W_out))
    hy = 1.0 - ly
    hx = 1.0 - lx

    Ia = input[:, :, y0[:, None], x0]  # top-left
    Ib = input[:, :, y1[:, None], x0]  # bottom-left
    Ic = input[:, :, y0[:, None], x1]  # top-right
    Id = input[:, :, y1[:, None], x1]  # bottom-right

    wa = hy * hx
    wb = ly * hx
    wc = hy * lx
    wd = ly * lx
    out = Ia * wa + Ib * wb + Ic * wc + Id * wd

    return Model.create(name=name, output=out)


def segformer_mlp(decoder_hidden_size, *, name: str | None = None) -> Model:
    input = IOKey("input", type=Tensor[float])

    hidden_states = Flatten(start_dim=2)(input=input).transpose(axes=(0, 2, 1))
    hidden_states = Linear(decoder_hidden_size, name="proj")(input=hidden_states)
    return Model.create(name=name, output=hidden_states)


def segformer_decode_head(config, *, name: str | None = None) -> Model:
    hidden_states = IOKey(
        "input", value=tuple(Tensor() for _ in range(config.num_encoder_blocks))
    )

    hidden_shapes = [
        [1, 64, 128, 128],
        [1, 128, 64, 64],
        [1, 320, 32, 32],
        [1, 512, 16, 16],
    ]
    batch_size = hidden_states[0].shape[0]
    size = hidden_states[0].shape[2:]
    num_encoder_blocks = config.num_encoder_blocks
    all_hidden_states: list[Connection] = []

    for i in range(num_encoder_blocks):
        encoder_hidden_state: Connection = hidden_states[i]
        encoder_hidden_state.set_shapes(hidden_shapes[i])
        # Unify channel dimension.
        shape = encoder_hidden_state.shape
        height, width = shape[2], shape[3]
        encoder_hidden_state = segformer_mlp(
            config.decoder_hidden_size, name=f"linear_c_{i}"
        )(input=encoder_hidden_state)
        encoder_hidden_state = encoder_hidden_state.transpose(axes=(0, 2, 1))
        encoder_hidden_state = encoder_hidden_state.reshape(
            shape=(batch_size, -1, height, width)
        )
        # Upsample.
        encoder_hidden_state = segformer_bilinear_interpolate()(
            input=encoder_hidden_state, size=size
        )
        all_hidden_states.append(encoder_hidden_state)

    # Concatenate all hidden states.
    hidden_states = Concat(axis=1)(input=all_hidden_states[::-1])
    hidden_states = Convolution2D(
        out_channels=config.decoder_hidden_size,
        kernel_size=1,
        use_bias=False,
        name="linear_fuse",
    )(input=hidden_states)
    hidden_states = BatchNorm2D(config.decoder_hidden_size, name="batch_norm")(
        input=hidden_states
    )
    hidden_states = Relu()(input=hidden_states)
    hidden_states = Convolution2D(
        out_channels=config.num_labels,
        kernel_size=1,
        name="classifier",
    )(input=hidden_states)
    return Model.create(name=name, logits=hidden_states)


# segformer_semantic_segmentation.py --------------------------------------------


def segformer(config, *, name: str | None = None):
    pixel_values = IOKey("input", type=Tensor[float])
    last_hidden, encoder_hidden_states = segformer_encoder(config, name="encoder")(
        input=pixel_values
    )
    return Model.create(
        name=name, last_hidden_state=last_hidden, hidden_states=encoder_hidden_states
    )


def segformer_semantic_segmentation(config):
    pixel_values = IOKey("input", type=Tensor[float])
    last_hidden_state, hidden_states = segformer(config, name="segformer")(
        input=pixel_values
    )
    logits = segformer_decode_head(config, name="decode_head")(input=hidden_states)
    return Model.create(name="segformer_semantic_segmentation", logits=logits)
