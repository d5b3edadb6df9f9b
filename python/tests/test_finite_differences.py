# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""Gradients from mithril-autodiff against central finite differences in
float64, for primitives chained so that every rule feeds another."""

import numpy as np
import pytest

import mithril as ml
from mithril import models as M


def chain(*primitives):
    model = M.Model()
    for i, p in enumerate(primitives):
        if i == 0:
            model |= p.connect(input="input")
        else:
            model += p
    model.nets[model.canonical_output].expose = True
    return model


CHAINS = {
    "activations": lambda: chain(M.Sigmoid(), M.Tanh(), M.Softplus(), M.Gelu(), M.Exponential(),
                                 M.Log(), M.Sine(), M.Cosine(), M.Square()),
    "softmax-reductions": lambda: chain(M.Softmax(axis=1), M.Sqrt(), M.LogSoftmax(axis=0),
                                        M.Variance(axis=1, keepdim=True)),
    "shapes": lambda: chain(M.Transpose(), M.Reshape((4, -1)), M.Flatten(), M.Unsqueeze(0),
                            M.Slice(1, None, 2, axis=1), M.Mean()),
    "layers": lambda: chain(M.Linear(6), M.LeakyRelu(0.1), M.Linear(3), M.Softmax()),
    "conv": lambda: chain(M.Reshape((2, 1, 3, 4)),
                          M.Convolution2D(kernel_size=2, out_channels=3, padding=1),
                          M.MaxPool2D(kernel_size=2), M.Relu(), M.Sum()),
}


@pytest.mark.parametrize("name", sorted(CHAINS))
def test_gradients_match_central_differences(name):
    model = CHAINS[name]()
    pm = ml.compile(model, ml.MlirBackend(dtype=ml.float64), shapes={"input": [6, 4]},
                    trainable_keys=["input"])
    rng = np.random.default_rng(5)
    params = pm.randomize_params(seed=3)
    params["input"] = rng.uniform(0.3, 1.2, (6, 4))
    out_key = pm.output_keys[0]
    out_shape = pm.shapes[out_key]
    seed = rng.standard_normal(out_shape)
    _, grads = pm.evaluate(params, {}, output_gradients={out_key: seed})

    def objective(p):
        return float(np.sum(pm.evaluate(p, {})[out_key] * seed))

    eps = 1e-6
    for key, value in params.items():
        numeric = np.zeros_like(value)
        for idx in np.ndindex(value.shape):
            plus, minus = dict(params), dict(params)
            plus[key] = value.copy()
            minus[key] = value.copy()
            plus[key][idx] += eps
            minus[key][idx] -= eps
            numeric[idx] = (objective(plus) - objective(minus)) / (2 * eps)
        np.testing.assert_allclose(grads[key], numeric, rtol=1e-5, atol=1e-7,
                                   err_msg=f"{name}: gradient of {key}")
