# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""Float32 products as the CPU schedule blocks them, against numpy in float64,
on one and two threads, with the host's kernels and AVX2's (6-row tiles):

- a result larger than the L2 cache, its reduction in more than one block:
  each register tile reads its accumulators back from the result, and
  mithril-prefetch-accumulators prefetches the next tile's while this one
  computes (the last tile of each loop prefetches its own);
- on Intel hosts with AMX, products of two or more 64-column panels and at
  least 256 reduction steps take 6 x 64 register tiles: rows that 6 does not
  divide leave a remainder tile in each block, and a product too shallow for
  them keeps 8 x 32 beside it; float64 products take 6 x 32 tiles the same way
  (8 x 16 elsewhere)."""

import functools

import numpy as np
import pytest

import mithril as ml
from mithril import _mithril
from mithril.models import Linear, MatrixMultiply, Model

SHAPES = [
    (1000, 1536, 640),  # 2.4 MiB result (above a 2 MiB L2), 1536 deep
    (1100, 1024, 1024),  # AVX2: blocks of 512 columns, rows 1098 + 2 in each
    (250, 512, 384),  # 250 = 41 x 6 + 4 rows
    (130, 300, 192),  # three 64-column panels, 300 deep
    (256, 64, 512),  # 64 deep: 8 x 32 tiles
    (1056, 300, 256),  # AVX2: 12-row blocks (whole 6-row tiles), one packed block for all
    (200, 256, 28),  # 28 columns: 16 + 12 (AVX2: 16 + 8 + 4)
    (256, 512, 9),  # AVX2: 8 columns + 1, the one column 8 rows at a time
    (100, 200, 1),  # one column
]


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("target", ["host", "haswell"])
@pytest.mark.parametrize("rows,depth,columns", SHAPES)
def test_float32_products(rows, depth, columns, threads, target):
    rng = np.random.default_rng(rows + depth + columns)
    a = rng.standard_normal((rows, depth)).astype(np.float32)
    b = rng.standard_normal((depth, columns)).astype(np.float32)
    model = Model()
    model |= MatrixMultiply().connect(left="a", right="b", output=ml.IOKey("c"))
    pm = ml.compile(model, ml.MlirBackend(num_threads=threads),
                    shapes={"a": [rows, depth], "b": [depth, columns]}, inference=True,
                    cpu_options=None if target == "host" else {"target_cpu": target})
    c = pm.evaluate({}, {"a": a, "b": b})["c"]
    reference = a.astype(np.float64) @ b.astype(np.float64)
    # float32 sums of `depth` products: a few ulps of the largest partial sums.
    np.testing.assert_allclose(c, reference, rtol=0,
                               atol=1e-6 * np.sqrt(depth) * np.abs(reference).max() * 8)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("target", ["host", "haswell"])
@pytest.mark.parametrize("batch,rows,depth,columns",
                         [(4, 48, 16, 60), (8, 100, 64, 28), (3, 50, 40, 12), (2, 7, 9, 1)])
def test_float32_batch_products(batch, rows, depth, columns, threads, target):
    """Batch products whose columns leave a rest (60 = 32 + 16 + 12; AVX2's
    12 = 8 + 4) and rows that no tile divides."""
    rng = np.random.default_rng(batch + rows + depth + columns)
    a = rng.standard_normal((batch, rows, depth)).astype(np.float32)
    b = rng.standard_normal((batch, depth, columns)).astype(np.float32)
    model = Model()
    model |= MatrixMultiply().connect(left="a", right="b", output=ml.IOKey("c"))
    pm = ml.compile(model, ml.MlirBackend(num_threads=threads),
                    shapes={"a": [batch, rows, depth], "b": [batch, depth, columns]},
                    inference=True, cpu_options=None if target == "host" else {"target_cpu": target})
    c = pm.evaluate({}, {"a": a, "b": b})["c"]
    reference = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(c, reference, rtol=0,
                               atol=1e-6 * np.sqrt(depth) * np.abs(reference).max() * 8)


# Products by fewer than 16 columns that are not a weight's transpose take
# the matrix-vector kernel on a copy of the right operand's rows (one column:
# a view of it), tiles of a divisor of the columns up to 8 (7: 2 x 7; AVX2 1
# x 7); a reduction the lanes do not divide (100 = 96 + 4, 500, 37) takes
# them over its whole steps and a product of the few left.
FEW_COLUMNS = [
    (256, 512, 1, "float32"),
    (256, 512, 3, "float32"),
    (100, 512, 7, "float32"),  # 100 rows: tiles of 2 (AVX2: 1)
    (37, 96, 5, "float32"),  # 37 rows: one a tile
    (64, 256, 15, "float32"),
    (256, 100, 7, "float32"),  # 100 deep: 96 in lanes, then 4
    (256, 500, 1, "float32"),
    (10, 37, 2, "float64"),  # 37 deep: 32 in f64's 8 lanes, then 5
    (128, 256, 6, "float64"),
    (9, 64, 1, "float64"),
]


def _check_product_and_gradients(rows, depth, columns, dtype, threads, target):
    """a @ b for a [rows, depth], b [depth, columns], both trainable: the
    output and both gradients (dy @ b.T, a.T @ dy) against float64."""
    rng = np.random.default_rng(rows * depth + columns)
    a = rng.standard_normal((rows, depth)).astype(dtype)
    b = rng.standard_normal((depth, columns)).astype(dtype)
    seed = rng.standard_normal((rows, columns)).astype(dtype)
    model = Model()
    model |= MatrixMultiply().connect(left="a", right="b", output=ml.IOKey("c"))
    pm = ml.compile(model, ml.MlirBackend(num_threads=threads, dtype=getattr(ml, dtype)),
                    shapes={"a": [rows, depth], "b": [depth, columns]}, trainable_keys={"a", "b"},
                    cpu_options=None if target == "host" else {"target_cpu": target})
    out, grads = pm.evaluate({"a": a, "b": b}, {}, output_gradients={"c": seed})
    a64, b64, s64 = (v.astype(np.float64) for v in (a, b, seed))
    eps = 1e-6 if dtype == "float32" else 1e-15
    for got, ref, n in ((out["c"], a64 @ b64, depth), (grads["a"], s64 @ b64.T, columns),
                        (grads["b"], a64.T @ s64, rows)):
        assert got.shape == ref.shape and got.dtype == np.dtype(dtype)
        np.testing.assert_allclose(got, ref, rtol=0, atol=eps * np.sqrt(n) * np.abs(ref).max() * 8)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("target", ["host", "haswell"])
@pytest.mark.parametrize("rows,depth,columns,dtype", FEW_COLUMNS)
def test_products_by_few_columns(rows, depth, columns, dtype, threads, target):
    _check_product_and_gradients(rows, depth, columns, dtype, threads, target)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("target", ["host", "haswell"])
@pytest.mark.parametrize("rows,depth,columns,dtype", [
    (1, 1000, 1000, "float32"),  # 992 + 8 columns, 125 blocks of 8 steps
    (4, 300, 1500, "float32"),
    (7, 512, 784, "float32"),  # AVX2: 7 rows, more than its 6-row tiles
    (2, 64, 33, "float32"),
    (5, 20, 100, "float64"),
    (3, 250, 4100, "float64"),  # columns in blocks of 16 KiB of the result
])
def test_products_of_few_rows(rows, depth, columns, dtype, threads, target):
    """Products of fewer rows than a register tile by a right operand read
    as stored (a small batch's x @ w): blocks of all the columns by 8 steps
    of the reduction."""
    _check_product_and_gradients(rows, depth, columns, dtype, threads, target)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("target", ["host", "haswell"])
@pytest.mark.parametrize("rows,inputs,outputs,dtype", [
    (1, 100, 512, "float32"), (4, 1000, 300, "float32"), (8, 37, 64, "float32"),
    (16, 100, 512, "float32"),  # more than 8 rows of a wide weight: packed kernels
    (64, 100, 10, "float32"), (3, 45, 20, "float64"),
    (1, 24, 1000, "float32"),  # one row: one step of 16 lanes, then 8
    (1, 12, 30, "float64")])
def test_linear_layers_of_odd_depth(rows, inputs, outputs, dtype, threads, target):
    """Linear layers whose inputs the lanes do not divide: the lanes over
    their whole steps, then a product of the inputs left, up to 8 rows (any
    number by fewer than 16 outputs); outputs and gradients."""
    _check_linear(rows, inputs, outputs, dtype, threads, target)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("target", ["host", "haswell", "znver4"])
@pytest.mark.parametrize("rows,inputs,outputs,dtype", [
    (16, 784, 512, "float32"), (12, 2048, 64, "float32"),
    (8, 1000, 64, "float32"),  # parts, then the 8 inputs left
    (4, 784, 96, "float64"), (16, 512, 10, "float32")])
def test_deep_linear_layers_in_parts(rows, inputs, outputs, dtype, threads, target):
    """Matrix-vector products whose rows of A and a tile's weight rows
    outgrow the L1 take their reduction in parts, each adding its lane sums
    to the last one's result (znver4: 32 KiB, more parts than this host's
    where it has 48); outputs and gradients."""
    if target == "znver4" and not _runs_here("znver4"):
        pytest.skip("this host cannot run code compiled for znver4")
    _check_linear(rows, inputs, outputs, dtype, threads, target)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("target", ["host", "haswell"])
@pytest.mark.parametrize("rows,depth,columns,dtype", [
    (256, 512, 17, "float32"),  # 16 + 1: the one column a view
    (250, 300, 20, "float32"),  # 16 + 4 (AVX2: 16 + 4), rows 6 does not divide
    (64, 200, 47, "float32"),  # 32 + 15 (AVX2: 32 + 8 + 7)
    (96, 100, 33, "float32"),  # a depth the lanes do not divide
    (40, 1000, 1000, "float32"),  # 992 + 8
    (100, 64, 9, "float64"),  # 8 + 1 in float64's 8 lanes
])
def test_narrow_rests_of_columns(rows, depth, columns, dtype, threads, target):
    """Columns past whole vectors that are fewer than a vector's lanes are a
    matrix-vector product of their own (A's rows by those columns of B as
    rows); outputs and gradients."""
    _check_product_and_gradients(rows, depth, columns, dtype, threads, target)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("target", ["host", "haswell"])
@pytest.mark.parametrize("rows,depth,columns,dtype", [
    (1030, 64, 256, "float32"),  # AVX2: 1026 in blocks of 114 + 4
    (2050, 96, 128, "float32"),  # 2048 + 2 (AVX2: 2046 + 4)
    (1100, 40, 64, "float64"),
])
def test_rows_split_before_their_blocks(rows, depth, columns, dtype, threads, target):
    """Products of more than two blocks of rows that register tiles do not
    divide: the rest of the rows split off once, before the blocks, and
    stream B as stored; outputs and gradients."""
    _check_product_and_gradients(rows, depth, columns, dtype, threads, target)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("target", ["host", "haswell"])
@pytest.mark.parametrize("rows,inputs,outputs,dtype", [
    (256, 512, 20, "float32"), (64, 100, 28, "float32"), (128, 256, 41, "float64")])
def test_linear_layers_with_narrow_rests(rows, inputs, outputs, dtype, threads, target):
    """Linear layers whose outputs past whole vectors are fewer than a
    vector's lanes: those read the weight's rows as stored, the bias added
    to each part; outputs and gradients."""
    _check_linear(rows, inputs, outputs, dtype, threads, target)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("target", ["host", "haswell"])
@pytest.mark.parametrize("rows,depth,columns,dtype", [
    (10, 512, 256, "float32"),  # AVX-512: one 10 x 32 tile; AVX2: 6 + 4 rows
    (9, 300, 96, "float32"),
    (10, 200, 64, "float64"),  # 10 x 16 in float64
    (9, 37, 33, "float32"),  # a column rest beside the 9 rows
    (11, 64, 64, "float32"),  # 11: 8 + 3, as before
])
def test_products_of_nine_or_ten_rows(rows, depth, columns, dtype, threads, target):
    """Products of 9 or 10 rows take them in one AVX-512 register tile (20
    accumulators) rather than 8 rows and a rest of 1 or 2 that read B again;
    outputs and gradients."""
    _check_product_and_gradients(rows, depth, columns, dtype, threads, target)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("target", ["host", "haswell"])
@pytest.mark.parametrize("batch,outputs,dtype", [
    (256, 10, "float32"), (256, 9, "float32"), (256, 10, "float64")])
def test_narrow_last_layer_of_an_mlp(batch, outputs, dtype, threads, target):
    """The last layer of a float32 MLP whose layers swap (W @ x^T): its 9 or
    10 outputs are the rows of one AVX-512 register tile, on two threads
    each thread's columns of x^T (float64's takes lane sums; its weight
    gradient, g^T @ h, has the 10 rows); outputs and every gradient against
    float64."""
    rng = np.random.default_rng(batch + outputs)
    model = Model()
    model |= Linear(512)(input="x")
    model += Linear(512)
    model += Linear(outputs)(output=ml.IOKey("y"))
    pm = ml.compile(model, ml.MlirBackend(num_threads=threads, dtype=getattr(ml, dtype)),
                    shapes={"x": [batch, 512]},
                    cpu_options=None if target == "host" else {"target_cpu": target})
    params = pm.randomize_params(seed=outputs)
    x = rng.standard_normal((batch, 512)).astype(dtype)
    seed = rng.standard_normal((batch, outputs)).astype(dtype)
    out, grads = pm.evaluate(params, {"x": x}, output_gradients={"y": seed})
    p = {k: v.astype(np.float64) for k, v in params.items()}
    names = sorted({k.split(".")[0] for k in p})
    h = [x.astype(np.float64)]
    for name in names:
        h.append(h[-1] @ p[name + ".weight"].T + p[name + ".bias"])
    eps = 1e-6 if dtype == "float32" else 1e-15
    checks = [(out["y"], h[-1], 512)]
    g = seed.astype(np.float64)
    for i in reversed(range(len(names))):
        checks.append((grads[names[i] + ".weight"], g.T @ h[i], batch))
        checks.append((grads[names[i] + ".bias"], g.sum(0), batch))
        g = g @ p[names[i] + ".weight"]
    for got, ref, depth in checks:
        assert got.shape == ref.shape and got.dtype == np.dtype(dtype)
        np.testing.assert_allclose(got, ref, rtol=0,
                                   atol=eps * np.sqrt(depth) * np.abs(ref).max() * 64)


@functools.lru_cache(maxsize=None)
def _runs_here(cpu):
    """Whether code compiled for `cpu` runs on this host (its features)."""
    try:
        model = Model()
        model |= Linear(4)(input="x", output=ml.IOKey("y"))
        ml.compile(model, ml.MlirBackend(), shapes={"x": [1, 4]}, inference=True,
                   cpu_options={"target_cpu": cpu}).evaluate(
                       {"weight": np.zeros((4, 4), np.float32), "bias": np.zeros(4, np.float32)},
                       {"x": np.zeros((1, 4), np.float32)})
        return True
    except ml.MithrilError:
        return False


def _check_linear(rows, inputs, outputs, dtype, threads, target):
    rng = np.random.default_rng(rows * inputs + outputs)
    model = Model()
    model |= Linear(outputs)(input="x", output=ml.IOKey("y"))
    pm = ml.compile(model, ml.MlirBackend(num_threads=threads, dtype=getattr(ml, dtype)),
                    shapes={"x": [rows, inputs]},
                    cpu_options=None if target == "host" else {"target_cpu": target})
    params = pm.randomize_params(seed=rows)
    x = rng.standard_normal((rows, inputs)).astype(dtype)
    seed = rng.standard_normal((rows, outputs)).astype(dtype)
    out, grads = pm.evaluate(params, {"x": x}, output_gradients={"y": seed})
    w, b = (params[k].astype(np.float64) for k in ("weight", "bias"))
    x64, s64 = x.astype(np.float64), seed.astype(np.float64)
    eps = 1e-6 if dtype == "float32" else 1e-15
    for got, ref, depth in ((out["y"], x64 @ w.T + b, inputs), (grads["weight"], s64.T @ x64, rows)):
        assert got.shape == ref.shape and got.dtype == np.dtype(dtype)
        np.testing.assert_allclose(got, ref, rtol=0,
                                   atol=eps * np.sqrt(depth) * np.abs(ref).max() * 8)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("rows,depth,columns", [(250, 512, 384), (1000, 768, 640), (130, 300, 96)])
def test_float64_products(rows, depth, columns, threads):
    rng = np.random.default_rng(rows + depth + columns)
    a = rng.standard_normal((rows, depth))
    b = rng.standard_normal((depth, columns))
    model = Model()
    model |= MatrixMultiply().connect(left="a", right="b", output=ml.IOKey("c"))
    pm = ml.compile(model, ml.MlirBackend(dtype=ml.float64, num_threads=threads),
                    shapes={"a": [rows, depth], "b": [depth, columns]}, inference=True)
    c = pm.evaluate({}, {"a": a, "b": b})["c"]
    reference = a @ b
    np.testing.assert_allclose(c, reference, rtol=0,
                               atol=1e-15 * np.sqrt(depth) * np.abs(reference).max() * 8)


@pytest.mark.parametrize("cpu,wide", [("sapphirerapids", True), ("graniterapids", True),
                                      ("skylake-avx512", False), ("znver4", False),
                                      ("haswell", False)])
def test_which_cpus_take_wide_float_tiles(cpu, wide):
    assert _mithril.cpu_target(cpu)["wide_float_tiles"] == wide


def _check_matrix_vector_linear_layers(rows, target, threads, dtype, eps):
    rng = np.random.default_rng(rows)
    model = Model()
    model |= Linear(512)(input="x", output="h1")
    model |= ml.models.Relu()(input="h1", output="a1")
    model |= Linear(10)(input="a1", output=ml.IOKey("y"))
    model |= Linear(6)(input="x96", output=ml.IOKey("z"))
    backend = ml.MlirBackend(num_threads=threads, dtype=getattr(ml, dtype))
    pm = ml.compile(model, backend,
                    shapes={"x": [rows, 784], "x96": [rows, 96]}, inference=True,
                    cpu_options=None if target == "host" else {"target_cpu": target})
    params = pm.randomize_params(seed=rows)
    x = rng.standard_normal((rows, 784)).astype(dtype)
    x96 = rng.standard_normal((rows, 96)).astype(dtype)
    out = pm.evaluate(params, {"x": x, "x96": x96})
    p = {k: v.astype(np.float64) for k, v in params.items()}
    a1 = np.maximum(x @ p["linear_0.weight"].T + p["linear_0.bias"], 0)
    y = a1 @ p["linear_1.weight"].T + p["linear_1.bias"]
    z = x96 @ p["linear_2.weight"].T + p["linear_2.bias"]
    for got, ref, depth in ((out["y"], y, 512), (out["z"], z, 96)):
        assert got.shape == ref.shape and got.dtype == np.dtype(dtype)
        np.testing.assert_allclose(got, ref, rtol=0,
                                   atol=eps * np.sqrt(depth) * np.abs(ref).max() * 8)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("target", ["host", "haswell"])
@pytest.mark.parametrize("rows", [1, 2, 3, 5, 7, 11, 12, 16])
def test_float32_matrix_vector_linear_layers(rows, target, threads):
    # A Linear layer of at most 16 rows is a matrix-vector product on the
    # weight's own rows: register tiles of rows x weight rows x one register
    # of lanes (4 x 4 of 16 with AVX-512; with AVX2 3 x 4 of 8, the rows past
    # the tiles of 3 in tiles of 2: 5 = 3 + 2, 7 = 3 + 4, 11 = 9 + 2, 16 =
    # 12 + 4; 2 x 4 for 2 rows, 1 x 8 for one), the lanes summed at the end.
    # 512 outputs (whole tiles), 10 and 6 (narrow ones), 784 and 96 deep;
    # every output against float64.
    _check_matrix_vector_linear_layers(rows, target, threads, "float32", 1e-6)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("target", ["host", "haswell"])
@pytest.mark.parametrize("rows", [1, 4, 5, 16])
def test_float64_matrix_vector_linear_layers(rows, target, threads):
    # The same in float64: 8 lanes (one zmm register) with AVX-512, 4 with
    # AVX2; against numpy's float64 to a few ulps of the largest output.
    _check_matrix_vector_linear_layers(rows, target, threads, "float64", 1e-15)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("target", ["host", "haswell"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_convolution_weight_gradient_register_tiles(dtype, target, threads):
    # A convolution's weight gradient as the schedule tiles it: 4 output x 4
    # input channels of one register of lanes (AVX-512), 4 x 2 of one ymm
    # register (AVX2: 8 f32 or 4 f64 lanes), summed over blocks of 16 flat
    # positions and their lanes at the end; 16 x 8 channels, 12 x 12 images
    # padded by 1, against torch in float64.
    import torch
    import torch.nn.functional as F
    from mithril.models import Convolution2D
    rng = np.random.default_rng(7)
    x = rng.standard_normal((3, 8, 12, 12)).astype(dtype)
    w = rng.standard_normal((16, 8, 3, 3)).astype(dtype)
    b = rng.standard_normal(16).astype(dtype)
    conv = Convolution2D(kernel_size=3, out_channels=16, padding=1)
    pm = ml.compile(conv, ml.MlirBackend(num_threads=threads, dtype=getattr(ml, dtype)),
                    shapes={"input": list(x.shape)},
                    cpu_options=None if target == "host" else {"target_cpu": target})
    tx, tw = (torch.tensor(v.astype(np.float64), requires_grad=True) for v in (x, w))
    y = F.conv2d(tx, tw, torch.tensor(b.astype(np.float64)), padding=1)
    seed = rng.standard_normal(tuple(y.shape))
    y.backward(torch.tensor(seed))
    _, grads = pm.evaluate({"input": x, "weight": w, "bias": b},
                           output_gradients={"output": seed.astype(dtype)})
    ref = tw.grad.numpy()
    eps = 1e-6 if dtype == "float32" else 1e-14
    # 3 x 144 products a weight, each within a few ulps.
    np.testing.assert_allclose(grads["weight"], ref, rtol=0,
                               atol=eps * np.sqrt(3 * 144) * np.abs(ref).max() * 8)
