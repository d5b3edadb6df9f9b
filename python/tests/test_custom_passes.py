# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""compile(custom_passes=): pass pipelines and Python callables that rewrite
the model's IR before the pipeline; gradients follow the rewritten graph."""

import numpy as np
import pytest
import torch

import mithril as ml
from mithril.models import Linear, Model, Relu


def mlp():
    model = Model()
    model |= Linear(4)(input="input")
    model += Relu()
    model += Linear(2)(output="output")
    return model


def relu_to_tanh(ir: str) -> str:
    """Swaps every ReLU for a tanh, as a user's rewrite of the graph might."""
    return ir.replace("= relu ", "= tanh ")


def test_callable_rewrites_forward_and_gradients():
    x = np.random.default_rng(0).standard_normal((3, 5))
    pm = ml.compile(mlp(), ml.MlirBackend(dtype=ml.float64), shapes={"input": [3, 5]},
                    custom_passes=[relu_to_tanh])
    params = pm.randomize_params(seed=1)
    seed = np.ones((3, 2))
    outs, grads = pm.evaluate(params, {"input": x}, output_gradients={"output": seed})
    t = {k: torch.tensor(v, requires_grad=True) for k, v in params.items()}
    h = torch.tanh(torch.tensor(x) @ t["linear_0.weight"].T + t["linear_0.bias"])
    out = h @ t["linear_1.weight"].T + t["linear_1.bias"]
    out.backward(torch.tensor(seed))
    np.testing.assert_allclose(outs["output"], out.detach().numpy(), rtol=1e-12)
    for key in t:
        np.testing.assert_allclose(grads[key], t[key].grad.numpy(), rtol=1e-10, atol=1e-14)


def test_pipeline_strings_and_none():
    seen = []
    pm = ml.compile(mlp(), ml.MlirBackend(dtype=ml.float64), shapes={"input": [3, 5]},
                    custom_passes=["mithril-flatten", "canonicalize,cse",
                                   lambda ir: seen.append(ir)])
    # The callable saw the flattened model: no instances left.
    assert len(seen) == 1 and "instance" not in seen[0] and "= matmul" in seen[0]
    params = pm.randomize_params(seed=0)
    x = np.ones((3, 5))
    want = np.maximum(x @ params["linear_0.weight"].T + params["linear_0.bias"], 0) \
        @ params["linear_1.weight"].T + params["linear_1.bias"]
    np.testing.assert_allclose(pm.evaluate(params, {"input": x})["output"], want, rtol=1e-12)


def test_bad_custom_passes_are_errors():
    backend = ml.MlirBackend()
    with pytest.raises(ml.MithrilError, match="pass pipeline 'no-such-pass'"):
        ml.compile(mlp(), backend, shapes={"input": [3, 5]}, custom_passes=["no-such-pass"])
    with pytest.raises(TypeError, match=r"custom_passes\[0\] must be a pass pipeline string"):
        ml.compile(mlp(), backend, shapes={"input": [3, 5]}, custom_passes=[42])
    with pytest.raises(TypeError, match="returned int, not the IR text"):
        ml.compile(mlp(), backend, shapes={"input": [3, 5]}, custom_passes=[lambda ir: 1])

    def breaks_the_graph(ir):
        return ir.replace("= relu ", "= no_such_op ")

    with pytest.raises(ml.MithrilError, match="custom pass breaks_the_graph returned IR that "
                                              "does not verify"):
        ml.compile(mlp(), backend, shapes={"input": [3, 5]}, custom_passes=[breaks_the_graph])


def test_pipeline_in_mithril_opt_form_runs():
    # mithril-opt's --pass-pipeline='builtin.module(...)' form, wrapper and
    # all, runs the passes (it once nested them under the module and ran them
    # on nothing).
    seen = []
    ml.compile(mlp(), ml.MlirBackend(dtype=ml.float64), shapes={"input": [3, 5]},
               custom_passes=["builtin.module(mithril-flatten)", lambda ir: seen.append(ir)])
    assert len(seen) == 1 and "instance" not in seen[0] and "= matmul" in seen[0]
