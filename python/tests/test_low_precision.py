# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""float16 and bfloat16 (issue 19): stored as such, computed in float32 with
each op's result rounded once (mithril-widen-low-precision), against numpy's
float16 arithmetic, bit-exact rounding, and torch in float64 with tolerances
scaled by the reference's RMS."""

import numpy as np
import pytest
import torch

import mithril as ml
from mithril.models import (Add, Convolution2D, Linear, MaxPool2D, Mean, Model, Multiply, Relu,
                            SquaredError, Sum, Tanh, TrainModel)
from mithril.types import from_bfloat16_bits, to_bfloat16_bits
from small_models import small_cnn


def bf16(values):
    """values rounded to bfloat16, as float32."""
    return from_bfloat16_bits(to_bfloat16_bits(values)).astype(np.float32)


def mlp():
    model = Model()
    model |= Linear(16)(input="input", output="h")
    model |= Tanh()(input="h", output="a")
    model |= Linear(4)(input="a", output="output")
    return model


def close(got, ref, rel):
    """|got - ref| within rel times the RMS of ref (elementwise)."""
    got = np.asarray(got, dtype=np.float64)
    scale = np.sqrt(np.mean(np.square(ref))) + 1e-30
    assert got.shape == ref.shape
    err = np.max(np.abs(got - ref)) / scale
    assert err <= rel, f"max error {err:.3g} x rms(ref) > {rel}"


def torch_mlp(params, x):
    t = {k: torch.tensor(np.asarray(v, dtype=np.float64), requires_grad=True)
         for k, v in params.items()}
    h = torch.tanh(torch.tensor(np.asarray(x, np.float64)) @ t["linear_0.weight"].T
                   + t["linear_0.bias"])
    out = h @ t["linear_1.weight"].T + t["linear_1.bias"]
    out.sum().backward()
    return out.detach().numpy(), {k: v.grad.numpy() for k, v in t.items()}


@pytest.mark.parametrize("dtype,rel", [(ml.float16, 5e-3), (ml.bfloat16, 4e-2)])
def test_mlp_outputs_and_gradients_against_torch(dtype, rel):
    backend = ml.MlirBackend(dtype=dtype)
    pm = ml.compile(mlp(), backend, shapes={"input": [8, 32]})
    params = pm.randomize_params(seed=3)
    x = np.random.default_rng(0).standard_normal((8, 32))
    outputs, grads = pm.evaluate(params, {"input": x}, output_gradients=True)
    # The reference runs in float64 on the same (already rounded) values.
    stored_x = x.astype(np.float16) if dtype is ml.float16 else bf16(x)
    want, want_grads = torch_mlp(params, stored_x)
    close(outputs["output"], want, rel)
    for k in params:
        close(grads[k], want_grads[k], rel)
    # What comes back: float16 arrays, and bfloat16 values as float32 (numpy
    # has no bfloat16) that are exactly bfloat16.
    if dtype is ml.float16:
        assert outputs["output"].dtype == np.float16 and grads["linear_0.weight"].dtype == np.float16
        assert pm.get_types()["input"] is np.float16
    else:
        out = outputs["output"]
        assert out.dtype == backend.dtype  # float32, or ml_dtypes.bfloat16 where installed
        np.testing.assert_array_equal(bf16(out), out)


def test_float16_rounds_once_per_op_like_numpy():
    # numpy's float16 arithmetic computes in float32 and rounds each result:
    # the semantics the widening gives, so the numbers are bit-identical.
    model = Model()
    model |= Multiply()(left="a", right="b", output="p")
    model |= Add()(left="p", right="c", output="output")
    rng = np.random.default_rng(1)
    a, b, c = (rng.standard_normal(257).astype(np.float16) for _ in range(3))
    pm = ml.compile(model, ml.MlirBackend(dtype=ml.float16), shapes={k: [257] for k in "abc"})
    got = pm.evaluate({}, {"a": a, "b": b, "c": c})["output"]
    np.testing.assert_array_equal(got, a * b + c)


def test_bfloat16_rounds_to_nearest_even():
    model = Model()
    model |= Multiply()(left="a", right="b", output="output")
    rng = np.random.default_rng(2)
    a, b = bf16(rng.standard_normal(1000)), bf16(rng.standard_normal(1000))
    # Ties and specials: 1 + 2^-8 is halfway between two bfloat16 numbers.
    a[:4] = [1.0, np.inf, np.nan, -0.0]
    b[:4] = [1.0 + 2.0**-8, 1.0, 1.0, 1.0]
    pm = ml.compile(model, ml.MlirBackend(dtype=ml.bfloat16), shapes={"a": [1000], "b": [1000]})
    got = pm.evaluate({}, {"a": a, "b": b})["output"]
    want = bf16(a.astype(np.float32) * b.astype(np.float32))
    np.testing.assert_array_equal(got, want)
    assert got[0] == 1.0  # the tie rounds to even


@pytest.mark.parametrize("dtype", [ml.float16, ml.bfloat16])
def test_sums_accumulate_in_float32(dtype):
    # 4096 ones: a float16 accumulator stops at 2048, a bfloat16 one at 256.
    model = Model()
    model |= Sum()(input="input", output="output")
    pm = ml.compile(model, ml.MlirBackend(dtype=dtype), shapes={"input": [4096]})
    got = pm.evaluate({}, {"input": np.ones(4096)})["output"]
    assert float(got) == 4096.0


def test_low_precision_ir_and_dtypes():
    pm = ml.compile(mlp(), ml.MlirBackend(dtype=ml.bfloat16), shapes={"input": [2, 3]})
    assert "bf16" in pm.ir
    assert ml.MlirBackend(dtype=ml.float16).dtype == np.float16
    assert repr(ml.MlirBackend(dtype="bfloat16")) == "MlirBackend(dtype=bfloat16, device='cpu')"
    with pytest.raises(ValueError, match="float32, float64, float16 or bfloat16"):
        ml.MlirBackend(dtype=np.int32)



def test_types_float16_input_of_a_float32_model():
    # The documents' types={"input": ml.float16}: the input is stored and
    # passed in float16 and converted where it enters; the model computes in
    # float32.
    pm = ml.compile(mlp(), ml.MlirBackend(), shapes={"input": [8, 32]},
                    types={"input": ml.float16})
    assert pm.get_types()["input"] is np.float16 and pm.get_types()["output"] is np.float32
    params = pm.randomize_params(seed=0)
    x = np.random.default_rng(5).standard_normal((8, 32))
    out = pm.evaluate(params, {"input": x})["output"]
    want, _ = torch_mlp(params, x.astype(np.float16))
    close(out, want, 1e-5)
    with pytest.raises(ml.KeyNotFoundError, match="types: 'nope' is not an input"):
        ml.compile(mlp(), ml.MlirBackend(), shapes={"input": [8, 32]}, types={"nope": ml.float16})
    with pytest.raises(ValueError, match="uint8 is not supported"):
        ml.compile(mlp(), ml.MlirBackend(), shapes={"input": [8, 32]}, types={"input": ml.uint8})
    # An integer input is stored as such: a matrix product with float weights
    # says which op meets the two types.
    with pytest.raises(ml.MithrilError, match="'mithril.matmul' operands have different element "
                                              "types: 'i16' and 'f32'"):
        ml.compile(mlp(), ml.MlirBackend(), shapes={"input": [8, 32]}, types={"input": ml.int16})


def test_mixed_precision_keeps_float32_terminals():
    # precision="bfloat16" with mixed_precision=True (the documents' form):
    # float32 parameters and data in and out, bf16 between the ops.
    backend = ml.MlirBackend(precision="bfloat16")
    pm = ml.compile(mlp(), backend, shapes={"input": [8, 32]}, mixed_precision=True)
    assert "bf16" in pm.ir and "cast" in pm.ir
    assert set(pm.get_types().values()) == {np.float32}
    params = pm.randomize_params(seed=3)
    x = np.random.default_rng(0).standard_normal((8, 32)).astype(np.float32)
    outputs, grads = pm.evaluate(params, {"input": x}, output_gradients=True)
    want, want_grads = torch_mlp(params, bf16(x))
    close(outputs["output"], want, 4e-2)
    for k in params:
        assert grads[k].dtype == np.float32  # the master weights' type
        close(grads[k], want_grads[k], 4e-2)
    # The option does something: float32 throughout gives other numbers.
    full = ml.compile(mlp(), ml.MlirBackend(), shapes={"input": [8, 32]})
    exact = full.evaluate(params, {"input": x})["output"]
    assert np.max(np.abs(exact - outputs["output"])) > 1e-4
    close(exact, want, 4e-2)


def test_mixed_precision_trains_float32_master_weights():
    from mithril.models import SquaredError, TrainModel
    model = Model()
    model |= Linear(1)(input="input", output="output")
    train = TrainModel(model)
    train.add_loss(SquaredError(), input="output", target="target", reduce_steps=[ml.models.Mean()])
    pm = ml.compile(train, ml.MlirBackend(), shapes={"input": [64, 3], "target": [64, 1]},
                    mixed_precision="float16")
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 3)).astype(np.float32)
    y = x @ np.array([[1.5], [-2.0], [0.5]], np.float32) + 0.25
    params = pm.randomize_params(seed=0)
    opt = ml.SGD(lr=0.1)
    losses = [float(pm.train_step(params, {"input": x, "target": y}, opt)["final_cost"])
              for _ in range(60)]
    assert params["linear_0.weight"].dtype == np.float32
    assert losses[-1] < 1e-2 * losses[0]


def test_bfloat16_models_with_constants():
    # Models built with constants (a softmax's, a loss's reduction) in a
    # bfloat16 backend: built in float32, converted by mithril-mixed-precision.
    from mithril.models import Mean, Softmax
    model = Model()
    model |= Softmax()(input="input", output="p")
    model |= Mean()(input="p", output="output")
    pm = ml.compile(model, ml.MlirBackend(dtype=ml.bfloat16), shapes={"input": [4, 5]})
    x = np.random.default_rng(1).standard_normal((4, 5))
    got = pm.evaluate({}, {"input": x})["output"]
    assert abs(float(got) - 0.2) <= 2e-3


def test_mixed_precision_errors():
    with pytest.raises(ValueError, match="precision must be bfloat16 or float16"):
        ml.MlirBackend(precision="int8")
    with pytest.raises(ValueError, match="needs a float32 backend"):
        ml.compile(mlp(), ml.MlirBackend(dtype=ml.float64), shapes={"input": [2, 3]},
                   mixed_precision=True)
    with pytest.raises(ValueError, match=r"mixed_precision \(True, False or a type\) must be"):
        ml.compile(mlp(), ml.MlirBackend(), shapes={"input": [2, 3]}, mixed_precision="int8")


@pytest.mark.parametrize("dtype", [ml.float16, ml.bfloat16])
def test_low_precision_parameters_train_in_place(dtype):
    from mithril.models import SquaredError, TrainModel
    model = Model()
    model |= Linear(1)(input="input", output="output")
    train = TrainModel(model)
    train.add_loss(SquaredError(), input="output", target="target", reduce_steps=[ml.models.Mean()])
    pm = ml.compile(train, ml.MlirBackend(dtype=dtype), shapes={"input": [64, 3], "target": [64, 1]})
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 3))
    y = x @ np.array([[1.5], [-2.0], [0.5]]) + 0.25
    params = pm.randomize_params(seed=0)
    opt = ml.Adam(lr=0.05)
    losses = [float(pm.train_step(params, {"input": x, "target": y}, opt)["final_cost"])
              for _ in range(150)]
    # The weights stay in the backend's type (float32 arrays of bf16 values
    # for bfloat16) and approach the truth within its precision.
    w = params["linear_0.weight"]
    assert w.dtype == ml.MlirBackend(dtype=dtype).dtype
    if dtype is ml.bfloat16:
        np.testing.assert_array_equal(bf16(w), w)
    np.testing.assert_allclose(w.astype(np.float64), [[1.5, -2.0, 0.5]], atol=0.1)
    assert losses[-1] < 1e-2 * losses[0]


def test_bfloat16_conversion_matches_the_reference_rounding():
    # The extension's branch-free loop against round-to-nearest-even written
    # out in numpy (ties, NaN, infinities, subnormals, the largest finite).
    from mithril import _mithril
    rng = np.random.default_rng(7)
    x = np.concatenate([rng.standard_normal(10000).astype(np.float32) * 1e3,
                        np.array([1 + 2**-8, 1 + 3 * 2**-8, np.nan, -np.nan, np.inf, -np.inf,
                                  1e-40, -1e-45, 0.0, -0.0, np.finfo(np.float32).max],
                                 np.float32)])
    bits = x.view(np.uint32).astype(np.uint64)
    want = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    nan = np.isnan(x)
    want[nan] = ((bits[nan] >> 16) | 0x40).astype(np.uint16)
    np.testing.assert_array_equal(_mithril.to_bfloat16_bits(x), want)
    assert _mithril.to_bfloat16_bits(np.float32(2.5)).shape == ()


def _bf16_products():
    """A plain product and a Linear layer's (its weight transposed), large
    enough for the packed schedule (and for vdpbf16ps or AMX tiles where the
    CPU has them)."""
    from mithril.models import MatrixMultiply
    model = Model()
    model |= MatrixMultiply()(left="a", right="b", output=ml.IOKey("y"))
    model |= Linear(128, use_bias=False)(input="a", output=ml.IOKey("z"))
    return model


@pytest.mark.parametrize("target_cpu", ["host", "haswell"])
@pytest.mark.parametrize("rows, depth", [
    (48, 512),  # AMX: tiles of 16 rows
    (64, 784),  # AMX: 768 steps on tiles, the last 16 padded to a whole step
    (40, 200),  # AMX: rows and reduction of no whole tiles, all on vdpbf16ps
    (32, 1024),  # AMX: rows 2 KiB apart, copied with a padded stride
])
def test_bfloat16_matmul_accumulates_in_float32(target_cpu, rows, depth):
    # Inputs exact in bfloat16: the products are exact in float32 and the sums
    # accumulate in float32, so each output is the float64 product rounded once
    # to bfloat16 (half an ulp: at most 2^-8 relative) up to float32 rounding of the
    # sums. A bf16 accumulator would be off by about 1e-2 of the RMS. The
    # host's kernel (AMX tiles, or vdpbf16ps with AVX512-BF16) and the AVX2
    # kernel (operands widened when packed) are held to the same bound.
    rng = np.random.default_rng(5)
    a = bf16(rng.standard_normal((rows, depth)))
    b = bf16(rng.standard_normal((depth, 512)))
    w = bf16(rng.standard_normal((128, depth)))
    options = {"cpu_options": {"target_cpu": target_cpu}}
    try:
        pm = ml.compile(_bf16_products(), ml.MlirBackend(dtype=ml.bfloat16),
                        shapes={"a": [rows, depth], "b": [depth, 512]}, jit=True, **options)
    except ml.MithrilError as error:  # a host without AVX2
        pytest.skip(str(error))
    out = pm.evaluate({"linear_0.weight": w} if "linear_0.weight" in pm.input_keys else
                      {"weight": w}, {"a": a, "b": b})
    for name, ref in [("y", a.astype(np.float64) @ b), ("z", a.astype(np.float64) @ w.T)]:
        got = np.asarray(out[name], np.float64)
        rms = np.sqrt(np.mean(ref ** 2))
        err = np.abs(got - ref) - 2.0 ** -8 * np.abs(ref)
        assert np.max(err) <= 1e-5 * rms, f"{name}: {np.max(err) / rms:.3g} x rms"


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("compiled_in", [False, True])
@pytest.mark.parametrize("rows, depth, outputs", [
    (256, 512, 10),  # AMX: one tile of 16 columns, the weight padded with zero rows
    (64, 784, 10),  # ... and the reduction's last 16 steps padded too
    (48, 512, 4),  # the narrowest layer padded to a tile
    (48, 512, 3),  # lane sums of vdpbf16ps
])
def test_bfloat16_narrow_linear_accumulates_in_float32(threads, compiled_in, rows, depth,
                                                       outputs):
    # A last layer of few outputs (the 10 classes of an MLP), with its bias,
    # passed or compiled in.
    rng = np.random.default_rng(7)
    x = bf16(rng.standard_normal((rows, depth)))
    params = {"weight": bf16(rng.standard_normal((outputs, depth))),
              "bias": bf16(rng.standard_normal(outputs))}
    model = Model()
    model |= Linear(outputs)(input="x", weight="weight", bias="bias", output=ml.IOKey("y"))
    pm = ml.compile(model, ml.MlirBackend(dtype=ml.bfloat16, num_threads=threads),
                    shapes={"x": [rows, depth]}, inference=True,
                    constant_keys=params if compiled_in else None)
    got = np.asarray(pm.evaluate({} if compiled_in else params, {"x": x})["y"], np.float64)
    # Two roundings to bfloat16: the product's, then the bias sum's.
    product = x.astype(np.float64) @ params["weight"].T.astype(np.float64)
    ref = product + params["bias"].astype(np.float64)
    rms = np.sqrt(np.mean(ref ** 2))
    err = np.abs(got - ref) - 2.0 ** -8 * (np.abs(product) + np.abs(ref))
    assert np.max(err) <= 1e-5 * rms, f"{np.max(err) / rms:.3g} x rms"


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("rows, depth", [(256, 300), (1, 320), (4, 320), (8, 320)])
def test_weights_compiled_in_equal_weights_passed(dtype, threads, rows, depth):
    # Weights given as constant_keys are packed when compiling (the whole
    # matrix, of which each cache block and each thread's share takes its
    # slice), or, read by 8 rows or fewer, transposed back to their own
    # layout for the matrix-vector kernel; the outputs are those of the same
    # weights passed to evaluate. bfloat16 weights may be given as bit
    # patterns (uint16), as evaluate takes them, or as values.
    model = Model()
    model |= Linear(512)(input="input", output="h")
    model |= Tanh()(input="h", output=ml.IOKey("output"))
    backend = lambda: ml.MlirBackend(dtype=getattr(ml, dtype), num_threads=threads)
    shapes = {"input": [rows, depth]}
    passed = ml.compile(model, backend(), shapes=shapes, inference=True)
    params = {k: bf16(v) for k, v in passed.randomize_params(seed=11).items()}
    x = bf16(np.random.default_rng(2).standard_normal((rows, depth)))
    want = np.asarray(passed.evaluate(params, {"input": x})["output"], np.float32)
    given = [params] + ([{k: to_bfloat16_bits(v) for k, v in params.items()}]
                        if dtype == "bfloat16" else [])
    for constants in given:
        compiled_in = ml.compile(model, backend(), shapes=shapes, inference=True,
                                 constant_keys=constants)
        got = np.asarray(compiled_in.evaluate({}, {"input": x})["output"], np.float32)
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("rows", [4, 8, 16, 64])
def test_bfloat16_mlp_weights_compiled_in(rows):
    # Where bf16 products widen to float32 (no fast vdpbf16ps: the Intel
    # cores from Sapphire Rapids on without usable AMX tiles), a weight
    # compiled in is converted to float32 when compiling, from 8 rows; fewer
    # rows, and the other CPUs, keep it bf16. Either way the outputs are
    # those of the same weights passed each call (up to the order of the
    # float32 sums: within a bf16 rounding), and within bf16's rounding of
    # numpy's float64 result.
    model = Model()
    model |= Linear(512)(input="input", output="h")
    model |= ml.models.Relu()(input="h", output="a")
    model |= Linear(10)(input="a", output=ml.IOKey("output"))
    backend = ml.MlirBackend(dtype=ml.bfloat16)
    shapes = {"input": [rows, 784]}
    passed = ml.compile(model, backend, shapes=shapes, inference=True)
    params = {k: bf16(v) for k, v in passed.randomize_params(seed=5).items()}
    x = bf16(np.random.default_rng(6).standard_normal((rows, 784)))
    want = np.asarray(passed.evaluate(params, {"input": x})["output"], np.float64)
    compiled_in = ml.compile(model, backend, shapes=shapes, inference=True,
                             constant_keys=params)
    got = np.asarray(compiled_in.evaluate({}, {"input": x})["output"], np.float64)
    close(got, want, 2.0 ** -7)
    w0, b0, w1, b1 = (params[k].astype(np.float64) for k in
                      ("linear_0.weight", "linear_0.bias", "linear_1.weight", "linear_1.bias"))
    ref = np.maximum(x.astype(np.float64) @ w0.T + b0, 0) @ w1.T + b1
    close(got, ref, 2e-2)


def test_bfloat16_bit_patterns_pass_unconverted():
    # uint16 arrays for a bfloat16 terminal are its bit patterns (numpy has no
    # bfloat16): the same outputs as the float32 values they encode.
    pm = ml.compile(mlp(), ml.MlirBackend(dtype=ml.bfloat16), shapes={"input": [3, 5]})
    params = pm.randomize_params(seed=7)
    x = bf16(np.random.default_rng(3).standard_normal((3, 5)))
    want = pm.evaluate(params, {"input": x})["output"]
    bits = {k: to_bfloat16_bits(v) for k, v in params.items()}
    assert all(v.dtype == np.uint16 for v in bits.values())
    got = pm.evaluate(bits, {"input": to_bfloat16_bits(x)})["output"]
    np.testing.assert_array_equal(np.asarray(got, np.float32), np.asarray(want, np.float32))
    # Not read as numbers: 0x3F80 is 1.0, not 16256.
    one = pm.evaluate(bits, {"input": np.full((3, 5), 0x3F80, np.uint16)})["output"]
    ref = pm.evaluate(params, {"input": np.ones((3, 5), np.float32)})["output"]
    np.testing.assert_array_equal(np.asarray(one, np.float32), np.asarray(ref, np.float32))


@pytest.mark.parametrize("target_cpu", ["host", "haswell"])
@pytest.mark.parametrize("batch", [1, 2, 4, 8, 16])
def test_bfloat16_matrix_vector_products_accumulate_in_float32(target_cpu, batch):
    # Few rows: a matrix-vector product on the weight's own layout (with
    # AVX512-BF16, vdpbf16ps on 32 contiguous steps of a row and of the
    # weight, or where vdpbf16ps is slow, from 2 rows, those 32 steps widened
    # to float32 in registers and multiplied by FMAs; 784 = 24 x 32 + 16,
    # the rest in a second product). The same bound as the blocked products:
    # one bf16 rounding of the exact sums.
    model = Model()
    model |= Linear(256, use_bias=False)(input="x", output=ml.IOKey("y"))
    try:
        pm = ml.compile(model, ml.MlirBackend(dtype=ml.bfloat16), shapes={"x": [batch, 784]},
                        cpu_options={"target_cpu": target_cpu})
    except ml.MithrilError as error:  # a host without AVX2
        pytest.skip(str(error))
    params = {k: bf16(v) for k, v in pm.randomize_params(seed=1).items()}
    (weight,) = params.values()
    x = bf16(np.random.default_rng(0).standard_normal((batch, 784)))
    got = np.asarray(pm.evaluate(params, {"x": x})["y"], np.float64)
    ref = x.astype(np.float64) @ weight.T.astype(np.float64)
    rms = np.sqrt(np.mean(ref ** 2))
    assert np.max(np.abs(got - ref) - 2.0 ** -8 * np.abs(ref)) <= 1e-5 * rms


def bf16_two_linear_layers(threads, batch, inputs, outputs, relu_last, seeds):
    """Linear(512), ReLU, Linear(outputs) (and a ReLU if `relu_last`) in bf16
    on `threads`, evaluated on random bf16 data: our outputs, and float64's
    with the hidden layer rounded to bf16 as ours is."""
    model = Model()
    model |= Linear(512)(input="x", output="h1")
    model |= ml.models.Relu()(input="h1", output="a1")
    if relu_last:
        model |= Linear(outputs)(input="a1", output="h2")
        model |= ml.models.Relu()(input="h2", output=ml.IOKey("y"))
    else:
        model |= Linear(outputs)(input="a1", output=ml.IOKey("y"))
    pm = ml.compile(model, ml.MlirBackend(dtype=ml.bfloat16, num_threads=threads),
                    shapes={"x": [batch, inputs]})
    params = {k: bf16(v) for k, v in pm.randomize_params(seed=seeds[0]).items()}
    x = bf16(np.random.default_rng(seeds[1]).standard_normal((batch, inputs)))
    got = np.asarray(pm.evaluate(params, {"x": x})["y"], np.float64)
    w1, b1, w2, b2 = (params[f"linear_{i}.{k}"].astype(np.float64)
                      for i in (0, 1) for k in ("weight", "bias"))
    a1 = bf16(np.maximum(x.astype(np.float64) @ w1.T + b1, 0)).astype(np.float64)
    ref = a1 @ w2.T + b2
    return got, np.maximum(ref, 0) if relu_last else ref


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("batch", [1, 2, 4, 12, 16, 20, 32, 48, 64, 128])
def test_bfloat16_linear_layers_swapped_onto_tiles(threads, batch):
    # Where the CPU has AMX tiles, a bf16 product of 2 to 64 rows (4 to 64
    # on two threads) by a weight passed each call swaps: C^T = W x^T, the
    # weight's rows the tiles' A, read in place, x^T packed into pairs, its
    # columns padded with zeros to whole tiles, and the bias and ReLU read
    # C^T transposed (between the two swapped layers they compute the
    # second's A^T directly). Elsewhere, and at 1 or 128 rows, the blocked
    # or matrix-vector products. Each layer's sums in float32, rounded to
    # bf16 after the bias and ReLU, against float64.
    got, ref = bf16_two_linear_layers(threads, batch, 784, 256, relu_last=True, seeds=(3, 1))
    assert np.linalg.norm(got - ref) <= 8e-3 * np.linalg.norm(ref)
    # Nothing lost or swapped: each output within a few bf16 ulps of its
    # reference.
    rms = np.sqrt(np.mean(ref ** 2))
    assert np.max(np.abs(got - ref) - 2.0 ** -6 * np.abs(ref)) <= 2e-2 * rms


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("batch", [17, 32, 80, 256])
def test_bfloat16_mlp_swapped_on_pair_products(threads, batch):
    # Where the CPU has vdpbf16ps but no AMX tiles (Zen 4), a bf16 product
    # of more than 16 rows, a multiple of 32, by a weight passed each call
    # swaps: C^T = W x^T, the weight's rows broadcast as pairs in place, x^T
    # packed into pairs; the bias and ReLU between the two hidden layers
    # write the second one's x^T, and the 10-output layer, whose x^T they
    # then write too, swaps with its weight padded to whole register tiles.
    # 17 and 80 rows stay unswapped. Elsewhere the host's own kernels;
    # every host checks the numbers against float64, each layer rounded to
    # bf16.
    model = Model()
    model |= Linear(512)(input="x", output="h1")
    model |= ml.models.Relu()(input="h1", output="a1")
    model |= Linear(512)(input="a1", output="h2")
    model |= ml.models.Relu()(input="h2", output="a2")
    model |= Linear(10)(input="a2", output=ml.IOKey("y"))
    pm = ml.compile(model, ml.MlirBackend(dtype=ml.bfloat16, num_threads=threads),
                    shapes={"x": [batch, 784]})
    params = {k: bf16(v) for k, v in pm.randomize_params(seed=5).items()}
    x = bf16(np.random.default_rng(2).standard_normal((batch, 784)))
    got = np.asarray(pm.evaluate(params, {"x": x})["y"], np.float64)
    w1, b1, w2, b2, w3, b3 = (params[f"linear_{i}.{k}"].astype(np.float64)
                              for i in (0, 1, 2) for k in ("weight", "bias"))
    a1 = bf16(np.maximum(x.astype(np.float64) @ w1.T + b1, 0)).astype(np.float64)
    a2 = bf16(np.maximum(a1 @ w2.T + b2, 0)).astype(np.float64)
    ref = a2 @ w3.T + b3
    assert got.shape == (batch, 10)
    assert np.linalg.norm(got - ref) <= 8e-3 * np.linalg.norm(ref)
    # Every row its own: each output within a few bf16 ulps of its reference.
    rms = np.sqrt(np.mean(ref ** 2))
    assert np.max(np.abs(got - ref) - 2.0 ** -6 * np.abs(ref)) <= 2e-2 * rms


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("batch,outputs", [(32, 1), (64, 3), (96, 7), (256, 10), (256, 12),
                                           (64, 15), (256, 16)])
def test_bfloat16_narrow_last_layer_after_a_swapped_one(threads, batch, outputs):
    # A last layer of fewer outputs than the lane sums take (1 to 15), after
    # a swapped bf16 layer: its x^T comes from the layer before's bias and
    # ReLU, its weight padded with zero rows to whole register tiles (none
    # padded where the tiles divide the outputs: 12, 16). Every output row
    # and column against float64, the hidden layer rounded to bf16.
    got, ref = bf16_two_linear_layers(threads, batch, 384, outputs, relu_last=False,
                                      seeds=(7, 3))
    assert got.shape == (batch, outputs)
    rms = np.sqrt(np.mean(ref ** 2))
    assert np.max(np.abs(got - ref) - 2.0 ** -6 * np.abs(ref)) <= 2e-2 * rms


def small_gradient_regression(n=1024):
    """A linear regression whose float16 gradients underflow: targets of
    order 1e-5, a mean over 1024 samples."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((n, 8)).astype(np.float32)
    w_true = (rng.standard_normal((1, 8)) * 1e-5).astype(np.float32)
    model = Model()
    model |= Linear(1)(input="input", output="output")
    train = TrainModel(model)
    train.add_loss(SquaredError(), input="output", target="target", reduce_steps=[Mean()])
    pm = ml.compile(train, ml.MlirBackend(), shapes={"input": [n, 8], "target": [n, 1]},
                    mixed_precision=ml.float16)
    return pm, {"input": x, "target": x @ w_true.T}, w_true


def test_float16_training_scales_the_loss():
    """Mixed float16 training seeds the loss with optimizer.loss_scale and
    divides the gradients by it in the compiled step (torch's GradScaler):
    gradients that underflow float16 unscaled train the weights."""
    errors = {}
    for scale in (None, 1.0):
        pm, data, w_true = small_gradient_regression()
        params = {"linear_0.weight": np.zeros((1, 8), np.float32),
                  "linear_0.bias": np.zeros(1, np.float32)}
        opt = ml.SGD(lr=0.5)
        if scale is not None:  # no scaling: a scale of 1 that never grows
            opt.loss_scale, opt.loss_scale_growth_interval = scale, 10 ** 9
        for _ in range(30):
            pm.train_step(params, data, opt)
        assert opt.skipped_steps == 0
        errors[scale] = np.abs(params["linear_0.weight"] - w_true).max() / np.abs(w_true).max()
    assert errors[None] < 0.01 and errors[1.0] > 10 * errors[None], errors


def test_a_step_with_infinite_gradients_is_skipped_and_the_scale_halved():
    pm, data, _ = small_gradient_regression()
    params = {"linear_0.weight": np.ones((1, 8), np.float32),
              "linear_0.bias": np.zeros(1, np.float32)}
    before = {k: v.copy() for k, v in params.items()}
    opt = ml.Adam(lr=0.1)
    opt.loss_scale = 1e30  # the scaled gradients overflow float16
    pm.train_step(params, data, opt)
    assert opt.skipped_steps == 1 and opt.loss_scale == 5e29 and opt.steps == 0
    for key in params:
        np.testing.assert_array_equal(params[key], before[key])
    np.testing.assert_array_equal(opt.state["state:linear_0.weight.m"], 0)
    # A finite step is taken, and counts towards the scale's growth.
    opt.loss_scale, opt.loss_scale_growth_interval = 1024.0, 2
    pm.train_step(params, data, opt)
    pm.train_step(params, data, opt)
    assert opt.steps == 2 and opt.loss_scale == 2048.0
    assert not np.array_equal(params["linear_0.weight"], before["linear_0.weight"])


def test_bfloat16_rounds_between_ops_to_nearest_even():
    # a * b + c: the product rounded to bfloat16 where the sum reads it (on
    # the float32's bits once the two ops fuse), then the sum rounded.
    model = Model()
    model |= Multiply()(left="a", right="b", output="p")
    model |= Add()(left="p", right="c", output="output")
    rng = np.random.default_rng(4)
    a, b, c = (bf16(rng.standard_normal(1000)) for _ in range(3))
    # Products that are ties (3 * (1 + 2^-7) = 3 + 1.5 units of 2^-6: up to
    # the even 3.03125; 3 * (1 + 3 * 2^-7): down to the even 3.0625), one
    # finite in float32 that rounds up to inf in bfloat16, and NaN.
    a[:4] = [3.0, 3.0, 1.4140625 * 2.0**127, np.nan]
    b[:4] = [1.0 + 2.0**-7, 1.0 + 3 * 2.0**-7, 1.4140625, 1.0]
    c[:4] = 0.0
    pm = ml.compile(model, ml.MlirBackend(dtype=ml.bfloat16), shapes={k: [1000] for k in "abc"})
    got = np.asarray(pm.evaluate({}, {"a": a, "b": b, "c": c})["output"], np.float32)
    want = bf16(bf16(a.astype(np.float32) * b.astype(np.float32)) + c)
    np.testing.assert_array_equal(got, want)
    assert got[0] == 3.03125 and got[1] == 3.0625 and got[2] == np.inf and np.isnan(got[3])


@pytest.mark.parametrize("target_cpu", [pytest.param("host", marks=pytest.mark.host_code),
                                        "haswell"])
def test_bfloat16_subnormal_results_follow_the_target(target_cpu):
    # With AVX512-BF16 the rounding to bfloat16 is vcvtneps2bf16, which
    # flushes subnormal results to zero; elsewhere it is integer arithmetic,
    # which keeps them. Normal results round to nearest even either way.
    from mithril import _mithril
    model = Model()
    model |= Multiply()(left="a", right="b", output="output")
    a = bf16(np.array([2.0**-70, -(2.0**-70), 3.0, 2.0**-60] * 8, np.float32))
    b = bf16(np.array([2.0**-60, 2.0**-61, 1.0 + 2.0**-7, 2.0**-60] * 8, np.float32))
    options = None if target_cpu == "host" else {"target_cpu": target_cpu}
    pm = ml.compile(model, ml.MlirBackend(dtype=ml.bfloat16), shapes={"a": [32], "b": [32]},
                    cpu_options=options)
    got = np.asarray(pm.evaluate({}, {"a": a, "b": b})["output"], np.float32)
    exact = a.astype(np.float32) * b.astype(np.float32)
    want = bf16(exact)
    native = _mithril.cpu_target("" if target_cpu == "host" else target_cpu)["bf16_dot_product"]
    if native:
        want[np.abs(exact) < np.finfo(np.float32).tiny] = 0.0
    np.testing.assert_array_equal(got, want)
    assert got[2] == 3.03125  # the tie rounds to even on every target
    assert (got[0] == 0.0) == native


def torch_bf16_cnn(params, x, names):
    """The CNN in float64 with each op's result rounded to bfloat16."""
    r = lambda t: torch.tensor(bf16(t.numpy()), dtype=torch.float64)
    t = {k: torch.tensor(np.asarray(v, np.float64)) for k, v in params.items()}
    h = torch.tensor(np.asarray(x, np.float64))
    for conv in names[:2]:
        h = r(torch.nn.functional.conv2d(h, t[f"{conv}.weight"], t[f"{conv}.bias"], padding=1))
        h = torch.nn.functional.max_pool2d(torch.relu(h), 2)
    h = r(h.flatten(1) @ t[f"{names[2]}.weight"].T)
    return r(h + t[f"{names[2]}.bias"]).numpy()


@pytest.mark.parametrize("threads", [1, 2])
def test_bfloat16_cnn_against_rounded_reference(threads):
    # The convolutions of 8 and more channels run by Winograd's transforms
    # with the pooling folded in, the rounding of the convolution's result
    # inside; the first one's rounding fuses into its pooling. With
    # AVX512-BF16 the transformed operands multiply in bf16 (f32 sums): on
    # Zen 4 the error is then 4.9e-3 of the RMS at most, 6e-4 on average
    # (exactly the reference's values with float32 products).
    pm = ml.compile(small_cnn(5), ml.MlirBackend(dtype=ml.bfloat16, num_threads=threads),
                    shapes={"input": [4, 1, 12, 12]})
    params = {k: bf16(v) for k, v in pm.randomize_params(seed=5).items()}
    x = bf16(np.random.default_rng(6).standard_normal((4, 1, 12, 12)))
    got = np.asarray(pm.evaluate(params, {"input": x})["output"], np.float64)
    names = sorted({k.split(".")[0] for k in params})
    want = torch_bf16_cnn(params, x, names)
    # The float32 sums of Winograd's transforms against float64's: a value
    # near a bfloat16 tie may round to the other side, one unit in 2^8.
    close(got, want, 2e-2)
    assert np.mean(np.abs(got - want)) / np.sqrt(np.mean(want**2)) < 2e-3


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("n,c,f,h", [
    (16, 32, 64, 14),  # the bench CNN's second convolution: 784 tiles in blocks
    (4, 8, 32, 16),    # one panel of output channels
    (3, 16, 96, 10),   # 75 tiles: no whole blocks, the products whole
])
def test_bfloat16_pooled_winograd_channels_last(threads, n, c, f, h):
    # A bf16 convolution whose 2x2 max pooling folds into Winograd's output
    # transform, with whole panels of 32 output channels, runs channels-last:
    # the transformed input's [tiles, c] rows are the products' rows, their
    # channel pairs read in place, and only the filters are packed into
    # pairs. Against float64 with the convolution's result rounded to bf16
    # before its ReLU and pooling.
    model = Model()
    model |= Convolution2D(kernel_size=3, out_channels=f, padding=1)(input="input")
    model += Relu()
    model += MaxPool2D(kernel_size=2)(output=ml.IOKey("output"))
    pm = ml.compile(model, ml.MlirBackend(dtype=ml.bfloat16, num_threads=threads),
                    shapes={"input": [n, c, h, h]})
    params = {k: bf16(v) for k, v in pm.randomize_params(seed=11).items()}
    x = bf16(np.random.default_rng(12).standard_normal((n, c, h, h)))
    with ml.profile() as prof:
        got = np.asarray(pm.evaluate(params, {"input": x})["output"], np.float64)
    assert any("winograd products" in kernel for _, kernel, _, _ in prof.records)
    t = {k: torch.tensor(np.asarray(v, np.float64)) for k, v in params.items()}
    (weight,) = [k for k in t if k.endswith("weight")]
    (bias,) = [k for k in t if k.endswith("bias")]
    y = torch.nn.functional.conv2d(torch.tensor(np.asarray(x, np.float64)), t[weight], t[bias],
                                   padding=1)
    want = torch.nn.functional.max_pool2d(
        torch.relu(torch.tensor(bf16(y.numpy()), dtype=torch.float64)), 2).numpy()
    # Each output within two bf16 ulps of its reference (a value near a tie
    # rounds either way) and the transformed operands' roundings (absolute,
    # from the inputs' scale: up to 1.5e-2 of the RMS), and a few thousandths
    # of the RMS on average (as the planar form's, measured alike: 2.3e-3).
    rms = np.sqrt(np.mean(want**2))
    assert np.max(np.abs(got - want) - 2.0**-7 * np.abs(want)) <= 2e-2 * rms
    assert np.mean(np.abs(got - want)) / rms < 4e-3


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("n,c,f,h,w,padding", [
    (16, 32, 64, 14, 14, 1),  # the bench CNN's second convolution, unpooled
    (3, 16, 96, 9, 11, 1),    # odd output: the last block row and column cut
    (2, 12, 32, 7, 6, 0),     # no padding
])
def test_bfloat16_winograd_channels_last_unpooled(threads, n, c, f, h, w, padding):
    # A bf16 Winograd convolution with output channels in whole panels of 32
    # and no pooling runs channels-last too, its four outputs a tile
    # interleaved channels-last and transposed to planes; and the gradients
    # of a mixed-precision one (its input gradient a Winograd convolution as
    # well) against float32's.
    model = Model()
    model |= Convolution2D(kernel_size=3, out_channels=f, padding=padding)(
        input="input", output=ml.IOKey("output"))
    pm = ml.compile(model, ml.MlirBackend(dtype=ml.bfloat16, num_threads=threads),
                    shapes={"input": [n, c, h, w]})
    params = {k: bf16(v) for k, v in pm.randomize_params(seed=11).items()}
    x = bf16(np.random.default_rng(12).standard_normal((n, c, h, w)))
    got = np.asarray(pm.evaluate(params, {"input": x})["output"], np.float64)
    t = {k: torch.tensor(np.asarray(v, np.float64)) for k, v in params.items()}
    (weight,) = [k for k in t if k.endswith("weight")]
    (bias,) = [k for k in t if k.endswith("bias")]
    y = torch.nn.functional.conv2d(torch.tensor(np.asarray(x, np.float64)), t[weight], t[bias],
                                   padding=padding)
    want = bf16(y.numpy()).astype(np.float64)
    rms = np.sqrt(np.mean(want**2))
    assert got.shape == want.shape
    assert np.max(np.abs(got - want) - 2.0**-7 * np.abs(want)) <= 3e-2 * rms
    assert np.mean(np.abs(got - want)) / rms < 5e-3
    # Mixed precision: float32 terminals, bf16 between; its gradients within
    # bf16's reach of float32's.
    mixed = ml.compile(model, ml.MlirBackend(precision="bfloat16", num_threads=threads),
                       shapes={"input": [n, c, h, w]}, mixed_precision=True)
    full = ml.compile(model, ml.MlirBackend(num_threads=threads), shapes={"input": [n, c, h, w]})
    seeds = {"output": np.ones(full.shapes["output"], np.float32)}
    p32 = {k: np.asarray(v, np.float32) for k, v in params.items()}
    _, grads = mixed.evaluate(p32, {"input": x}, output_gradients=seeds)
    _, ref = full.evaluate(p32, {"input": x}, output_gradients=seeds)
    for k in ref:
        close(grads[k], np.asarray(ref[k], np.float64), 2e-2)


@pytest.mark.parametrize("target_cpu", ["host", "skylake-avx512"])
@pytest.mark.parametrize("batch, channels, size", [
    (4, 5, 12),   # input channels in tiles of 1
    (3, 8, 14),   # an odd batch: a zero image completes the last pair
    (2, 1, 28),   # one input channel, 53 blocks of 16 positions
    (16, 32, 14),  # the bench CNN's second convolution
])
def test_bfloat16_convolution_weight_gradient_accumulates_in_float32(target_cpu, batch, channels,
                                                                     size):
    # The weight gradient of bf16 values: with AVX512-BF16 the images go in
    # pairs on vdpbf16ps (two images' products a lane), elsewhere the values
    # widen to f32. Either way each product is exact and the sums are f32, so
    # each element is the float64 gradient rounded once to bf16 (half an ulp,
    # at most 2^-8 relative) up to float32 rounding of the sums.
    model = Model()
    model |= Convolution2D(kernel_size=3, out_channels=8, padding=1)(
        input="input", output=ml.IOKey("output"))
    try:
        pm = ml.compile(model, ml.MlirBackend(dtype=ml.bfloat16),
                        shapes={"input": [batch, channels, size, size]}, jit=True,
                        cpu_options={"target_cpu": target_cpu})
    except ml.MithrilError as error:  # a host without AVX-512
        pytest.skip(str(error))
    rng = np.random.default_rng(batch)
    params = {k: bf16(v) for k, v in pm.randomize_params(seed=1).items()}
    x = bf16(rng.standard_normal((batch, channels, size, size)))
    seed = bf16(rng.standard_normal((batch, 8, size, size)))
    _, grads = pm.evaluate(params, {"input": x}, output_gradients={"output": seed})
    key = next(k for k in params if k.endswith("weight"))
    w = torch.tensor(params[key].astype(np.float64), requires_grad=True)
    y = torch.nn.functional.conv2d(torch.tensor(x.astype(np.float64)), w, padding=1)
    y.backward(torch.tensor(seed.astype(np.float64)))
    ref = w.grad.numpy()
    got = np.asarray(grads[key], np.float64)
    rms = np.sqrt(np.mean(ref ** 2))
    err = np.abs(got - ref) - 2.0 ** -8 * np.abs(ref)
    assert np.max(err) <= 1e-5 * rms, f"{np.max(err) / rms:.3g} x rms"


def _host_has_amx_bf16():
    try:
        with open("/proc/cpuinfo") as f:
            return " amx_bf16" in f.read()
    except OSError:
        return False


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("batch, channels, size, filters, kernel, padding, pooled", [
    (16, 32, 14, 64, 3, 1, True),   # the bench CNN's second convolution
    (2, 64, 8, 32, 3, 1, False),    # 128 rows, 576 deep
    (4, 32, 6, 16, 1, 0, False),    # a 1x1 convolution: the windows are the pixels
    (3, 32, 5, 16, 3, 0, False),    # 27 rows, no whole tiles: not on tiles
    (1, 8, 9, 16, 3, 1, True),      # 8 channels, no whole step of 32: not on tiles; an odd
                                    # output (9 x 9) whose bf16 5 x 5 blocks LLVM could not
                                    # copy (mithril-legalize-bf16-memory)
    # Rows of at least 12 columns read their windows in place, in rows of 16:
    (2, 32, 14, 32, 3, 1, False),   # 14 columns + 2 dropped, tiles of two rows
    (1, 64, 12, 48, 3, 1, True),    # 12 + 4, two steps a kernel position, 3 column tiles
    (2, 32, 28, 16, 3, 1, True),    # 28 + 4, one column tile
    (2, 32, 13, 16, 3, 1, False),   # 13 rows: tiles of one row
    (1, 32, 16, 32, 5, 2, False),   # whole rows, a 5x5 kernel
    (1, 32, 9, 16, 3, 1, False),    # 9 columns: copied windows, 81 rows: not on tiles
])
def test_bfloat16_convolutions_against_float64(threads, batch, channels, size, filters, kernel,
                                               padding, pooled):
    # On AMX hosts a stride-1 convolution of 32k channels and 16k filters is
    # a bf16 product of its input's windows (Convolution.cpp, lowerTileConv),
    # read in place for rows of at least three quarters of a tile of 16
    # columns, else copied (16k output pixels), with the pooling of a ReLU's
    # 2x2 blocks folded in; elsewhere (and for the other shapes) Winograd's
    # transforms or the flat convolution. Inputs exact in bf16: on tiles the products are
    # exact and the sums float32, so the result is the float64 one rounded to
    # bf16 once, half an ulp (2^-8 relative), up to float32 sums.
    model = Model()
    model |= Convolution2D(kernel_size=kernel, out_channels=filters, padding=padding)(
        input="input", output="conv")
    if pooled:
        from mithril.models import MaxPool2D, Relu
        model |= Relu()(input="conv", output="relu")
        model |= MaxPool2D(kernel_size=2)(input="relu", output=ml.IOKey("output"))
    else:
        model.set_cout("conv")
    shape = [batch, channels, size, size]
    pm = ml.compile(model, ml.MlirBackend(dtype=ml.bfloat16, num_threads=threads),
                    shapes={"input": shape})
    rng = np.random.default_rng(7)
    params = {k: bf16(rng.standard_normal(v.shape) * 0.2)
              for k, v in pm.randomize_params(seed=7).items()}
    x = bf16(rng.standard_normal(shape))
    out = pm.evaluate(params, {"input": x})
    got = np.asarray(out["output" if pooled else "conv"], np.float64)
    weight = next(v for k, v in params.items() if k.endswith("weight"))
    bias = next(v for k, v in params.items() if k.endswith("bias"))
    ref = torch.nn.functional.conv2d(torch.tensor(np.asarray(x, np.float64)),
                                     torch.tensor(np.asarray(weight, np.float64)),
                                     torch.tensor(np.asarray(bias, np.float64)), padding=padding)
    if pooled:
        ref = torch.nn.functional.max_pool2d(torch.relu(ref), 2)
    ref = ref.numpy()
    rms = np.sqrt(np.mean(ref ** 2))
    err = np.abs(got - ref) - 2.0 ** -8 * np.abs(ref)
    out_size = size + 2 * padding - kernel + 1
    wide = -(-out_size // 16) * 16
    on_tiles = (_host_has_amx_bf16() and channels % 32 == 0 and filters % 16 == 0
                and (4 * (wide - out_size) <= wide or (batch * out_size ** 2) % 16 == 0))
    # Winograd's transformed operands are rounded to bf16 (docs/lowprecision.md):
    # 8e-3 of the RMS for 32 channels on this test's data, within the CNN
    # test's bound.
    assert np.max(err) <= (1e-5 if on_tiles else 2e-2) * rms, \
        f"{np.max(err) / rms:.3g} x rms (on tiles: {on_tiles})"
