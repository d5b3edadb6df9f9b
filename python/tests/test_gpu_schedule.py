# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""The GPU pipeline's shared-memory tiling of matmuls and convolutions
(mithril-gpu-tile-contractions), run on the host with gpu_tiles_on_host,
against torch: outputs and gradients, with sizes that leave partial tiles.
Where there is a GPU, device="cuda" against the CPU."""

import os

import numpy as np
import pytest
import torch

import mithril as ml
from mithril import models as M
from torch_checks import check_conv2d

F = torch.nn.functional


@pytest.fixture
def tiled64():
    return ml.MlirBackend(dtype=ml.float64, gpu_tiles_on_host=True, num_threads=1)


def test_gpu_tiles_need_the_cpu_device():
    with pytest.raises(ValueError, match="gpu_tiles_on_host"):
        ml.MlirBackend(device="cuda", gpu_tiles_on_host=True)


# Rows, inputs, outputs: one tile, several with partial edges, a depth that
# is no multiple of the 16-deep steps, and one large enough that each thread
# computes several elements (2x4 for the output, partial 64x32 blocks).
@pytest.mark.parametrize("rows,inputs,outputs",
                         [(16, 16, 16), (5, 37, 18), (33, 70, 41), (600, 40, 600)])
def test_linear_and_gradients(rows, inputs, outputs, tiled64):
    rng = np.random.default_rng(rows)
    x = rng.standard_normal((rows, inputs))
    w, b = rng.standard_normal((outputs, inputs)), rng.standard_normal(outputs)
    seed = rng.standard_normal((rows, outputs))
    pm = ml.compile(M.Linear(outputs), tiled64, shapes={"input": [rows, inputs]},
                    trainable_keys=["input", "weight", "bias"])
    out, grads = pm.evaluate({"input": x, "weight": w, "bias": b},
                             output_gradients={"output": seed})
    tx, tw, tb = (torch.tensor(v, requires_grad=True) for v in (x, w, b))
    y = F.linear(tx, tw, tb)
    y.backward(torch.tensor(seed))
    np.testing.assert_allclose(out["output"], y.detach().numpy(), rtol=1e-11, atol=1e-12)
    for key, ref in (("input", tx), ("weight", tw), ("bias", tb)):
        np.testing.assert_allclose(grads[key], ref.grad.numpy(), rtol=1e-10, atol=1e-12)


# The tensor-core schedule (bf16 and f16 products into float32 sums on
# mma.sync m16n8k16): 64x64 blocks of 2x2 warps, 32-deep steps. The host run
# emulates each warp's mma.sync from the fragments its lanes loaded, found
# by the PTX ISA's layout, so a lane loading the wrong element fails here.
# Sizes: partial blocks and steps; several row blocks and whole steps.
@pytest.mark.parametrize("dtype,unit", [("bfloat16", 2.0 ** -8), ("float16", 2.0 ** -11)])
@pytest.mark.parametrize("rows,inputs,outputs", [(5, 37, 18), (33, 70, 41), (130, 96, 70)])
def test_tensor_core_linear_and_gradients(dtype, unit, rows, inputs, outputs):
    rng = np.random.default_rng(rows + inputs)
    narrow = {"bfloat16": lambda v: ml.types.from_bfloat16_bits(ml.types.to_bfloat16_bits(v)),
              "float16": lambda v: v.astype(np.float16)}[dtype]
    x, w, b, seed = (np.asarray(narrow(rng.standard_normal(shape)), np.float64)
                     for shape in ((rows, inputs), (outputs, inputs), (outputs,),
                                   (rows, outputs)))
    backend = ml.MlirBackend(dtype=getattr(ml, dtype), gpu_tiles_on_host=True, num_threads=1)
    pm = ml.compile(M.Linear(outputs), backend, shapes={"input": [rows, inputs]},
                    trainable_keys=["input", "weight", "bias"])
    out, grads = pm.evaluate({"input": x, "weight": w, "bias": b},
                             output_gradients={"output": seed})

    def check(got, product, ref):
        # One rounding of each product and of the bias sum; float32 sums.
        got = np.asarray(got, np.float64)
        err = np.abs(got - ref) - unit * (np.abs(product) + np.abs(ref))
        assert np.max(err) <= 1e-5 * np.sqrt(np.mean(ref ** 2)), f"{np.max(err):.3g}"

    check(out["output"], x @ w.T, x @ w.T + b)
    check(grads["input"], seed @ w, seed @ w)
    check(grads["weight"], seed.T @ x, seed.T @ x)
    check(grads["bias"], seed.sum(0), seed.sum(0))


def test_tensor_core_batched_matmul():
    # Batched bf16 products on the tensor-core schedule (the batch on the
    # grid's z), with partial blocks and steps, against float64.
    rng = np.random.default_rng(1)
    narrow = lambda v: np.asarray(  # noqa: E731
        ml.types.from_bfloat16_bits(ml.types.to_bfloat16_bits(v)), np.float64)
    for b, m, k, n in [(3, 20, 37, 70), (2, 65, 64, 9)]:
        model = M.Model()
        model |= M.MatrixMultiply().connect(left="a", right="b", output=ml.IOKey("c"))
        a, w = narrow(rng.standard_normal((b, m, k))), narrow(rng.standard_normal((b, k, n)))
        backend = ml.MlirBackend(dtype=ml.bfloat16, gpu_tiles_on_host=True, num_threads=1)
        pm = ml.compile(model, backend, shapes={"a": [b, m, k], "b": [b, k, n]}, inference=True)
        got = np.asarray(pm.evaluate({}, {"a": a, "b": w})["c"], np.float64)
        ref = a @ w
        err = np.abs(got - ref) - 2.0 ** -8 * np.abs(ref)
        assert np.max(err) <= 1e-5 * np.sqrt(np.mean(ref ** 2))


@pytest.mark.parametrize("stride,padding,dilation,groups", [
    (1, 1, 1, 1), (2, 1, 1, 1), (1, 2, 2, 1), (1, 1, 1, 2)])
def test_conv2d_and_gradients(stride, padding, dilation, groups, tiled64):
    rng = np.random.default_rng(7)
    check_conv2d(tiled64, rng.standard_normal((2, 4, 19, 21)),
                 rng.standard_normal((6, 4 // groups, 3, 3)), rng.standard_normal(6), rng,
                 stride=stride, padding=padding, dilation=dilation, groups=groups)


def test_cnn_gradients_match_the_cpu_schedule():
    """A small CNN's outputs and parameter gradients: the GPU tiling on the
    host and the CPU schedule (checked against torch elsewhere) agree."""
    def cnn():
        model = M.Model()
        model |= M.Convolution2D(kernel_size=3, out_channels=8, padding=1).connect(input="input")
        model += M.Relu()
        model += M.MaxPool2D(kernel_size=2)
        model += M.Flatten()
        model += M.Linear(10)
        model.nets[model.canonical_output].expose = True
        return model

    results = []
    for tiled in (False, True):
        backend = ml.MlirBackend(dtype=ml.float32, gpu_tiles_on_host=tiled, num_threads=1)
        pm = ml.compile(cnn(), backend, shapes={"input": [4, 3, 12, 12]})
        params = pm.randomize_params(seed=11)
        x = np.random.default_rng(3).standard_normal((4, 3, 12, 12)).astype(np.float32)
        seed = np.random.default_rng(4).standard_normal(pm.shapes[pm.output_keys[0]])
        out, grads = pm.evaluate(params, {"input": x},
                                 output_gradients={pm.output_keys[0]: seed.astype(np.float32)})
        results.append((out, grads))
    (out_cpu, grads_cpu), (out_gpu, grads_gpu) = results
    for key in out_cpu:
        np.testing.assert_allclose(out_gpu[key], out_cpu[key], rtol=2e-5, atol=1e-5)
    assert grads_cpu.keys() == grads_gpu.keys()
    for key in grads_cpu:
        np.testing.assert_allclose(grads_gpu[key], grads_cpu[key], rtol=2e-4, atol=1e-4)


def test_chip_is_validated_and_used():
    with pytest.raises(ValueError, match="chip"):
        ml.MlirBackend(device="cuda", chip="ampere")
    pm = ml.compile(M.Linear(4), ml.MlirBackend(device="cuda", chip="sm_80"),
                    shapes={"input": [8, 3]})
    assert ".target sm_80" in pm.ptx
    # Suffixed architectures compile; one LLVM does not know is the compiler's
    # error, naming it.
    pm = ml.compile(M.Linear(4), ml.MlirBackend(device="cuda", chip="sm_90a"),
                    shapes={"input": [8, 3]})
    assert ".target sm_90a" in pm.ptx
    with pytest.raises(ml.MithrilError, match="unknown GPU architecture 'sm_999'"):
        ml.compile(M.Linear(4), ml.MlirBackend(device="cuda", chip="sm_999"),
                   shapes={"input": [8, 3]}).ptx


def test_compile_rejects_unknown_targets():
    from mithril import _mithril
    source = open(os.path.join(os.path.dirname(__file__), "..", "..", "examples", "models",
                               "mlp.mlir")).read()
    with pytest.raises(ml.MithrilError, match="unknown target 'tpu'"):
        _mithril.compile(source, shapes=["input:2x784"], target="tpu")
    with pytest.raises(ml.MithrilError, match="target 'cpu'"):
        _mithril.compile(source, shapes=["input:2x784"], target="cuda", gpu_tiles_on_host=True)


@pytest.mark.skipif(not os.path.exists("/dev/nvidia0"), reason="needs an NVIDIA GPU")
def test_cuda_matches_cpu():
    """On a GPU: outputs and gradients of a small CNN against the CPU's."""
    def cnn():
        model = M.Model()
        model |= M.Convolution2D(kernel_size=3, out_channels=8, padding=1).connect(input="input")
        model += M.Relu()
        model += M.Flatten()
        model += M.Linear(10)
        model.nets[model.canonical_output].expose = True
        return model

    results = []
    for device in ("cpu", "cuda"):
        pm = ml.compile(cnn(), ml.MlirBackend(dtype=ml.float32, device=device),
                        shapes={"input": [4, 3, 12, 12]})
        params = pm.randomize_params(seed=11)
        x = np.random.default_rng(3).standard_normal((4, 3, 12, 12)).astype(np.float32)
        seed = np.random.default_rng(4).standard_normal(pm.shapes[pm.output_keys[0]])
        results.append(pm.evaluate(params, {"input": x},
                                   output_gradients={pm.output_keys[0]: seed.astype(np.float32)}))
    (out_cpu, grads_cpu), (out_gpu, grads_gpu) = results
    for key in out_cpu:
        np.testing.assert_allclose(out_gpu[key], out_cpu[key], rtol=2e-5, atol=1e-5)
    for key in grads_cpu:
        np.testing.assert_allclose(grads_gpu[key], grads_cpu[key], rtol=2e-4, atol=1e-4)
