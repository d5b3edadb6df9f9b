# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""ml.compile's compilation controls (docs/compilation.md): each changes what
is compiled, visibly, and never the numbers; bad values are clear errors."""

import warnings

import numpy as np
import pytest

import mithril as ml
from mithril.models import (Convolution2D, Exponential, Flatten, Linear, Model, Relu, Sigmoid,
                            Sum)


def mlp():
    model = Model()
    model |= Linear(16)(input="input")
    model += Relu()
    model += Linear(4)(output="output")
    return model


def cnn():
    model = Model()
    model |= Convolution2D(kernel_size=3, out_channels=4)(input="input")
    model += Sigmoid()
    model += Flatten(start_dim=1)
    model += Linear(3)(output="output")
    return model


def numpy_mlp(params, x):
    h = np.maximum(x @ params["linear_0.weight"].T + params["linear_0.bias"], 0)
    return h @ params["linear_1.weight"].T + params["linear_1.bias"]


MODELS = {"mlp": (mlp, [5, 7]), "cnn": (cnn, [2, 3, 6, 6])}


@pytest.mark.parametrize("name", sorted(MODELS))
@pytest.mark.parametrize("level", ["none", "low", "medium", "high"])
def test_levels_give_the_same_numbers(name, level):
    build, shape = MODELS[name]
    backend = ml.MlirBackend(dtype=ml.float64)
    reference = ml.compile(build(), backend, shapes={"input": shape})
    pm = ml.compile(build(), backend, shapes={"input": shape}, optimization_level=level)
    params = reference.randomize_params(seed=3)
    x = np.random.default_rng(4).standard_normal(shape)
    seed = {"output": np.random.default_rng(5).standard_normal(reference.shapes["output"])}
    want, want_grads = reference.evaluate(params, {"input": x}, output_gradients=seed)
    got, grads = pm.evaluate(params, {"input": x}, output_gradients=seed)
    np.testing.assert_allclose(got["output"], want["output"], rtol=1e-12, atol=1e-12)
    for key in want_grads:
        np.testing.assert_allclose(grads[key], want_grads[key], rtol=1e-12, atol=1e-12)
    if name == "mlp":
        np.testing.assert_allclose(got["output"], numpy_mlp(params, x), rtol=1e-12)
    # A training step compiles a third model at the same level.
    p1 = {k: v.copy() for k, v in params.items()}
    p2 = {k: v.copy() for k, v in params.items()}
    model = build()
    model |= ml.models.Sum()(input="output", output="final_cost")
    a = ml.compile(model, backend, shapes={"input": shape}, optimization_level=level)
    model = build()
    model |= ml.models.Sum()(input="output", output="final_cost")
    b = ml.compile(model, backend, shapes={"input": shape})
    a.train_step(p1, {"input": x}, ml.SGD(lr=0.1))
    b.train_step(p2, {"input": x}, ml.SGD(lr=0.1))
    for key in p1:
        np.testing.assert_allclose(p1[key], p2[key], rtol=1e-12, atol=1e-12)


def stage_ops(pm):
    """Each pipeline stage's op count after it, by stage name."""
    return {name: after for name, _, before, after in pm.stages if before >= 0}


def test_levels_change_what_is_compiled():
    shapes = {"input": [5, 7]}
    stages = {level: stage_ops(ml.compile(mlp(), ml.MlirBackend(), shapes=shapes,
                                          optimization_level=level))
              for level in ("none", "low", "medium", "high")}
    # "none" and "low" neither fuse nor schedule; "medium" and "high" do.
    assert "fusion" not in stages["none"] and "fusion" not in stages["low"]
    assert "fusion" in stages["medium"] and "fusion" in stages["high"]
    # The LLVM level shows in the JIT phase's name.
    for level, opt in (("none", 0), ("low", 1), ("medium", 2), ("high", 3)):
        pm = ml.compile(mlp(), ml.MlirBackend(), shapes=shapes, optimization_level=level)
        assert pm.stages[-1][0] == f"LLVM -O{opt} + JIT"


def chain():
    model = Model()
    model |= Relu()(input="input")
    model += Exponential()
    model += Sigmoid()
    model += Sum(axis=1)(output="output")
    return model


def test_each_optimization_switches_its_pass():
    shapes = {"input": [64, 64]}

    def ops(**kwargs):
        return stage_ops(ml.compile(chain(), ml.MlirBackend(), shapes=shapes, **kwargs))
    base = ops()
    no_fusion = ops(optimizations={"fusion": False})
    assert no_fusion == ops(optimizations={"operator_fusion": False})
    # Unfused, the schedule tiles one loop nest per op: more ops at every
    # stage from fusion on, and more LLVM code.
    assert no_fusion["fusion"] > base["fusion"] and no_fusion["loops"] > base["loops"]
    # Without the schedule, nothing is vectorized: far less unrolled LLVM code
    # (3.2x less since row sums reduce their lanes in a shuffle tree; 4x before).
    no_vector = ops(optimizations={"vectorization": False})
    assert no_vector["llvm"] < base["llvm"] / 2
    assert "fusion" not in ops(optimizations={"vectorization": False, "fusion": False})
    # Switched on over a level that has it off.
    assert "fusion" in ops(optimization_level="low", optimizations={"fusion": True})
    x = np.random.default_rng(0).standard_normal((64, 64)).astype(np.float32)
    want = (1 / (1 + np.exp(-np.exp(np.maximum(x, 0).astype(np.float64))))).sum(axis=1)
    for kwargs in ({}, {"optimizations": {"fusion": False}},
                   {"optimizations": {"vectorization": False}}):
        pm = ml.compile(chain(), ml.MlirBackend(), shapes=shapes, **kwargs)
        np.testing.assert_allclose(pm(x), want, rtol=1e-5)


def test_dead_code_elimination_and_cse_are_visible():
    # Two equal branches and one no output needs.
    model = Model()
    model |= Relu()(input="input", output="a")
    model |= Relu()(input="input", output="b")
    model |= ml.models.Exponential()(input="input", output="unused")
    model |= ml.models.Add()(left="a", right="b", output="output")
    shapes = {"input": [3, 4]}
    on = ml.compile(model, ml.MlirBackend(), shapes=shapes, discard_keys=["unused"])
    off = ml.compile(model, ml.MlirBackend(), shapes=shapes, discard_keys=["unused"],
                     optimizations={"common_subexpression": False, "constant_folding": False})
    assert stage_ops(on)["shapes"] < stage_ops(off)["shapes"]
    x = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    np.testing.assert_array_equal(on({"input": x}), off({"input": x}))
    np.testing.assert_array_equal(on({"input": x}), 2 * np.maximum(x, 0))


def test_verbose_prints_every_stage(capsys):
    ml.compile(mlp(), ml.MlirBackend(), shapes={"input": [5, 7]}, verbose=True)
    out = capsys.readouterr().out
    for stage in ("flatten", "shapes", "linalg", "fusion", "bufferize", "loops", "llvm",
                  "LLVM -O2 + JIT", "total"):
        assert stage in out
    assert "ops" in out and " ms" in out


def test_cpu_options_and_threads():
    x = np.random.default_rng(0).standard_normal((64, 7))
    pms = [ml.compile(mlp(), ml.MlirBackend(dtype=ml.float64), shapes={"input": [64, 7]},
                      cpu_options=opts)
           for opts in ({"num_threads": 1}, {"num_threads": 2, "vectorize": False})]
    params = pms[0].randomize_params(seed=1)
    a, b = (pm.evaluate(params, {"input": x})["output"] for pm in pms)
    np.testing.assert_allclose(a, b, rtol=1e-12)
    np.testing.assert_allclose(a, numpy_mlp(params, x), rtol=1e-12)


def test_cpu_options_target_cpu():
    # Code for an AVX2 CPU (6 x 16 register tiles, ymm only) runs on any
    # x86-64 host with AVX2, and gives the host code's numbers.
    x = np.random.default_rng(0).standard_normal((64, 40))
    model = Model()
    model |= Linear(48)(input="input", output="output")
    host = ml.compile(model, ml.MlirBackend(dtype=ml.float64), shapes={"input": [64, 40]})
    params = host.randomize_params(seed=1)
    want = x @ params["linear_0.weight"].T + params["linear_0.bias"]
    avx2 = ml.compile(model, ml.MlirBackend(dtype=ml.float64), shapes={"input": [64, 40]},
                      cpu_options={"target_cpu": "haswell"})
    np.testing.assert_allclose(avx2.evaluate(params, {"input": x})["output"], want, rtol=1e-12)
    with pytest.raises(ml.MithrilError, match="unknown target CPU 'pentium9'"):
        ml.compile(model, ml.MlirBackend(), shapes={"input": [64, 40]},
                   cpu_options={"target_cpu": "pentium9"})
    # A CPU whose features this host lacks is refused (AMX here, unless the
    # host is a Sapphire Rapids, where it runs).
    try:
        spr = ml.compile(model, ml.MlirBackend(dtype=ml.float64), shapes={"input": [64, 40]},
                         cpu_options={"target_cpu": "sapphirerapids"})
    except ml.MithrilError as e:
        assert "cannot run on this host" in str(e) and "lacks" in str(e)
    else:
        np.testing.assert_allclose(spr.evaluate(params, {"input": x})["output"], want,
                                   rtol=1e-12)


def test_static_shapes_and_batch_hints():
    with pytest.raises(ml.ShapeError, match="static_shapes=True"):
        ml.compile(mlp(), ml.MlirBackend(), shapes={"input": [None, 7]}, static_shapes=True)
    pm = ml.compile(mlp(), ml.MlirBackend(), shapes={"input": [5, 7]}, static_shapes=True)
    assert pm.get_shapes()["input"] == [5, 7]
    pm = ml.compile(mlp(), ml.MlirBackend(dtype=ml.float64), shapes={"input": [5, 7]},
                    hints={"input_batch_size_range": (1, 32), "inference_priority": "latency"})
    assert pm.get_shapes()["input"] == [None, 7]
    params = pm.randomize_params(seed=2)
    for n in (1, 32):
        x = np.ones((n, 7))
        np.testing.assert_allclose(pm.evaluate(params, {"input": x})["output"],
                                   numpy_mlp(params, x), rtol=1e-12)
    with pytest.raises(ml.ShapeError, match="batch size 33 is outside"):
        pm.evaluate(params, {"input": np.ones((33, 7))})


def test_physical_model_call_and_introspection():
    model = mlp()
    pm = model.compile(ml.MlirBackend(dtype=ml.float64), shapes={"input": [2, 7]})
    x = np.random.default_rng(1).standard_normal((2, 7))
    params = pm.randomize_params(seed=0)
    np.testing.assert_allclose(pm(x), numpy_mlp(params, x), rtol=1e-12)
    np.testing.assert_allclose(pm(params, {"input": x})["output"], numpy_mlp(params, x))
    np.testing.assert_allclose(pm(input=x, **params), numpy_mlp(params, x), rtol=1e-12)
    assert pm.get_shapes()["linear_0.weight"] == [16, 7]
    assert pm.get_shapes()["output"] == [2, 4]
    assert pm.get_types()["input"] is np.float64
    assert ml.LogicalModel is Model


@pytest.mark.parametrize("kwargs, error, match", [
    ({"optimization_level": "max"}, ValueError, "unknown optimization_level 'max'"),
    ({"optimizations": {"fuse": True}}, ValueError, "unknown optimization 'fuse'"),
    ({"optimizations": {"fusion": 1}}, TypeError, "must be True or False"),
    ({"jit_options": {"opt_level": 7}}, ValueError, "opt_level"),
    ({"jit_options": {"turbo": True}}, ValueError, "unknown jit_options key 'turbo'"),
    ({"cpu_options": {"num_threads": 0}}, ValueError, "num_threads"),
    ({"cpu_options": {"simd": True}}, ValueError, "unknown cpu_options key 'simd'"),
    ({"hints": {"input_batch_size_range": (4, 2)}}, ValueError, "1 <= lo <= hi"),
    ({"hints": {"speed": 1}}, ValueError, "unknown hints key 'speed'"),
    ({"target_hardware": "tpu"}, ValueError, "not supported: this backend compiles for CPUs"),
    ({"target_hardware": "tpu", "tpu_options": {"precision": "bfloat16"}}, ValueError,
     "no TPU|not supported"),
    ({"tpu_options": {"precision": "bfloat16"}}, ValueError, "apply to target_hardware='tpu'"),
    ({"target_hardware": "nvidia_a100"}, ValueError, "device='cuda'"),
    ({"optimize_for": "size"}, ValueError, "optimize_for"),
    ({"static_inference": True}, ValueError, "needs inference=True"),
    ({"verbose": "yes"}, TypeError, "verbose"),
])
def test_bad_controls_are_clear_errors(kwargs, error, match):
    with pytest.raises(error, match=match):
        ml.compile(mlp(), ml.MlirBackend(), shapes={"input": [2, 7]}, **kwargs)


def test_jit_options_map_or_warn():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        pm = ml.compile(mlp(), ml.MlirBackend(), shapes={"input": [2, 7]},
                        jit_options={"static_argnums": (0, 1), "donate_argnums": (0,)})
    assert any("no effect with MlirBackend" in str(w.message) for w in caught)
    assert pm.stages[-1][0] == "LLVM -O2 + JIT"
    pm = ml.compile(mlp(), ml.MlirBackend(), shapes={"input": [2, 7]},
                    jit_options={"opt_level": 1})
    assert pm.stages[-1][0] == "LLVM -O1 + JIT"
    pm = ml.compile(mlp(), ml.MlirBackend(), shapes={"input": [2, 7]},
                    jit_options={"mode": "max-autotune"})
    assert pm.stages[-1][0] == "LLVM -O3 + JIT"
    pm = ml.compile(mlp(), ml.MlirBackend(), shapes={"input": [2, 7]}, target_hardware="cpu",
                    optimize_for="throughput", inference=True, static_inference=True)
    assert pm.inference


def test_approximate_math_switches_vector_exp():
    # The chain's exp and sigmoid: vector polynomials by default (more LLVM
    # ops: the range reduction and the polynomial, inline), a libm call per
    # element without; the numbers agree to a few ulps.
    shapes = {"input": [64, 64]}
    pms = {on: ml.compile(chain(), ml.MlirBackend(), shapes=shapes,
                          optimizations={"approximate_math": on}) for on in (True, False)}
    assert stage_ops(pms[True])["llvm"] > stage_ops(pms[False])["llvm"]
    x = np.random.default_rng(0).standard_normal((64, 64)).astype(np.float32)
    want = (1 / (1 + np.exp(-np.exp(np.maximum(x, 0).astype(np.float64))))).sum(axis=1)
    for pm in pms.values():
        np.testing.assert_allclose(pm(x), want, rtol=1e-5)
    np.testing.assert_allclose(pms[True](x), pms[False](x), rtol=2e-6)
