# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""Regression tests for wrong answers and crashes found by trying the package
as a user would (issue 15): each test names what used to go wrong."""

import numpy as np
import pytest

import mithril as ml
from mithril.models import (Add, Concat, Convolution2D, CrossEntropy, Embedding, LayerNorm,
                            Linear, MatrixMultiply, Max, Mean, Model, Multiply, PermuteTensor,
                            PolynomialFeatures, Prod, Relu, Reshape, Sigmoid, Slice, Softmax,
                            Sum, Transpose, Variance)


def _single(cls, shape, dtype=ml.float32, **kwargs):
    m = Model()
    m |= cls(**kwargs).connect(input="input", output="output")
    return ml.compile(m, ml.MlirBackend(dtype=dtype), shapes={"input": shape}, inference=True)


@pytest.mark.parametrize("cls,ref", [(Sum, np.sum), (Mean, np.mean), (Variance, np.var)])
def test_float32_reductions_are_accurate(cls, ref):
    # A float32 running sum of 10^6 values near 1000 gave a mean of 1010
    # instead of 1000.5 and a variance of 90 instead of 0.083.
    n = 10**7
    x = (1000 + np.random.default_rng(0).random(n)).astype(np.float32)
    out = float(_single(cls, [n]).evaluate({}, {"input": x})["output"])
    want = ref(x.astype(np.float64))
    assert abs(out - want) <= 1e-5 * abs(want), (out, want)


@pytest.mark.parametrize("shape,axis", [([7, 3000], 1), ([3000, 5], 0), ([4, 5, 2048], (0, 2))])
def test_float32_partial_reductions_are_accurate(shape, axis):
    # Long rows take the lane-split path, short ones the plain one; both
    # accumulate in f64.
    x = (100 + np.random.default_rng(1).standard_normal(shape)).astype(np.float32)
    for cls, ref in ((Sum, np.sum), (Mean, np.mean), (Variance, np.var)):
        out = _single(cls, shape, axis=axis).evaluate({}, {"input": x})["output"]
        want = ref(x.astype(np.float64), axis=axis)
        np.testing.assert_allclose(out, want, rtol=1e-6, atol=1e-6)


def _softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


@pytest.mark.parametrize("shape", [[None, None, None], [2, 3, 4], [1, 5, 1], [1, 1, 1]])
@pytest.mark.parametrize("axis", [0, 1, 2, -1])
def test_softmax_and_keepdim_sums_on_any_shape(shape, axis):
    # Softmax(axis=1 or 2) and Sum(axis=0, keepdim=True) on an all-dynamic
    # rank-3 input crashed the compiler; on [1, 5, 1] they were rejected
    # ("'memref.expand_shape' op invalid output shape"): the reduced unit
    # dimension was put back at the wrong place.
    x = np.random.default_rng(2).standard_normal(
        [d if d is not None else 2 + i for i, d in enumerate(shape)])
    pm = _single(Softmax, shape, dtype=ml.float64, axis=axis)
    np.testing.assert_allclose(pm.evaluate({}, {"input": x})["output"], _softmax(x, axis),
                               rtol=1e-12, atol=1e-15)
    pm = _single(Sum, shape, dtype=ml.float64, axis=axis, keepdim=True)
    np.testing.assert_allclose(pm.evaluate({}, {"input": x})["output"],
                               x.sum(axis=axis, keepdims=True), rtol=1e-12, atol=1e-15)


def test_reshape_of_dynamic_input_feeding_linear():
    # Reshape(-1) of a dynamic input feeding a Linear crashed: fusion split the
    # weight's dynamic size into two.
    m = Model()
    m |= Reshape(shape=(-1,)).connect(input="input", output="r")
    m |= Linear(3).connect(input="r", output="output")
    pm = ml.compile(m, ml.MlirBackend(dtype=ml.float64), shapes={"input": [None, None]},
                    inference=True)
    rng = np.random.default_rng(3)
    for rows, cols in ((6, 4), (2, 5)):
        x, w, b = rng.random((rows, cols)), rng.random((3, rows * cols)), rng.random(3)
        out = pm.evaluate({"linear_0.weight": w, "linear_0.bias": b}, {"input": x})["output"]
        np.testing.assert_allclose(out, x.reshape(-1) @ w.T + b, rtol=1e-12)


@pytest.mark.parametrize("shapes", [{"input": [0, 4]}, {"input": [None, 4]}])
def test_empty_batch_through_linear_forward_and_backward(shapes):
    # A size-0 dimension segfaulted in the matmul's tile computation.
    m = Model()
    m |= Linear(3).connect(input="input", output="output")
    pm = ml.compile(m, ml.MlirBackend(dtype=ml.float64), shapes=shapes)
    params = pm.randomize_params()
    out, grads = pm.evaluate(params, {"input": np.zeros((0, 4))},
                             output_gradients={"output": np.zeros((0, 3))})
    assert out["output"].shape == (0, 3)
    for name, g in grads.items():
        assert g.shape == params[name].shape and not g.any()


def test_empty_contraction_and_reductions():
    # A sum over nothing is 0, a mean over nothing NaN (numpy's answer).
    m = Model()
    m |= MatrixMultiply().connect(left="input", right="w", output="output")
    pm = ml.compile(m, ml.MlirBackend(dtype=ml.float64), shapes={"input": [3, 0], "w": [0, 4]},
                    inference=True)
    assert (pm.evaluate({}, {"input": np.zeros((3, 0)), "w": np.zeros((0, 4))})["output"]
            == np.zeros((3, 4))).all()
    x = np.zeros((0, 4))
    assert (_single(Sum, [0, 4], dtype=ml.float64, axis=0).evaluate({}, {"input": x})["output"]
            == np.zeros(4)).all()
    assert np.isnan(
        _single(Mean, [0, 4], dtype=ml.float64, axis=0).evaluate({}, {"input": x})["output"]).all()


def test_sum_over_an_empty_batch_read_only_by_an_empty_op():
    # diff-fuzz seed 2828 trial 1193: the sum's zero fill lost its only
    # reader when the empty ops were folded, and the CPU schedule then read
    # past the end of its (empty) list of users: a segmentation fault.
    from mithril.models import Equal
    m = Model()
    m |= Sum(axis=0).connect(input="t3", output="t4")
    m |= Equal().connect(left="t4", right="t0", output=ml.IOKey("t5"))
    pm = ml.compile(m, ml.MlirBackend(dtype=ml.float64),
                    shapes={"t3": [0, 1, 1, 1], "t0": [0, 1, 1, 1]}, inference=True)
    out = pm.evaluate({}, {"t3": np.zeros((0, 1, 1, 1)), "t0": np.zeros((0, 1, 1, 1))})["t5"]
    assert np.asarray(out).shape == (0, 1, 1, 1)


@pytest.mark.parametrize("source,target", [((1, 5, 1), (5, 5, 1)), ((1, 7, 2), (3, 7, 2)),
                                           ((1, 3, 1, 1), (4, 3, 2, 1)), ((2, 1, 2, 2), (2, 7, 2, 2))])
def test_broadcast_along_a_loop_joined_to_a_small_tile(source, target):
    # diff-fuzz seed 1515 trial 308: a broadcast whose last loops fit one
    # tile whole had the loops before them joined to the tile, and the
    # vectorized read of the operand broadcast along them came out
    # transposed ([1, 5, 1] to [5, 5, 1]: each row was one value).
    from mithril.models import BroadcastTo
    m = Model()
    m |= BroadcastTo(shape=list(target)).connect(input="input", output="output")
    pm = ml.compile(m, ml.MlirBackend(dtype=ml.float32, num_threads=1),
                    shapes={"input": list(source)}, inference=True)
    x = np.arange(np.prod(source), dtype=np.float32).reshape(source)
    np.testing.assert_array_equal(pm.evaluate({}, {"input": x})["output"],
                                  np.broadcast_to(x, target))


@pytest.mark.parametrize("sizes", [((1, 4), (3, 4)), ((3, 4), (1, 4)), ((1, 4), (3, 1)),
                                   ((3, 4), (3, 4)), ((1, 1), (1, 1))])
def test_dynamic_sizes_broadcast_at_run_time(sizes):
    # Two dynamic sizes meeting in a broadcast, one of them 1 at run time:
    # the dynamic code returned uninitialised memory.
    m = Model()
    m |= Add().connect(left="input", right="b", output="output")
    pm = ml.compile(m, ml.MlirBackend(dtype=ml.float64),
                    shapes={"input": [None, None], "b": [None, None]}, inference=True)
    rng = np.random.default_rng(4)
    a, b = rng.random(sizes[0]), rng.random(sizes[1])
    np.testing.assert_array_equal(pm.evaluate({}, {"input": a, "b": b})["output"], a + b)


def test_dynamic_sizes_that_cannot_broadcast_are_an_error():
    m = Model()
    m |= Add().connect(left="input", right="b", output="output")
    pm = ml.compile(m, ml.MlirBackend(dtype=ml.float64),
                    shapes={"input": [None, 4], "b": [None, 4]}, inference=True)
    with pytest.raises(ml.MithrilError, match="cannot broadcast"):
        pm.evaluate({}, {"input": np.ones((2, 4)), "b": np.ones((3, 4))})


def _lookup(num_embeddings=5):
    m = Model()
    m |= Embedding(num_embeddings=num_embeddings, dim=3).connect(input="input", output="output")
    return ml.compile(m, ml.MlirBackend(dtype=ml.float32), shapes={"input": [4]}, inference=True)


@pytest.mark.parametrize("bad", [5, -1, 10**6])
def test_embedding_index_out_of_range_is_an_error(bad):
    # Index 5 of 5 rows or -1 returned rows of garbage memory.
    pm = _lookup()
    params = pm.randomize_params()
    ids = np.array([0, 4, 2, 1])
    np.testing.assert_array_equal(pm.evaluate(params, {"input": ids})["output"],
                                  next(iter(params.values()))[ids])
    ids[1] = bad
    with pytest.raises(ml.MithrilError, match=rf"terminal 'input' is {bad}, outside \[0, 5\)"):
        pm.evaluate(params, {"input": ids})


@pytest.mark.parametrize("bad", [4, -2])
def test_cross_entropy_class_out_of_range_is_an_error(bad):
    # An out-of-range class index gave a finite loss.
    m = Model()
    m |= CrossEntropy().connect(input="input", target="target", output="output")
    pm = ml.compile(m, ml.MlirBackend(dtype=ml.float64), shapes={"input": [3, 4], "target": [3]},
                    inference=True)
    x = np.random.default_rng(5).standard_normal((3, 4))
    with pytest.raises(ml.MithrilError, match=rf"terminal 'target' is {bad}, outside \[0, 4\)"):
        pm.evaluate({}, {"input": x, "target": np.array([0, bad, 1])})


def test_permute_tensor_index_out_of_range_is_an_error():
    m = Model()
    m |= PermuteTensor().connect(input="input", indices="indices", output="output")
    pm = ml.compile(m, ml.MlirBackend(dtype=ml.float64), shapes={"input": [3, 2], "indices": [3]},
                    inference=True)
    x = np.arange(6.0).reshape(3, 2)
    np.testing.assert_array_equal(
        pm.evaluate({}, {"input": x, "indices": np.array([2, 0, 1])})["output"], x[[2, 0, 1]])
    with pytest.raises(ml.MithrilError, match=r"terminal 'indices' is 9, outside \[0, 3\)"):
        pm.evaluate({}, {"input": x, "indices": np.array([0, 9, 1])})


@pytest.mark.parametrize("threads", [1, 2])
def test_unallocatable_temporary_is_a_memory_error(threads):
    # A temporary that cannot be allocated segfaulted silently. This one,
    # 10^7 x 10^7 floats, is larger than any address space.
    n = 10**7
    m = Model()
    m |= MatrixMultiply().connect(left="input", right="b", output="p")
    m |= Sum().connect(input="p", output="output")
    pm = ml.compile(m, ml.MlirBackend(dtype=ml.float32, num_threads=threads),
                    shapes={"input": [n, 1], "b": [1, n]}, inference=True)
    a, b = np.ones((n, 1), np.float32), np.ones((1, n), np.float32)
    with pytest.raises(MemoryError, match="400000000000000 bytes"):
        pm.evaluate({}, {"input": a, "b": b})
    # The process goes on: the same model still runs on what fits.
    small = _single(Sum, [3], dtype=ml.float64)
    assert small.evaluate({}, {"input": np.ones(3)})["output"] == 3.0


def test_dynamic_size_next_to_a_static_one_stays_dynamic():
    # [None, 4] + [3, 4] pinned the None to 3, and batch 1 was refused.
    m = Model()
    m |= Add().connect(left="input", right="b", output="output")
    pm = ml.compile(m, ml.MlirBackend(dtype=ml.float64), shapes={"input": [None, 4], "b": [3, 4]},
                    inference=True)
    b = np.arange(12.0).reshape(3, 4)
    for rows in (1, 3):
        a = np.random.default_rng(rows).random((rows, 4))
        np.testing.assert_array_equal(pm.evaluate({}, {"input": a, "b": b})["output"], a + b)
    with pytest.raises(ml.MithrilError, match="cannot broadcast"):
        pm.evaluate({}, {"input": np.ones((2, 4)), "b": b})


# Found by the differential fuzzer (fuzz/diff_fuzz.py) against torch.


@pytest.mark.parametrize("cls", [Sum, Mean, Prod, Max])
def test_reduction_of_a_0d_tensor_broadcast_into_a_vector(cls):
    # Mean(s[]) + v[3] gave [11, 22, 33] for s = 10, v = [1, 2, 3]: the
    # reduction over no axes, fused into the broadcasting add, was kept as a
    # result written once per element and accumulated.
    m = Model()
    m |= cls().connect(input="s", output="r")
    m |= Add().connect(left="r", right="v", output="output")
    pm = ml.compile(m, ml.MlirBackend(), shapes={"s": [], "v": [3]}, inference=True)
    out = pm.evaluate({}, {"s": np.array(10.0, np.float32),
                           "v": np.array([1, 2, 3], np.float32)})["output"]
    np.testing.assert_array_equal(out, [11, 12, 13])


@pytest.mark.parametrize("axis", [None, 0, 1])
def test_prod_gradient_with_zeros(axis):
    # The gradient of Prod was prod / x: NaN where an element is 0. With one
    # zero in a reduced group it is the product of the others at the zero,
    # with two it is 0.
    torch = pytest.importorskip("torch")
    x = np.array([[1.0, 2, 3, 4], [0, 2, 3, 4], [0, 0, 3, 4]])
    m = Model()
    m |= Prod(axis=axis).connect(input="w", output="output")
    pm = ml.compile(m, ml.MlirBackend(dtype=ml.float64), shapes={"w": [3, 4]},
                    trainable_keys={"w"})
    seed = np.arange(1.0, 1.0 + np.prod(pm.shapes["output"])).reshape(pm.shapes["output"])
    _, grads = pm.evaluate({"w": x}, output_gradients={"output": seed})
    t = torch.tensor(x, requires_grad=True)
    r = t.prod() if axis is None else t.prod(axis)
    r.backward(torch.tensor(seed))
    np.testing.assert_allclose(grads["w"], t.grad.numpy(), rtol=1e-12)


def test_transpose_with_negative_axes():
    # Transpose(axes=[-1, 0, 1]) segfaulted: the lowering used the axes as
    # given, without counting the negative ones from the end.
    x = np.random.default_rng(3).standard_normal((2, 3, 4))
    pm = _single(Transpose, [2, 3, 4], dtype=ml.float64, axes=[-1, 0, 1])
    np.testing.assert_array_equal(pm.evaluate({}, {"input": x})["output"],
                                  np.transpose(x, (2, 0, 1)))


@pytest.mark.parametrize("shape", [[1, 0], [0, 3], [2, 0]])
def test_polynomial_features_without_columns_or_rows(shape):
    # PolynomialFeatures of an [N, 0] input aborted the process (LLVM ERROR:
    # a concat of no monomials).
    x = np.zeros(shape)
    pm = _single(PolynomialFeatures, shape, dtype=ml.float64, degree=2)
    out = pm.evaluate({}, {"input": x})["output"]
    d = shape[1]
    assert out.shape == (shape[0], d + d * (d + 1) // 2)


@pytest.mark.parametrize("start,stop,step", [(1, 5, 1), (0, 0, 1), (3, 1, 1), (-9, 9, 2),
                                             (5, 9, 1), (0, 9, 3)])
@pytest.mark.parametrize("dynamic", [False, True])
def test_slice_any_range(start, stop, step, dynamic):
    # An empty static slice was rejected ("offset 1 is out-of-bounds: 1 >=
    # 1"), a slice of a dynamic dimension was not lowered at all.
    x = np.arange(15.0).reshape(5, 3)
    pm = _single(Slice, [None, 3] if dynamic else [5, 3], dtype=ml.float64, start=start,
                 stop=stop, step=step)
    np.testing.assert_array_equal(pm.evaluate({}, {"input": x})["output"], x[start:stop:step])


@pytest.mark.parametrize("sizes", [[0, 2], [2, 0], [0, 0]])
def test_concat_with_empty_operands(sizes):
    # A concat with an operand of size 0 along the axis was rejected, forward
    # and backward ("offset 0 is out-of-bounds: 0 >= 0").
    rng = np.random.default_rng(4)
    a, b = rng.standard_normal((sizes[0], 3)), rng.standard_normal((sizes[1], 3))
    m = Model()
    m |= Concat(n=2, axis=0).connect(input1="a", input2="b", output="output")
    pm = ml.compile(m, ml.MlirBackend(dtype=ml.float64),
                    shapes={"a": [sizes[0], 3], "b": [sizes[1], 3]}, trainable_keys={"a", "b"})
    seed = rng.standard_normal((sum(sizes), 3))
    out, grads = pm.evaluate({"a": a, "b": b}, output_gradients={"output": seed})
    np.testing.assert_array_equal(out["output"], np.concatenate([a, b]))
    np.testing.assert_array_equal(grads["a"], seed[:sizes[0]])
    np.testing.assert_array_equal(grads["b"], seed[sizes[0]:])


def _conv_reference(x, w, b, stride, padding, seed):
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    tx, tw, tb = (torch.tensor(v, requires_grad=True) for v in (x, w, b))
    p = padding
    r = F.conv2d(F.pad(tx, (p, p, p, p)), tw, tb, stride=stride)
    r.backward(torch.tensor(seed))
    return r.detach().numpy(), tx.grad.numpy(), tw.grad.numpy(), tb.grad.numpy()


@pytest.mark.parametrize("channels", [1, 3])
@pytest.mark.parametrize("batch,height,width,kernel,stride,padding", [
    (1, 2, 2, (2, 1), 3, 0),   # a stride longer than the kernel: rejected; with
                               # one channel, a 0-d strided read reached LLVM
    (2, 1, 1, (1, 1), 2, 1),   # stride 2, padding 1 on 1x1: rejected
    (2, 5, 4, (3, 1), 3, 1),
    (0, 1, 1, (1, 1), 1, 2),   # batch 0: the gradient was rejected
    (2, 0, 1, (2, 3), 1, 1),   # no rows: the gradient aborted (LLVM ERROR)
    (2, 1, 0, (1, 1), 1, 1),   # no columns: the output is the bias alone
])
def test_convolution_strides_and_empty_inputs(batch, height, width, kernel, stride, padding,
                                              channels):
    rng = np.random.default_rng(5)
    m = Model()
    m |= Convolution2D(kernel_size=kernel, out_channels=channels, stride=stride,
                       padding=padding).connect(input="x", output="output")
    pm = ml.compile(m, ml.MlirBackend(dtype=ml.float64), shapes={"x": [batch, channels, height, width]},
                    trainable_keys={"x"})
    params = pm.randomize_params(0)
    params["x"] = rng.standard_normal((batch, channels, height, width))
    seed = rng.standard_normal(pm.shapes["output"])
    out, grads = pm.evaluate(params, output_gradients={"output": seed})
    w = next(k for k in params if k.endswith("weight"))
    b = next(k for k in params if k.endswith("bias"))
    ref, dx, dw, db = _conv_reference(params["x"], params[w], params[b].reshape(-1), stride,
                                      padding, seed)
    np.testing.assert_allclose(out["output"], ref, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(grads["x"], dx, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(grads[w], dw, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(grads[b].reshape(-1), db, rtol=1e-12, atol=1e-12)


def test_layer_norm_over_a_last_axis_of_one():
    # LayerNorm of [.., 1] was rejected: "input 'weight' has shape ? after
    # shape inference" (x * weight with x's last size 1 fixes no size).
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(6).standard_normal((2, 3, 1))
    m = Model()
    m |= LayerNorm().connect(input="input", output="output")
    pm = ml.compile(m, ml.MlirBackend(dtype=ml.float64), shapes={"input": [2, 3, 1]})
    params = pm.randomize_params(0)
    assert pm.shapes[next(k for k in params if k.endswith("weight"))] == (1,)
    ref = torch.nn.functional.layer_norm(torch.tensor(x), (1,), eps=1e-5).numpy()
    w, b = (params[next(k for k in params if k.endswith(s))] for s in ("weight", "bias"))
    np.testing.assert_allclose(pm.evaluate(params, {"input": x})["output"], ref * w + b,
                               atol=1e-12)


@pytest.mark.parametrize("shape,given", [([4, 3], [4, None]), ([4, 0, 2], [4, 0, 2]),
                                         ([4, 2, 3], [None, 2, 3]), ([4, 0], [4, 0])])
def test_permute_tensor_dynamic_and_empty_rows(shape, given):
    # PermuteTensor of [1, None] was rejected ("needs trailing dimensions
    # known") though a matrix needs no reshape; rows of 0 elements were
    # reshaped to [-1, 0], which has no answer.
    x = np.random.default_rng(7).random(shape)
    indices = np.array([3, 1, 0, 2])
    m = Model()
    m |= PermuteTensor().connect(input="x", indices="i", output="output")
    pm = ml.compile(m, ml.MlirBackend(dtype=ml.float64), shapes={"x": given, "i": [4]},
                    inference=True)
    np.testing.assert_array_equal(pm.evaluate({}, {"x": x, "i": indices})["output"], x[indices])


@pytest.mark.parametrize("cls,name", [("MaxPool2D", "max_pool2d"), ("AvgPool2D", "avg_pool2d")])
@pytest.mark.parametrize("kernel,stride,padding", [(2, 2, 0), (3, 1, 1), (2, 3, 1)])
def test_pooling_with_dynamic_spatial_sizes(cls, name, kernel, stride, padding):
    # Pooling of [None, C, None, None] was not lowered ("failed to legalize
    # 'mithril.max_pool2d'"): the output's spatial sizes are now computed at
    # run time.
    torch = pytest.importorskip("torch")
    import mithril.models as models
    m = Model()
    m |= getattr(models, cls)(kernel_size=kernel, stride=stride,
                              padding=padding).connect(input="x", output="output")
    pm = ml.compile(m, ml.MlirBackend(dtype=ml.float64), shapes={"x": [None, 2, None, None]},
                    inference=True)
    for shape in [(1, 2, 5, 7), (3, 2, 4, 4), (2, 2, 2, 3)]:
        x = np.random.default_rng(8).random(shape)
        ref = getattr(torch.nn.functional, name)(torch.tensor(x), kernel, stride, padding)
        np.testing.assert_allclose(pm.evaluate({}, {"x": x})["output"], ref.numpy(), rtol=1e-12)


@pytest.mark.parametrize("cls,kwargs,given,shape,ref", [
    ("Flatten", {}, [None, 0, 1], (3, 0, 1), lambda x: x.reshape(0)),
    ("Flatten", {"start_dim": 1}, [None, 0, 2], (3, 0, 2), lambda x: x.reshape(3, 0)),
    ("Flatten", {"start_dim": 1}, [None, None, None], (2, 3, 4), lambda x: x.reshape(2, 12)),
    ("Flatten", {"start_dim": 1, "end_dim": 2}, [None, 2, None, 5], (3, 2, 4, 5),
     lambda x: x.reshape(3, 8, 5)),
    ("Unsqueeze", {"axis": 3}, [None, 1, 2], (3, 1, 2), lambda x: x[..., None]),
    ("Unsqueeze", {"axis": -1}, [None, None], (3, 1), lambda x: x[..., None]),
    ("Squeeze", {}, [None, 1, 2], (3, 1, 2), lambda x: x.reshape(3, 2)),
    ("Squeeze", {"axis": 1}, [None, 1, None], (3, 1, 4), lambda x: x.reshape(3, 4)),
])
def test_dynamic_reshapes(cls, kwargs, given, shape, ref):
    # Dynamic Flatten of [None, 0, 1] and Unsqueeze of [None, 1, 2] were
    # rejected by the memref reshape verifiers; Flatten(start_dim=1) of an
    # all-dynamic input and Unsqueeze(-1) of [None, None] segfaulted the
    # compiler (an expand with two dynamic sizes in one group).
    import mithril.models as models
    x = np.random.default_rng(9).random(shape)
    m = Model()
    m |= getattr(models, cls)(**kwargs).connect(input="x", output="output")
    pm = ml.compile(m, ml.MlirBackend(dtype=ml.float64), shapes={"x": given}, inference=True)
    want = ref(x)
    out = pm.evaluate({}, {"x": x})["output"]
    assert out.shape == want.shape
    np.testing.assert_array_equal(out, want)


def test_unknown_shapes_key_is_a_key_error():
    # A misspelled key in shapes= came back as a MithrilError from the C++
    # shape pass with a mithril-opt reproducer, not as the front end's
    # KeyNotFoundError naming the model's inputs.
    m = Model()
    m |= Linear(4).connect(input="x", output="y")
    with pytest.raises(ml.KeyNotFoundError, match="'bogus' is not an input.*'x'"):
        ml.compile(m, ml.MlirBackend(), shapes={"x": [2, 3], "bogus": [3]})
    pm = ml.compile(m, ml.MlirBackend(), shapes={"x": [2, 3], "linear_0.weight": [4, 3]})
    assert pm.shapes["linear_0.bias"] == (4,)


@pytest.mark.parametrize("use_scale,use_bias", [(True, True), (False, True), (True, False)])
def test_layer_norm_weight_has_the_last_axis_size(use_scale, use_bias):
    # LayerNorm of [N, 1] followed by a broadcast against [N, 2] gave the
    # weight and bias 2 entries (a broadcasting multiply let them widen the
    # axis); torch's and Mithril's LayerNorm have one per normalized entry.
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(10)
    m = Model()
    m |= LayerNorm(use_scale=use_scale, use_bias=use_bias).connect(input="x", output="n")
    m |= Add().connect(left="n", right="y", output="output")
    pm = ml.compile(m, ml.MlirBackend(dtype=ml.float64), shapes={"x": [3, 1], "y": [3, 2]})
    params = pm.randomize_params(0)
    assert all(pm.shapes[k] == (1,) for k in params)
    x, y = rng.standard_normal((3, 1)), rng.standard_normal((3, 2))
    ref = torch.nn.functional.layer_norm(torch.tensor(x), (1,), eps=1e-5).numpy()
    if use_scale:
        ref = ref * params[next(k for k in params if k.endswith("weight"))]
    if use_bias:
        ref = ref + params[next(k for k in params if k.endswith("bias"))]
    np.testing.assert_allclose(pm.evaluate(params, {"x": x, "y": y})["output"], ref + y,
                               atol=1e-12)


def test_polynomial_features_with_a_dynamic_column_count():
    # Found by the differential fuzzer (seed 2026, trial 10802): a dynamic
    # column count failed to legalize. At degree 1 the monomials are the
    # columns; above it their number must be static, a clear error on the op.
    from mithril.models import PolynomialFeatures
    m = Model()
    m |= PolynomialFeatures(degree=1).connect(input="x", output="y")
    pm = ml.compile(m, ml.MlirBackend(dtype=ml.float64), shapes={"x": [2, None]})
    for cols in (1, 3, 0):
        x = np.arange(2.0 * cols).reshape(2, cols)
        np.testing.assert_array_equal(pm.evaluate({}, {"x": x})["y"], x)
    m = Model()
    m |= PolynomialFeatures(degree=2).connect(input="x", output="y")
    with pytest.raises(ml.MithrilError, match="polynomial_features' op needs a static number "
                                              "of feature columns at degree 2"):
        ml.compile(m, ml.MlirBackend(), shapes={"x": [2, None]})


def test_a_failed_connection_leaves_the_model_as_it_was():
    # Found running the user guide's optimization examples in one model: a
    # `|=` that failed ("already has a producer") had registered its inputs
    # first, and every later use of the model raised IndexError.
    model = Model()
    model |= Linear(4).connect(input="input", output="hidden")
    model |= Relu().connect(input="hidden", output="out")
    layer = Linear(4)
    with pytest.raises(ml.MithrilError, match="'hidden' already has a producer"):
        model |= layer.connect(input="input", output="hidden")
    assert layer.parent is None and len(model.submodels) == 2
    pm = ml.compile(model, ml.MlirBackend(dtype=ml.float64), shapes={"input": [2, 3]})
    assert pm.output_keys == ["out"]
    # The layer that failed can be added elsewhere.
    model |= layer.connect(input="out", output="h2")
    pm = ml.compile(model, ml.MlirBackend(dtype=ml.float64), shapes={"input": [2, 3]})
    assert pm.output_keys == ["h2"]


def test_reshape_of_a_dynamic_empty_slice_to_a_static_zero():
    # Found by the fuzzer campaign (seed 2026, trial 16109): an empty slice of
    # a dynamic axis reshaped to [2, 0] failed in tensor.expand_shape (a
    # dynamic source expands into no group with a static 0).
    torch = pytest.importorskip("torch")
    m = Model()
    m |= Slice(axis=0, start=5, stop=0, step=2).connect(input="x", output="t0")
    m |= Softmax(axis=-1).connect(input="t0", output="t1")
    m |= Reshape(shape=[2, 0]).connect(input="t1", output="y")
    pm = ml.compile(m, ml.MlirBackend(dtype=ml.float64), shapes={"x": [None]})
    for n in (3, 7):
        x = np.arange(float(n))
        want = torch.softmax(torch.tensor(x)[5:0:2], -1).reshape(2, 0).numpy()
        assert pm.evaluate({}, {"x": x})["y"].shape == want.shape == (2, 0)


@pytest.mark.parametrize("width", [1, 5])
def test_layer_norm_gradient_is_one_expression(width):
    # Found by the fuzzer campaign (seed 2026, trial 29630): LayerNorm over an
    # axis of 1 after a Multiply, float32. Its gradient is 0, but
    # differentiating the decomposition summed cancelling contributions in an
    # order that left 1e-5 of rounding (amplified by 1 / sqrt(eps)) in the
    # input's gradient. layer_norm now has its own vector-Jacobian product.
    torch = pytest.importorskip("torch")
    m = Model()
    m |= Multiply().connect(left="a", right="b", output=ml.IOKey("t0", expose=True))
    m |= LayerNorm().connect(input="t0", output="t1")
    shapes = {"a": [3, width], "b": [3, width]}
    for dtype, tol in ((ml.float32, 1e-6), (ml.float64, 1e-12)):
        pm = ml.compile(m, ml.MlirBackend(dtype=dtype), shapes=shapes, trainable_keys=["a"])
        rng = np.random.default_rng(width)
        params = {k: (v + 1).astype(dtype) for k, v in pm.randomize_params(1).items()}
        data = {k: rng.standard_normal(s).astype(dtype) for k, s in shapes.items()}
        seeds = {k: rng.standard_normal((3, width)).astype(dtype) for k in ("t0", "t1")}
        _, grads = pm.evaluate({**params, "a": data["a"]}, {"b": data["b"]},
                               output_gradients=seeds)
        t = {k: torch.tensor(v, dtype=torch.float64, requires_grad=True)
             for k, v in {**params, **data}.items()}
        t0 = t["a"] * t["b"]
        w = next(k for k in params if k.endswith("weight"))
        t1 = torch.nn.functional.layer_norm(t0, (width,), t[w], t[w[:-6] + "bias"], eps=1e-5)
        (t0 * torch.tensor(seeds["t0"], dtype=torch.float64)).sum().add(
            (t1 * torch.tensor(seeds["t1"], dtype=torch.float64)).sum()).backward()
        for k in grads:
            ref = t[k].grad.numpy()
            assert np.max(np.abs(grads[k] - ref)) <= tol * max(1.0, np.max(np.abs(ref))), k


@pytest.mark.parametrize("value", [-1.4194348, 0.1, 3.0e4])
def test_layer_norm_of_equal_values_is_zero(value):
    # Found by the fuzzer (seed 2121, trial 1269): LayerNorm of a broadcast
    # scalar, float32. The mean of [x, x, x] rounded off x by an ulp, and
    # (x - mean) / sqrt(var + eps) gave that ulp times 1 / sqrt(eps) (3.6e-5,
    # the weight's gradient too) where torch gives 1e-7. The mean is now
    # corrected by the mean of what it leaves: the row centers to zeros.
    m = Model()
    m |= LayerNorm(use_bias=False).connect(input="x", output=ml.IOKey("y"))
    pm = ml.compile(m, ml.MlirBackend(dtype=ml.float32), shapes={"x": [2, 3]})
    params = {k: np.array([0.5, -1.0, 2.0], np.float32) for k in pm.trainable_keys}
    x = np.full((2, 3), value, np.float32)
    out, grads = pm.evaluate(params, {"x": x},
                             output_gradients={"y": np.ones((2, 3), np.float32)})
    assert np.max(np.abs(out["y"])) <= 1e-6
    for k, g in grads.items():
        assert np.max(np.abs(g)) <= 1e-6, k


def test_convolution_with_a_dynamic_spatial_size_is_a_clear_error():
    # Seed 2026 trial 86294: "failed to legalize" alone did not say why.
    from mithril.models import Convolution2D
    model = Model()
    model |= Convolution2D(kernel_size=3, out_channels=2)(input="input", output="output")
    with pytest.raises(ml.MithrilError, match="needs static spatial sizes.*only the batch size"):
        pm = ml.compile(model, ml.MlirBackend(), shapes={"input": [None, 1, None, 8]})
        pm.evaluate(pm.randomize_params(), {"input": np.ones((1, 1, 5, 8), np.float32)})


def test_squeeze_of_a_dynamic_size_that_is_one_says_why():
    # Seed 2026 trial 77154: a size computed from a dynamic one is 1 at run
    # time, which changes a Squeeze()'s rank from the compiled one.
    from mithril.models import Squeeze
    model = Model()
    model |= Squeeze()(input="input", output="output")
    pm = ml.compile(model, ml.MlirBackend(), shapes={"input": [None, 1]})
    assert pm.evaluate({}, {"input": np.ones((3, 1), np.float32)})["output"].shape == (3,)
    with pytest.raises(ml.MithrilError, match="change its rank here"):
        pm.evaluate({}, {"input": np.ones((1, 1), np.float32)})


@pytest.mark.parametrize("batch,length,channels,out_channels,stride,padding", [
    (1, 5, 2, 1, 2, 0),    # the whole output in one register tile (Mithril's test_conv1d_3)
    (1, 5, 2, 1, 1, 1),
    (2, 9, 3, 4, 1, 0),
    (3, 40, 5, 17, 2, 1),  # tiles and remainders
])
def test_small_convolutions_start_from_zero_once(batch, length, channels, out_channels, stride,
                                                 padding):
    # With the output's zero fill fused into the convolution's output tiles,
    # an output small enough to be one tile had its fill moved into the
    # reduction loops: it was zeroed before every kernel position.
    import torch
    from mithril.models import Convolution1D
    rng = np.random.default_rng(3)
    x = rng.standard_normal((batch, channels, length))
    w = rng.standard_normal((out_channels, channels, 3))
    for conv, ref, xs, ws in (
            (Convolution1D, torch.nn.functional.conv1d, x, w),
            (Convolution2D, torch.nn.functional.conv2d, x[..., None].repeat(3, -1),
             w[..., None].repeat(3, -1))):
        m = conv(kernel_size=3, out_channels=out_channels, stride=stride, padding=padding,
                 use_bias=False)
        pm = ml.compile(m, ml.MlirBackend(dtype=ml.float64), data_keys={"input"},
                        shapes={"input": list(xs.shape), "weight": list(ws.shape)})
        out = pm.evaluate({"weight": ws}, {"input": xs})["output"]
        want = ref(torch.tensor(xs), torch.tensor(ws), stride=stride, padding=padding).numpy()
        np.testing.assert_allclose(out, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("dtype", [ml.float32, ml.float64])
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("rows, depth, target_cpu", [(1024, 2048, ""), (1032, 1280, ""),
                                                     (2048, 1040, ""), (1026, 2048, "haswell")])
def test_products_of_many_rows_and_deep_reductions(dtype, threads, rows, depth, target_cpu):
    # A column block of these results fills a 1 MiB L2: the reduction blocks
    # deepen to 1024 steps (2048: two blocks; 1280 and 1040: a divisor),
    # rows and columns split at the tiles' multiples (AVX2's 6-row tiles too).
    rng = np.random.default_rng(rows + depth)
    np_type = np.float32 if dtype == ml.float32 else np.float64
    a = rng.standard_normal((rows, depth)).astype(np_type)
    b = rng.standard_normal((depth, 272)).astype(np_type)
    m = Model()
    m |= MatrixMultiply().connect(left="input", right="b", output="output")
    pm = ml.compile(m, ml.MlirBackend(dtype=dtype, num_threads=threads),
                    shapes={"input": [rows, depth], "b": [depth, 272]}, inference=True,
                    cpu_options={"target_cpu": target_cpu} if target_cpu else None)
    out = pm.evaluate({}, {"input": a, "b": b})["output"]
    expected = a.astype(np.float64) @ b.astype(np.float64)
    error = np.linalg.norm(out - expected) / np.linalg.norm(expected)
    assert error < (1e-6 if dtype == ml.float32 else 1e-14)


@pytest.mark.parametrize("target_cpu", ["", "haswell"])
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("rows", [100, 250, 256])
@pytest.mark.parametrize("dtype", [ml.float32, ml.float64])
def test_row_remainders_of_packed_products(target_cpu, threads, rows, dtype):
    # Rows no register tile divides (8-row tiles with AVX-512, 6 with AVX2)
    # are split off each packed block's product and read the same packed
    # block of the weight (a Linear's, transposed, and a plain right operand).
    rng = np.random.default_rng(rows)
    np_type = np.float32 if dtype == ml.float32 else np.float64
    m = Model()
    m |= Linear(512)(input="input", output="hidden")
    m |= Relu()(input="hidden", output="h")
    m |= MatrixMultiply().connect(left="h", right="b", output=ml.IOKey("output"))
    pm = ml.compile(m, ml.MlirBackend(dtype=dtype, num_threads=threads),
                    shapes={"input": [rows, 784], "b": [512, 320]}, inference=True,
                    cpu_options={"target_cpu": target_cpu} if target_cpu else None)
    params = pm.randomize_params(seed=1)
    x = rng.standard_normal((rows, 784)).astype(np_type)
    b = rng.standard_normal((512, 320)).astype(np_type)
    out = pm.evaluate(params, {"input": x, "b": b})["output"]
    weight = np.asarray(next(v for k, v in params.items() if k.endswith("weight")), np.float64)
    bias = np.asarray(next(v for k, v in params.items() if k.endswith("bias")), np.float64)
    expected = np.maximum(x.astype(np.float64) @ weight.T + bias, 0) @ b.astype(np.float64)
    error = np.linalg.norm(out - expected) / np.linalg.norm(expected)
    assert error < (1e-6 if dtype == ml.float32 else 1e-14)


@pytest.mark.parametrize("target_cpu", ["", "haswell"])
@pytest.mark.parametrize("rows", [200, 203])
def test_row_remainders_of_a_single_block(target_cpu, rows):
    # Rows kept whole for packing that then fit one cache block (no packing
    # for float products of one block): the remainder is split off there.
    rng = np.random.default_rng(rows)
    a = rng.standard_normal((rows, 256)).astype(np.float32)
    b = rng.standard_normal((256, 256)).astype(np.float32)
    m = Model()
    m |= MatrixMultiply().connect(left="input", right="b", output="output")
    pm = ml.compile(m, ml.MlirBackend(dtype=ml.float32),
                    shapes={"input": [rows, 256], "b": [256, 256]}, inference=True,
                    cpu_options={"target_cpu": target_cpu} if target_cpu else None)
    out = pm.evaluate({}, {"input": a, "b": b})["output"]
    expected = a.astype(np.float64) @ b.astype(np.float64)
    assert np.linalg.norm(out - expected) / np.linalg.norm(expected) < 1e-6


@pytest.mark.parametrize("rows, depth, target_cpu", [(1024, 1000, ""), (1030, 1000, "haswell"),
                                                     (2048, 1296, "")])
def test_linear_of_many_rows_and_a_deep_reduction(rows, depth, target_cpu):
    # A Linear's weight packed straight from its [out, in] layout in
    # 1024-deep reduction blocks (1000 and 1296: no multiple of 16 divides
    # them whole), on two threads.
    m = Model()
    m |= Linear(288)(input="input", output=ml.IOKey("output"))
    pm = ml.compile(m, ml.MlirBackend(num_threads=2), shapes={"input": [rows, depth]},
                    inference=True,
                    cpu_options={"target_cpu": target_cpu} if target_cpu else None)
    params = pm.randomize_params(seed=0)
    x = np.random.default_rng(1).standard_normal((rows, depth)).astype(np.float32)
    out = pm.evaluate(params, {"input": x})["output"]
    weight = np.asarray(next(v for k, v in params.items() if k.endswith("weight")), np.float64)
    bias = np.asarray(next(v for k, v in params.items() if k.endswith("bias")), np.float64)
    expected = x.astype(np.float64) @ weight.T + bias
    assert np.linalg.norm(out - expected) / np.linalg.norm(expected) < 1e-6


@pytest.mark.parametrize("rows, depth, outputs", [(64, 784, 512), (24, 100, 96), (100, 300, 800),
                                                  (64, 1024, 512)])
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("target_cpu", ["", "haswell"])
def test_linear_of_few_rows_swaps_its_product(rows, depth, outputs, threads, dtype, target_cpu):
    # A weight with at least twice as many outputs as the batch has rows: the
    # product is computed as (w x^T)^T (x^T packed, the weight read in place),
    # forward, its gradients and an SGD step, against numpy in float64.
    model = Model()
    model |= Linear(outputs)(input="input")
    model += Relu()
    model += Linear(10)(output="output")
    backend = ml.MlirBackend(dtype=getattr(ml, dtype), num_threads=threads)
    pm = ml.compile(model, backend, shapes={"input": [rows, depth]},
                    cpu_options={"target_cpu": target_cpu} if target_cpu else None)
    params = pm.randomize_params(seed=3)
    rng = np.random.default_rng(4)
    x = rng.standard_normal((rows, depth)).astype(dtype)
    seed = rng.standard_normal((rows, 10)).astype(dtype)
    out, grads = pm.evaluate(params, {"input": x}, output_gradients={"output": seed})
    p = {k: np.asarray(v, np.float64) for k, v in params.items()}
    x64 = x.astype(np.float64)
    pre = x64 @ p["linear_0.weight"].T + p["linear_0.bias"]
    hidden = np.maximum(pre, 0)
    want = hidden @ p["linear_1.weight"].T + p["linear_1.bias"]
    g_hidden = (seed.astype(np.float64) @ p["linear_1.weight"]) * (pre > 0)
    want_grads = {"linear_0.weight": g_hidden.T @ x64, "linear_0.bias": g_hidden.sum(0),
                  "linear_1.weight": seed.T.astype(np.float64) @ hidden}
    tol = 1e-5 if dtype == "float32" else 1e-12
    assert np.linalg.norm(out["output"] - want) / np.linalg.norm(want) < tol
    for key, value in want_grads.items():
        assert np.linalg.norm(grads[key] - value) / np.linalg.norm(value) < tol, key


@pytest.mark.parametrize("rows, widths", [(256, (784, 512, 512, 10)), (64, (300, 200, 520, 7)),
                                          (24, (100, 96, 128, 48)), (100, (64, 800, 800, 2)),
                                          (1024, (256, 2048, 10))])
@pytest.mark.parametrize("activation", ["relu", "sigmoid"])
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("target_cpu", ["", "haswell"])
def test_chained_swapped_layers_compute_their_activations_transposed(rows, widths, activation,
                                                                    threads, target_cpu):
    # Hidden layers whose products all swap: each one's bias and activation
    # are computed transposed, as the next product's operand, in its
    # product's blocks, and the last layer (however narrow) swaps too, unless
    # its x^T would not fit the L2 twice (1024 x 2048: it stays a
    # matrix-vector product). In float32 against numpy in float64.
    model = Model()
    act = {"relu": Relu, "sigmoid": Sigmoid}[activation]
    for i, width in enumerate(widths[1:]):
        layer = Linear(width)(**({"input": "input"} if i == 0 else {}),
                              **({"output": ml.IOKey("output")} if i == len(widths) - 2 else {}))
        if i == 0:
            model |= layer
        else:
            model += layer
        if i < len(widths) - 2:
            model += act()
    pm = ml.compile(model, ml.MlirBackend(num_threads=threads), shapes={"input": [rows, widths[0]]},
                    inference=True, cpu_options={"target_cpu": target_cpu} if target_cpu else None)
    params = pm.randomize_params(seed=5)
    x = np.random.default_rng(6).standard_normal((rows, widths[0])).astype(np.float32)
    out = pm.evaluate(params, {"input": x})["output"]
    h = x.astype(np.float64)
    for i in range(len(widths) - 1):
        h = h @ np.asarray(params[f"linear_{i}.weight"], np.float64).T + np.asarray(
            params[f"linear_{i}.bias"], np.float64)
        if i < len(widths) - 2:
            h = np.maximum(h, 0) if activation == "relu" else 1 / (1 + np.exp(-h))
    assert out.shape == h.shape
    assert np.linalg.norm(out - h) / np.linalg.norm(h) < 1e-5
