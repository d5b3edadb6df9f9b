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


def graph(primitive, **connections):
    """One primitive whose inputs are the model's inputs `a`, `b`, ... and
    whose output is `output`."""
    model = M.Model()
    model |= primitive.connect(**connections, output=M.IOKey("output", expose=True))
    return model


# Every differentiable op not in CHAINS: (model, input shapes, inputs that are
# data (kept fixed) with their values, inputs' value range).
GRAPHS = {
    "subtract": lambda: (graph(M.Subtract(), left="a", right="b"), {"a": [3, 4], "b": [4]}),
    "multiply": lambda: (graph(M.Multiply(), left="a", right="b"), {"a": [3, 4], "b": [3, 1]}),
    "divide": lambda: (graph(M.Divide(), numerator="a", denominator="b"),
                       {"a": [3, 4], "b": [1, 4]}),
    "power": lambda: (graph(M.Power(), base="a", exponent="b"), {"a": [3, 4], "b": [3, 4]}),
    "minimum": lambda: (graph(M.Minimum(), left="a", right="b"), {"a": [3, 4], "b": [3, 4]}),
    "maximum": lambda: (graph(M.Maximum(), left="a", right="b"), {"a": [3, 4], "b": [4]}),
    "negate": lambda: (graph(M.Negate(), input="a"), {"a": [3, 4]}),
    "absolute": lambda: (graph(M.Absolute(), input="a"), {"a": [3, 4]}),
    "reciprocal": lambda: (graph(M.Reciprocal(), input="a"), {"a": [3, 4]}),
    "relu": lambda: (graph(M.Relu(), input="a"), {"a": [3, 4]}),
    "max-min-prod": lambda: (chain(M.Max(axis=1, keepdim=True), M.Min(axis=0), M.Prod()),
                             {"input": [3, 4]}),
    "broadcast-to": lambda: (graph(M.BroadcastTo((2, 3, 4)), input="a"), {"a": [3, 1]}),
    "concat": lambda: (graph(M.Concat(n=2, axis=1), input1="a", input2="b"),
                       {"a": [3, 2], "b": [3, 4]}),
    "squeeze": lambda: (graph(M.Squeeze(), input="a"), {"a": [3, 1, 4]}),
    "where": lambda: (graph(M.Where(), cond="c", input1="a", input2="b"),
                      {"a": [3, 4], "b": [3, 4]}),
    "conv1d-maxpool1d": lambda: (chain(M.Reshape((2, 2, 6)),
                                       M.Convolution1D(kernel_size=3, out_channels=2, padding=1),
                                       M.MaxPool1D(kernel_size=2)), {"input": [4, 6]}),
    "avgpool2d": lambda: (chain(M.Reshape((1, 2, 4, 3)), M.AvgPool2D(kernel_size=2, stride=1)),
                          {"input": [6, 4]}),
    "embedding": lambda: (graph(M.Embedding(num_embeddings=5, dim=3), input="ids", weight="a"),
                          {"a": [5, 3]}),
    "squared-error": lambda: (graph(M.SquaredError(), input="a", target="b"),
                              {"a": [3, 4], "b": [3, 4]}),
    "absolute-error": lambda: (graph(M.AbsoluteError(), input="a", target="b"),
                               {"a": [3, 4], "b": [3, 4]}),
    "hinge": lambda: (graph(M.HingeLoss(), input="a", target="t"), {"a": [3, 4]}),
    "quad-hinge": lambda: (graph(M.QuadHingeLoss(), input="a", target="t"), {"a": [3, 4]}),
    "kl-divergence": lambda: (graph(M.KLDivergence(), input="a", target="b"),
                              {"a": [3, 4], "b": [3, 4]}),
    "quantile": lambda: (graph(M.QuantileLoss(quantile=0.3), input="a", target="b"),
                         {"a": [3, 4], "b": [3, 4]}),
    "binary-cross-entropy": lambda: (graph(M.BinaryCrossEntropy(), input="a", target="t01"),
                                     {"a": [3, 4]}),
    "cross-entropy": lambda: (graph(M.CrossEntropy(), input="a", target="classes"),
                              {"a": [3, 4]}),
    "cross-entropy-probs": lambda: (graph(M.CrossEntropy(input_type="probs"), input="a",
                                          target="classes"), {"a": [3, 4]}),
}

# Data inputs of GRAPHS (not differentiated), by name.
DATA = {
    "c": lambda rng: rng.random((3, 4)) > 0.5,
    "ids": lambda rng: np.array([4, 0, 2, 4]),
    "t": lambda rng: np.where(rng.random((3, 4)) > 0.5, 1.0, -1.0),
    "t01": lambda rng: (rng.random((3, 4)) > 0.5).astype(np.float64),
    "classes": lambda rng: np.array([3, 0, 1]),
}


@pytest.mark.parametrize("name", sorted(GRAPHS))
def test_every_gradient_rule_matches_central_differences(name):
    model, shapes = GRAPHS[name]()
    rng = np.random.default_rng(7)
    data = {k: f(rng) for k, f in DATA.items() if k in model.input_keys}
    pm = ml.compile(model, ml.MlirBackend(dtype=ml.float64),
                    shapes={**shapes, **{k: list(v.shape) for k, v in data.items()}},
                    trainable_keys=list(shapes))
    # Positive values away from 0: in every op's domain (log, power, KL), and
    # kinks (abs, max, hinge) are 1e-6 away with negligible probability.
    params = pm.randomize_params(seed=3)
    params |= {k: rng.uniform(0.2, 1.5, shape) * rng.choice([-1, 1], shape)
              if name in ("absolute", "relu", "minimum", "maximum", "hinge", "quad-hinge",
                          "absolute-error", "quantile", "subtract", "multiply")
              else rng.uniform(0.2, 1.5, shape) for k, shape in shapes.items()}
    out_key = pm.output_keys[0]
    seed = rng.standard_normal(pm.shapes[out_key])
    _, grads = pm.evaluate(params, data, output_gradients={out_key: seed})

    def objective(p):
        return float(np.sum(pm.evaluate(p, data)[out_key] * seed))

    eps = 1e-6
    for key, value in params.items():
        numeric = np.zeros_like(value)
        for idx in np.ndindex(value.shape):
            plus, minus = dict(params), dict(params)
            plus[key], minus[key] = value.copy(), value.copy()
            plus[key][idx] += eps
            minus[key][idx] -= eps
            numeric[idx] = (objective(plus) - objective(minus)) / (2 * eps)
        np.testing.assert_allclose(grads[key], numeric, rtol=1e-5, atol=1e-7,
                                   err_msg=f"{name}: gradient of {key}")
