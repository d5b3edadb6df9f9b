# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""The original's connection expressions (`a + b`, `x.T`, `h.mean(axis=1)`,
`x[:, 0]`, calls used as connections, Model.create), checked against numpy
with gradients against torch."""

import numpy as np
import pytest
import torch

import mithril as ml
from mithril.framework import IOKey
from mithril.models import Linear, LogisticRegression, Model, Relu

RNG = np.random.default_rng(0)
A = RNG.standard_normal((3, 4)) + 3.0
B = RNG.standard_normal((3, 4)) + 3.0


def evaluate(expr, **data):
    model = Model.create(output=expr)
    data = {k: v for k, v in data.items() if k in model.input_keys}
    pm = ml.compile(model, ml.MlirBackend(dtype=ml.float64),
                    shapes={k: list(np.shape(v)) for k, v in data.items()})
    return pm.evaluate({}, data)["output"]


@pytest.mark.parametrize("build, want", [
    (lambda a, b: a + b, lambda a, b: a + b),
    (lambda a, b: 2.0 - a * b, lambda a, b: 2.0 - a * b),
    (lambda a, b: a / b + 1 / a, lambda a, b: a / b + 1 / a),
    (lambda a, b: a // b, lambda a, b: a // b),
    (lambda a, b: a ** 2 + 2 ** b, lambda a, b: a ** 2 + 2 ** b),
    (lambda a, b: a @ b.T, lambda a, b: a @ b.T),
    (lambda a, b: -a, lambda a, b: -a),
    (lambda a, b: a > b, lambda a, b: a > b),
    (lambda a, b: (a <= b) & (a >= 3.0), lambda a, b: (a <= b) & (a >= 3.0)),
    (lambda a, b: (a < b).or_(a.eq(b)), lambda a, b: (a < b) | (a == b)),
    (lambda a, b: ~a.ne(b), lambda a, b: ~(a != b)),
    (lambda a, b: a.exp().sqrt() + a.sin() * a.cos() + (-a).abs(),
     lambda a, b: np.sqrt(np.exp(a)) + np.sin(a) * np.cos(a) + np.abs(a)),
    (lambda a, b: a.sum(axis=1) + a.mean(axis=1) + a.max(axis=1) - a.min(axis=1),
     lambda a, b: a.sum(1) + a.mean(1) + a.max(1) - a.min(1)),
    (lambda a, b: a.prod(axis=0, keepdim=True) * a.var(axis=0, keepdim=True),
     lambda a, b: a.prod(0, keepdims=True) * a.var(0, keepdims=True)),
    (lambda a, b: a.var(correction=1.0), lambda a, b: np.var(a, ddof=1)),
    (lambda a, b: a.reshape(2, 6).T.transpose(), lambda a, b: a.reshape(2, 6)),
    (lambda a, b: a.clamp(3.0, 4.0) + b.clamp(max_val=3.5), lambda a, b:
     np.clip(a, 3.0, 4.0) + np.minimum(b, 3.5)),
    (lambda a, b: a.floor(), lambda a, b: np.floor(a).astype(np.int64)),
    (lambda a, b: (a > b).cast(ml.float64) * 2, lambda a, b: (a > b) * 2.0),
    (lambda a, b: a[1], lambda a, b: a[1]),
    (lambda a, b: a[:, 2:3] + b[-1], lambda a, b: a[:, 2:3] + b[-1]),
    (lambda a, b: a[:, 2] * 2, lambda a, b: a[:, 2] * 2),
    (lambda a, b: a[..., None, :, None], lambda a, b: a[..., None, :, None]),
    (lambda a, b: a[1:3, ::2], lambda a, b: a[1:3, ::2]),
    (lambda a, b: a[..., None] * b[:, None, :], lambda a, b: a[..., None] * b[:, None, :]),
    (lambda a, b: a[None, 0, 1:], lambda a, b: a[None, 0, 1:]),
])
def test_expressions_match_numpy(build, want):
    out = evaluate(build(IOKey("a"), IOKey("b")), a=A, b=B)
    expected = np.asarray(want(A, B))
    assert out.shape == expected.shape
    if expected.dtype == bool or expected.dtype.kind == "i":
        np.testing.assert_array_equal(out, expected)
    else:
        np.testing.assert_allclose(out, expected, rtol=1e-12)


def test_expression_gradients_follow_torch():
    model = Model()
    model |= Linear(4)(input=IOKey("input", shape=[3, 4]), output="h")
    h = model.h
    model |= Relu()(input=((h * h).mean(axis=1, keepdim=True) - h[:, 0:1]).exp() @ h[0:1],
                    output="output")
    pm = ml.compile(model, ml.MlirBackend(dtype=ml.float64))
    params = pm.randomize_params(seed=2)
    seed = RNG.standard_normal((3, 4))
    out, grads = pm.evaluate(params, {"input": A}, output_gradients={"output": seed})
    t = {k: torch.tensor(v, requires_grad=True) for k, v in params.items()}
    th = torch.tensor(A) @ t["linear_0.weight"].T + t["linear_0.bias"]
    ref = torch.relu(((th * th).mean(1, keepdim=True) - th[:, 0:1]).exp() @ th[0:1])
    ref.backward(torch.tensor(seed))
    np.testing.assert_allclose(out["output"], ref.detach().numpy(), rtol=1e-12)
    for key in t:
        np.testing.assert_allclose(grads[key], t[key].grad.numpy(), rtol=1e-10, err_msg=key)


def test_calls_are_connections_and_create_builds_models():
    x = IOKey("x")
    hidden = Linear(3)(input=x)
    logits, probs = LogisticRegression()(input=hidden)
    model = Model.create(logits=logits, probs=probs, hidden=hidden)
    assert sorted(model.output_keys) == ["hidden", "logits", "probs"]
    assert model.input_keys == ["x"]
    pm = ml.compile(model, ml.MlirBackend(dtype=ml.float64), shapes={"x": [2, 5]})
    out = pm.evaluate(pm.randomize_params(seed=0), {"x": np.ones((2, 5))})
    np.testing.assert_allclose(out["probs"], 1 / (1 + np.exp(-out["logits"])), rtol=1e-12)
    # The same expression used twice is computed once.
    y = IOKey("a") * 2.0
    model = Model.create(first=y + 1.0, second=y - 1.0)
    assert sum(type(m).__name__ == "Multiply" for m, _ in model.submodels) == 1


def test_connections_keep_identity_semantics():
    a, b = IOKey("a"), IOKey("a")
    assert a != b and len({a, b}) == 2
    model = Model()
    model |= Relu()(input="x", output="y")
    conn = model.x
    assert {conn: 1}[conn] == 1 and conn == conn


def test_expression_errors():
    with pytest.raises(TypeError, match="boolean indexing is not supported"):
        IOKey("a")[True]
    with pytest.raises(TypeError, match=r"reshape takes ints \(and one -1\) or sizes of shapes"):
        IOKey("a").reshape("n", -1)
    with pytest.raises(TypeError, match="has one output"):
        _, _ = Relu()(input="x")
    model = Model()
    with pytest.raises(ml.MithrilError, match="cannot be bound to an expression"):
        model |= Relu()(input="x", output=IOKey("y") + 1)


def test_sizes_read_from_shapes():
    """x.shape[i], x.size(i) and arithmetic on them as reshape sizes and
    Arange bounds, as the original's GPT writes attention heads and
    positions."""
    from mithril.models import Add, Arange, Buffer, Embedding
    model = Model()
    model |= Linear(12)(input=IOKey("input", shape=[2, 3, 8]), output="h")
    h = model.h
    batch, steps = h.shape[0], h.size(1)
    heads = h.reshape(batch, steps, 4, h.shape[2] // 4).transpose((0, 2, 1, 3))
    model |= Buffer()(input=heads.reshape(batch * steps, -1), output="output")
    model |= Buffer()(input=h.reshape(h.shape[:2] + (-1,)), output="same")
    pm = ml.compile(model, ml.MlirBackend(dtype=ml.float64))
    params = pm.randomize_params(seed=0)
    x = RNG.standard_normal((2, 3, 8))
    out = pm.evaluate(params, {"input": x})
    hv = x @ params["linear_0.weight"].T + params["linear_0.bias"]
    np.testing.assert_allclose(out["output"],
                               hv.reshape(2, 3, 4, 3).transpose(0, 2, 1, 3).reshape(6, -1),
                               rtol=1e-12)
    np.testing.assert_allclose(out["same"], hv, rtol=1e-12)

    # Positions: an Arange as long as the token axis; a model given as a
    # connection is its output.
    model = Model()
    model |= Embedding(7, 3)(input=IOKey("input", shape=[2, 5]), output="tok")
    model |= Embedding(5, 3)(input=Arange(stop=model.tok.shape[1]), output="pos")
    model |= Add()(left="tok", right="pos", output="output")
    pm = ml.compile(model, ml.MlirBackend(dtype=ml.float64))
    params = pm.randomize_params(seed=1)
    tokens = np.array([[1, 2, 3, 4, 5], [0, 1, 2, 3, 6]])
    np.testing.assert_allclose(pm.evaluate(params, {"input": tokens})["output"],
                               params["weight"][tokens] + params["weight_1"], rtol=1e-12)


def test_size_errors():
    from mithril.models import Buffer
    model = Model()
    model |= Relu()(input="input", output="h")
    h = model.h
    with pytest.raises(TypeError, match="cannot be unpacked"):
        a, b = h.shape
    model |= Buffer()(input=h.reshape(h.shape[0], -1), output="output")
    with pytest.raises(ml.MithrilError, match="must be known at compile time"):
        ml.compile(model, ml.MlirBackend(), shapes={"input": [None, 3]})


def test_functional_builds_a_model_named_after_its_parameters():
    from mithril.models import Sigmoid, functional

    @functional
    def gated(input, gate, width=3):
        hidden = Linear(width)(input=input)
        return {"output": hidden * Sigmoid()(input=gate), "rows": input.len() * 0 + hidden}

    model = gated(width=2)
    assert sorted(model.input_keys) == ["gate", "input"]
    assert sorted(model.output_keys) == ["output", "rows"]
    pm = ml.compile(model, ml.MlirBackend(dtype=ml.float64),
                    shapes={"input": [3, 4], "gate": [3, 2]})
    params = pm.randomize_params(seed=0)
    x, gate = RNG.standard_normal((3, 4)), RNG.standard_normal((3, 2))
    out = pm.evaluate(params, {"input": x, "gate": gate})
    hidden = x @ params["linear_0.weight"].T + params["linear_0.bias"]
    np.testing.assert_allclose(out["output"], hidden / (1 + np.exp(-gate)), rtol=1e-12)
    np.testing.assert_allclose(out["rows"], hidden, rtol=1e-12)


def test_sizes_as_tensors():
    """A size read from a shape, met with a tensor, is a constant: the
    attention scale 1 / sqrt(E) written from the query's shape."""
    q = IOKey("q")
    model = Model.create(output=q / q.size(-1) + q.size(0) - 2 * q.len())
    pm = ml.compile(model, ml.MlirBackend(dtype=ml.float64), shapes={"q": [3, 4]})
    np.testing.assert_allclose(pm.evaluate({}, {"q": A})["output"], A / 4 + 3 - 6, rtol=1e-12)


def test_sizes_are_read_again_for_other_shapes():
    """A model compiled twice, for two lengths: the Arange reads each."""
    from mithril.models import Add, Arange, Embedding
    model = Model()
    model |= Embedding(7, 3)(input="input", output="tok")
    model |= Embedding(5, 3)(input=Arange(stop=model.tok.shape[1]), output="pos")
    model |= Add()(left="tok", right="pos", output="output")
    for length in (5, 4):
        pm = ml.compile(model, ml.MlirBackend(dtype=ml.float64), shapes={"input": [2, length]})
        params = pm.randomize_params(seed=1)
        tokens = np.ones((2, length), dtype=np.int64)
        np.testing.assert_allclose(pm.evaluate(params, {"input": tokens})["output"],
                                   params["weight"][tokens] + params["weight_1"][:length],
                                   rtol=1e-12)
