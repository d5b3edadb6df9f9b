# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""MlirBackend(quantize="int8") (issue 19): dynamic int8 quantization of the
matrix products of weights (mithril-quantize-int8; weights per column in
symmetric int8, activations in unsigned 8 bits with a zero point), against a
numpy emulation of the same integer arithmetic, and its accuracy against
float32."""

import numpy as np
import pytest

import mithril as ml
from mithril.models import Linear, Model, Relu
from small_models import small_cnn


def mlp():
    model = Model()
    model |= Linear(64)(input="input", output="h")
    model |= Relu()(input="h", output="a")
    model |= Linear(10)(input="a", output="output")
    return model


def int8_product(x, w, bounds=None):
    """x @ w with w per column in symmetric int8 and x per tensor in unsigned
    8 bits with a zero point (as ONNX Runtime's dynamic quantization), as the
    compiled code computes it (float32 scales, exact integer sums). The
    activation's range is x's, or `bounds` (a calibrated range: values
    beyond it clamp)."""
    f32 = np.float32
    amax = np.abs(w).max(axis=0, keepdims=True)
    sw = (np.maximum(amax, f32(1e-30)) / f32(127)).astype(f32)
    # w times the inverse scale, as the compiled code quantizes.
    t = (w * (f32(1) / sw)).astype(f32)
    wq = (np.sign(t) * np.floor(np.abs(t) + f32(0.5))).astype(np.int64)
    lo, hi = (x.min(), x.max()) if bounds is None else (f32(bounds[0]), f32(bounds[1]))
    lo, hi = min(lo, f32(0)), max(hi, f32(0))
    sx = f32(max(f32(hi - lo), f32(1e-30)) / f32(255))
    zero = np.floor(f32(f32(-lo) / sx) + f32(0.5))
    # x times the inverse scale, as the compiled code quantizes.
    q = np.clip(np.floor((x * (f32(1) / sx)).astype(f32) + f32(0.5)) + zero, 0,
                255).astype(np.int64)
    assert q.min() >= 0 and q.max() <= 255
    return (((q - int(zero)) @ wq).astype(f32) * sx).astype(f32) * sw


def int8_mlp(params, x):
    """Two Linear layers with a ReLU between, as int8_product computes them."""
    h = np.maximum(int8_product(x, params["linear_0.weight"].T) + params["linear_0.bias"], 0)
    return int8_product(h.astype(np.float32), params["linear_1.weight"].T) \
        + params["linear_1.bias"]


def test_int8_linear_layers_match_the_integer_arithmetic():
    pm = ml.compile(mlp(), ml.MlirBackend(quantize="int8"), shapes={"input": [32, 128]})
    params = pm.randomize_params(seed=0)
    x = np.random.default_rng(1).standard_normal((32, 128)).astype(np.float32)
    got = pm.evaluate(params, {"input": x})["output"]
    want = int8_mlp(params, x)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    # Against float32: int8's error, a few percent of the output's RMS, not
    # float32's (the option does something).
    exact = ml.compile(mlp(), ml.MlirBackend(), shapes={"input": [32, 128]})
    ref = exact.evaluate(params, {"input": x})["output"]
    err = np.abs(got - ref).max() / np.sqrt(np.mean(ref ** 2))
    assert 1e-3 < err < 0.1, err


def test_weights_compiled_in_are_quantized_when_compiling():
    """constant_keys with the parameters (by path): the same int8 numbers as
    weights passed at each call (levels and scales computed the same way),
    not float32's."""
    args = ml.compile(mlp(), ml.MlirBackend(quantize="int8"), shapes={"input": [32, 128]})
    params = args.randomize_params(seed=0)
    x = np.random.default_rng(1).standard_normal((32, 128)).astype(np.float32)
    compiled_in = ml.compile(mlp(), ml.MlirBackend(quantize="int8"), shapes={"input": [32, 128]},
                             constant_keys=params, inference=True)
    assert compiled_in.input_keys == ["input"]
    got = compiled_in.evaluate({}, {"input": x})["output"]
    np.testing.assert_allclose(got, int8_mlp(params, x), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got, args.evaluate(params, {"input": x})["output"], rtol=1e-6,
                               atol=1e-7)
    # In float32 the compiled-in weights give float32's numbers.
    f32 = ml.compile(mlp(), ml.MlirBackend(), shapes={"input": [32, 128]}, constant_keys=params)
    ref = ml.compile(mlp(), ml.MlirBackend(), shapes={"input": [32, 128]})
    np.testing.assert_allclose(f32.evaluate({}, {"input": x})["output"],
                               ref.evaluate(params, {"input": x})["output"], rtol=1e-5,
                               atol=1e-6)
    with pytest.raises(ml.errors.KeyNotFoundError, match=r"\['linear_7.weight'\] name no "):
        ml.compile(mlp(), ml.MlirBackend(), shapes={"input": [32, 128]},
                   constant_keys={"linear_7.weight": params["linear_0.weight"]})


def test_int8_is_for_inference():
    pm = ml.compile(mlp(), ml.MlirBackend(quantize="int8"), shapes={"input": [4, 128]})
    params = pm.randomize_params(seed=0)
    with pytest.raises(ml.MithrilError, match="quantized.*for inference"):
        pm.evaluate(params, {"input": np.ones((4, 128), np.float32)}, output_gradients=True)
    with pytest.raises(ValueError, match="quantize must be 'int8'"):
        ml.MlirBackend(quantize="int4")
    assert repr(ml.MlirBackend(quantize="int8")) == \
        "MlirBackend(dtype=float32, device='cpu', quantize='int8')"


def test_all_zero_activations_give_zero():
    # max|x| = 0 would divide by zero: the scale has a floor.
    pm = ml.compile(mlp(), ml.MlirBackend(quantize="int8"), shapes={"input": [2, 128]})
    params = pm.randomize_params(seed=0)
    got = pm.evaluate(params, {"input": np.zeros((2, 128), np.float32)})["output"]
    want = int8_product(np.maximum(params["linear_0.bias"], 0)[None].repeat(2, 0),
                        params["linear_1.weight"].T) + params["linear_1.bias"]
    assert np.all(np.isfinite(got))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("target_cpu", ["host", "haswell"])
@pytest.mark.parametrize("batch, inputs, hidden, threads", [
    (64, 1024, 512, None),  # two cache blocks of columns, one of the reduction
    (32, 256, 64, 1),    # one block: still packed for the dot products
    (64, 784, 96, 2),    # rows split across threads, a reduction of 196 quads
    (256, 784, 512, 1),  # the bench MLP's first layer
    (32, 2048, 64, 1),   # two reduction blocks: the offset's sums per block
])
@pytest.mark.parametrize("compiled_in", [False, True])
def test_int8_blocked_products_are_exact(target_cpu, batch, inputs, hidden, threads, compiled_in):
    # Products large enough for the packed, cache-blocked schedule: with
    # AVX512-VNNI the register tiles are vpdpbusd dot products of bytes
    # offset to unsigned, the offset's products subtracted per block; without
    # it (haswell) 32-bit integer products. Both are the exact integer sums.
    # Weights compiled in are packed, with their column sums, when compiling.
    model = Model()
    model |= Linear(hidden)(input="input", output="h")
    model |= Relu()(input="h", output="a")
    model |= Linear(96)(input="a", output="output")
    backend = ml.MlirBackend(quantize="int8", num_threads=threads)
    try:
        pm = ml.compile(model, backend, shapes={"input": [batch, inputs]},
                        cpu_options={"target_cpu": target_cpu})
    except ml.MithrilError as error:  # a host without AVX2
        pytest.skip(str(error))
    params = pm.randomize_params(seed=4)
    if compiled_in:
        pm = ml.compile(model, backend, shapes={"input": [batch, inputs]},
                        cpu_options={"target_cpu": target_cpu}, constant_keys=params,
                        inference=True)
    x = np.random.default_rng(2).standard_normal((batch, inputs)).astype(np.float32)
    got = pm.evaluate({} if compiled_in else params, {"input": x})["output"]
    want = int8_mlp(params, x)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("target_cpu", ["host", "haswell"])
@pytest.mark.parametrize("batch", [1, 5, 16])
@pytest.mark.parametrize("compiled_in", [True, False])
def test_int8_matrix_vector_products_are_exact(target_cpu, batch, compiled_in):
    # A few rows: with AVX512-VNNI a matrix-vector kernel on vpdpbusd (the
    # weight offset to unsigned, each row's sum of A subtracted; 784 and 200
    # padded to whole groups of 64), without it the blocked product. Both are
    # the exact integer sums. Weights compiled in are quantized when
    # compiling; weights passed each call are quantized in their own [out,
    # in] layout, whose rows the kernel reads.
    model = Model()
    model |= Linear(200)(input="input", output="h")
    model |= Relu()(input="h", output="a")
    model |= Linear(10)(input="a", output="output")
    try:
        args = ml.compile(model, ml.MlirBackend(quantize="int8"), shapes={"input": [batch, 784]},
                          cpu_options={"target_cpu": target_cpu})
    except ml.MithrilError as error:  # a host without AVX2
        pytest.skip(str(error))
    params = args.randomize_params(seed=5)
    x = np.random.default_rng(3).standard_normal((batch, 784)).astype(np.float32)
    if compiled_in:
        pm = ml.compile(model, ml.MlirBackend(quantize="int8"), shapes={"input": [batch, 784]},
                        cpu_options={"target_cpu": target_cpu}, constant_keys=params,
                        inference=True)
        got = pm.evaluate({}, {"input": x})["output"]
    else:
        got = args.evaluate(params, {"input": x})["output"]
    np.testing.assert_allclose(got, int8_mlp(params, x), rtol=1e-5, atol=1e-5)


def test_calibration_data_fixes_the_activation_ranges():
    # Static quantization: the range, so the scale and zero point, of each
    # product's activation comes from the calibration inputs (the smallest
    # and largest value each product saw), not from each call's data; values
    # beyond the calibrated range are clamped.
    backend = ml.MlirBackend(quantize="int8")
    probe = ml.compile(mlp(), backend, shapes={"input": [32, 128]})
    params = probe.randomize_params(seed=0)
    rng = np.random.default_rng(1)
    batches = [rng.standard_normal((32, 128)).astype(np.float32) for _ in range(3)]
    pm = ml.compile(mlp(), backend, shapes={"input": [32, 128]},
                    calibration_data=[{**params, "input": x} for x in batches])

    def static_product(x, w, bounds):
        return int8_product(x, w, bounds)

    # The activation ranges the calibration saw, in float32 arithmetic.
    range0 = (min(x.min() for x in batches), max(x.max() for x in batches))
    # (The calibration run computes in float32: the second product's
    # activation is the first layer's float32 output, a ReLU's: lo is 0 and
    # its 255 steps cover [0, hi].)
    hidden = [np.maximum(x @ params["linear_0.weight"].T + params["linear_0.bias"], 0)
              for x in batches]
    range1 = (min(h.min() for h in hidden), max(h.max() for h in hidden))
    assert range1[0] == 0

    # A new input twice as large: its values beyond the calibrated range clamp.
    x = 2 * rng.standard_normal((32, 128)).astype(np.float32)
    got = pm.evaluate(params, {"input": x})["output"]
    h = np.maximum(static_product(x, params["linear_0.weight"].T, range0)
                   + params["linear_0.bias"], 0)
    want = static_product(h.astype(np.float32), params["linear_1.weight"].T, range1) \
        + params["linear_1.bias"]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    # Not the dynamic scales: those would follow this input's larger range.
    dynamic = probe.evaluate(params, {"input": x})["output"]
    assert np.abs(dynamic - got).max() > 1e-2

    # Errors say what is wrong.
    with pytest.raises(ValueError, match="quantize='int8'"):
        ml.compile(mlp(), ml.MlirBackend(), shapes={"input": [32, 128]},
                   calibration_data=[{**params, "input": batches[0]}])
    with pytest.raises(ml.KeyNotFoundError, match="lacks input.*linear_0.weight"):
        ml.compile(mlp(), backend, shapes={"input": [32, 128]},
                   calibration_data=[{"input": batches[0]}])
    # (params, data) pairs work as dicts do.
    pairs = ml.compile(mlp(), backend, shapes={"input": [32, 128]},
                       calibration_data=[(params, {"input": b}) for b in batches])
    np.testing.assert_array_equal(pairs.evaluate(params, {"input": x})["output"], got)


@pytest.mark.parametrize("target_cpu", ["host", "haswell"])
@pytest.mark.parametrize("shape, outputs", [
    ((33, 30), 100),     # no dimension a multiple of a tile or of a quad
    ((64, 1030), 40),    # a reduction just over a block
    ((4, 16, 128), 64),  # a batch of sequences
])
@pytest.mark.parametrize("compiled_in", [False, True])
def test_int8_odd_shapes_are_exact(target_cpu, shape, outputs, compiled_in):
    model = Model()
    model |= Linear(outputs)(input="input", output="output")
    backend = ml.MlirBackend(quantize="int8")
    try:
        pm = ml.compile(model, backend, shapes={"input": list(shape)},
                        cpu_options={"target_cpu": target_cpu})
    except ml.MithrilError as error:  # a host without AVX2
        pytest.skip(str(error))
    params = pm.randomize_params(seed=3)
    if compiled_in:
        pm = ml.compile(model, backend, shapes={"input": list(shape)},
                        cpu_options={"target_cpu": target_cpu}, constant_keys=params,
                        inference=True)
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    got = pm.evaluate({} if compiled_in else params, {"input": x})["output"]
    flat = x.reshape(-1, shape[-1])
    want = int8_product(flat, params["linear_0.weight"].T) + params["linear_0.bias"]
    np.testing.assert_allclose(got, want.reshape(*shape[:-1], outputs), rtol=1e-5, atol=1e-5)


def conv_windows(x, kh, kw, stride=(1, 1), padding=(0, 0, 0, 0), dilation=(1, 1)):
    """The windows of a 2-D convolution over x [N, C, H, W], zero-padded:
    [N, OH, OW, C, KH, KW]."""
    n, c = x.shape[:2]
    xp = np.pad(x, ((0, 0), (0, 0), padding[:2], padding[2:]))
    oh = (xp.shape[2] - dilation[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (xp.shape[3] - dilation[1] * (kw - 1) - 1) // stride[1] + 1
    windows = np.empty((n, oh, ow, c, kh, kw), x.dtype)
    for i in range(kh):
        for j in range(kw):
            r, s = i * dilation[0], j * dilation[1]
            tap = xp[:, :, r:r + (oh - 1) * stride[0] + 1:stride[0],
                     s:s + (ow - 1) * stride[1] + 1:stride[1]]
            windows[..., i, j] = tap.transpose(0, 2, 3, 1)
    return windows


def int8_conv(x, w, b=None, stride=(1, 1), padding=(0, 0, 0, 0), dilation=(1, 1), bounds=None):
    """A 2-D convolution as the int8 product of its windows (im2col), as the
    compiled code computes it: the input zero-padded first (the padding takes
    the zero point's level, as zeros do), each window a row, the weight
    [F, C, KH, KW] a [C KH KW, F] matrix quantized per output channel."""
    f, _, kh, kw = w.shape
    windows = conv_windows(x, kh, kw, stride, padding, dilation)
    n, oh, ow = windows.shape[:3]
    y = int8_product(windows.reshape(n * oh * ow, -1), w.reshape(f, -1).T, bounds)
    y = y.reshape(n, oh, ow, f).transpose(0, 3, 1, 2)
    return y if b is None else y + b.reshape(1, f, 1, 1)


@pytest.mark.parametrize("target_cpu", ["host", "haswell"])
@pytest.mark.parametrize("kernel, stride, padding, dilation, channels, use_bias", [
    (3, 1, 1, 1, (4, 8), True),    # the common 3 x 3, padded to the same size
    (3, 2, 1, 1, (4, 16), True),   # strided
    (3, 1, 2, 2, (5, 5), False),   # dilated, no bias
    (1, 1, 0, 1, (32, 64), True),  # 1 x 1: a product over channels
    ((2, 5), (2, 1), ((0, 1), (2, 0)), 1, (6, 7), True),  # uneven kernel and padding
])
@pytest.mark.parametrize("compiled_in", [False, True])
def test_int8_convolutions_match_the_integer_arithmetic(target_cpu, kernel, stride, padding,
                                                        dilation, channels, use_bias,
                                                        compiled_in):
    from mithril.models import Convolution2D
    c, f = channels
    model = Model()
    model |= Convolution2D(kernel_size=kernel, out_channels=f, stride=stride, padding=padding,
                           dilation=dilation, use_bias=use_bias)(input="input", output="output")
    shape = [2, c, 11, 12]
    backend = ml.MlirBackend(quantize="int8")
    try:
        pm = ml.compile(model, backend, shapes={"input": shape},
                        cpu_options={"target_cpu": target_cpu})
    except ml.MithrilError as error:  # a host without AVX2
        pytest.skip(str(error))
    params = pm.randomize_params(seed=6)
    if compiled_in:
        pm = ml.compile(model, backend, shapes={"input": shape},
                        cpu_options={"target_cpu": target_cpu}, constant_keys=params,
                        inference=True)
    x = np.random.default_rng(7).standard_normal(shape).astype(np.float32)
    got = pm.evaluate({} if compiled_in else params, {"input": x})["output"]

    def pair(v):
        return tuple(v) if isinstance(v, tuple) else (v, v)

    pads = pair(padding)
    pads = sum((pair(p) for p in pads), ())
    want = int8_conv(x, params["convolution2d_0.weight"], params.get("convolution2d_0.bias"),
                     pair(stride), pads, pair(dilation))
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    # Against float32: int8's error, not float32's.
    ref = ml.compile(model, ml.MlirBackend(), shapes={"input": shape}).evaluate(
        params, {"input": x})["output"]
    err = np.abs(got - ref).max() / np.sqrt(np.mean(ref ** 2))
    assert 1e-3 < err < 0.1, err


@pytest.mark.parametrize("stride, padding, dilation", [(1, 2, 1), (2, 0, 1), (1, 3, 2)])
@pytest.mark.parametrize("compiled_in", [False, True])
def test_int8_1d_convolutions_match_the_integer_arithmetic(stride, padding, dilation,
                                                           compiled_in):
    # A 1-D convolution is the 2-D one of height 1.
    from mithril.models import Convolution1D
    model = Model()
    model |= Convolution1D(kernel_size=5, out_channels=12, stride=stride, padding=padding,
                           dilation=dilation)(input="input", output="output")
    shape = [3, 8, 30]
    backend = ml.MlirBackend(quantize="int8")
    pm = ml.compile(model, backend, shapes={"input": shape})
    params = pm.randomize_params(seed=11)
    if compiled_in:
        pm = ml.compile(model, backend, shapes={"input": shape}, constant_keys=params,
                        inference=True)
    x = np.random.default_rng(12).standard_normal(shape).astype(np.float32)
    got = pm.evaluate({} if compiled_in else params, {"input": x})["output"]
    want = int8_conv(x[:, :, None, :], params["convolution1d_0.weight"][:, :, None, :],
                     params["convolution1d_0.bias"], (1, stride), (0, 0, padding, padding),
                     (1, dilation))[:, :, 0, :]
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("layer", ["linear", "conv"])
def test_int8_dynamic_batch(layer):
    # Compiled once for any batch (shapes with None): the widened operands
    # and the windows take the batch's size at run time.
    from mithril.models import Convolution2D
    model = Model()
    if layer == "linear":
        model |= Linear(8)(input="input", output="output")
        shape = [40]
    else:
        model |= Convolution2D(kernel_size=3, out_channels=8, padding=1)(input="input",
                                                                         output="output")
        shape = [4, 9, 10]
    pm = ml.compile(model, ml.MlirBackend(quantize="int8"), shapes={"input": [None] + shape})
    params = pm.randomize_params(seed=13)
    for batch in (1, 5):
        x = np.random.default_rng(batch).standard_normal([batch] + shape).astype(np.float32)
        got = pm.evaluate(params, {"input": x})["output"]
        if layer == "linear":
            want = int8_product(x, params["linear_0.weight"].T) + params["linear_0.bias"]
        else:
            want = int8_conv(x, params["convolution2d_0.weight"], params["convolution2d_0.bias"],
                             padding=(1, 1, 1, 1))
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def pool2(v):
    n, c, h, w = v.shape
    return v.reshape(n, c, h // 2, 2, w // 2, 2).max(axis=(3, 5))


def conv3x3(v, w, b):
    """A float32 3 x 3 convolution with padding 1."""
    windows = conv_windows(v, 3, 3, padding=(1, 1, 1, 1))
    y = np.einsum("nhwcij,fcij->nfhw", windows, w, dtype=np.float64)
    return (y + b.reshape(1, -1, 1, 1)).astype(np.float32)


def int8_cnn(params, x, bounds=(None, None)):
    """small_cnn(10) as int8 computes it: the first convolution (a window of 9
    inputs, too short to quantize) in float32, the second convolution and
    the product in int8."""
    h = pool2(np.maximum(conv3x3(x, params["convolution2d_0.weight"],
                                 params["convolution2d_0.bias"]), 0))
    h = pool2(np.maximum(int8_conv(h, params["convolution2d_1.weight"],
                                   params["convolution2d_1.bias"], padding=(1, 1, 1, 1),
                                   bounds=bounds[0]), 0))
    return int8_product(h.reshape(len(h), -1).astype(np.float32),
                        params["linear_0.weight"].T, bounds[1]) + params["linear_0.bias"]


@pytest.mark.parametrize("threads", [1, 2])
def test_int8_cnn_quantizes_convolutions_and_products(threads):
    backend = ml.MlirBackend(quantize="int8", num_threads=threads)
    pm = ml.compile(small_cnn(10), backend, shapes={"input": [4, 1, 12, 12]})
    params = pm.randomize_params(seed=8)
    x = np.random.default_rng(9).standard_normal((4, 1, 12, 12)).astype(np.float32)
    got = pm.evaluate(params, {"input": x})["output"]
    np.testing.assert_allclose(got, int8_cnn(params, x), rtol=1e-5, atol=1e-5)
    ref = ml.compile(small_cnn(10), ml.MlirBackend(), shapes={"input": [4, 1, 12, 12]}).evaluate(
        params, {"input": x})["output"]
    err = np.abs(got - ref).max() / np.sqrt(np.mean(ref ** 2))
    assert 1e-3 < err < 0.1, err


def test_calibration_covers_convolutions():
    # Two quantized ops, two calibrated ranges, in program order: the second
    # convolution's input (a pooled ReLU's: lo = 0) and the product's.
    backend = ml.MlirBackend(quantize="int8")
    probe = ml.compile(small_cnn(10), backend, shapes={"input": [4, 1, 12, 12]})
    params = probe.randomize_params(seed=8)
    rng = np.random.default_rng(10)
    batches = [rng.standard_normal((4, 1, 12, 12)).astype(np.float32) for _ in range(2)]
    pm = ml.compile(small_cnn(10), backend, shapes={"input": [4, 1, 12, 12]},
                    calibration_data=[{**params, "input": b} for b in batches])
    a1 = [pool2(np.maximum(conv3x3(b, params["convolution2d_0.weight"],
                                   params["convolution2d_0.bias"]), 0)) for b in batches]
    a2 = [pool2(np.maximum(conv3x3(a, params["convolution2d_1.weight"],
                                   params["convolution2d_1.bias"]), 0)).reshape(4, -1)
          for a in a1]
    ranges = [(min(v.min() for v in vs), max(v.max() for v in vs)) for vs in (a1, a2)]
    assert ranges[0][0] == 0
    x = 2 * rng.standard_normal((4, 1, 12, 12)).astype(np.float32)
    got = pm.evaluate(params, {"input": x})["output"]
    # The calibration run's ranges are numpy's to float32 rounding: the
    # emulation with numpy's ranges agrees to that; the dynamic ranges differ.
    np.testing.assert_allclose(got, int8_cnn(params, x, ranges), rtol=1e-3, atol=1e-3)
    assert np.abs(probe.evaluate(params, {"input": x})["output"] - got).max() > 1e-2
