# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""TsnePJoint (mithril.tsne_p_joint) and t-SNE with calculate_p_joint=True,
against Mithril's own definition of the joint probabilities written in numpy
below (its NumPy backend's tsne_p_joint: find_optimal_sigmas by
binary_search on [0, 1001], calc_prob_matrix, perplexity_fn)."""

import numpy as np
import pytest

import mithril as ml
from mithril.errors import MithrilError
from mithril.models import IOKey, Model, TSNE, TSNECore, TsnePJoint


def reference_p_joint(squared, target, threshold):
    """Mithril's tsne_p_joint in numpy, in the arrays' own precision."""
    negative = -squared
    n = negative.shape[0]

    def softmax(x, zero_index):
        e = np.exp(x - x.max(axis=1, keepdims=True))
        if zero_index is None:
            np.fill_diagonal(e, 0.0)
        else:
            e[:, zero_index] = 0.0
        return e / e.sum(axis=1, keepdims=True)

    def conditional(rows, sigmas, zero_index=None):
        two = 2.0 * np.square(sigmas.reshape(-1, 1))
        scaled = np.zeros_like(rows)
        keep = (two != 0)[:, 0]
        scaled[keep] = rows[keep] / two[keep]
        return softmax(scaled, zero_index)

    def perplexity(i, sigma):
        p = np.clip(conditional(negative[i:i + 1], np.array([sigma], squared.dtype), i),
                    threshold, 1 - threshold)
        return (2 ** -np.sum(p * np.log2(p), 1))[0]

    sigmas = []
    for i in range(n):
        lower, upper, it = squared.dtype.type(0.0), squared.dtype.type(1001.0), 0
        while it <= 1000 and lower != upper:
            guess = (lower + upper) / 2
            value = perplexity(i, guess)
            if value == target:
                break
            it += 1
            if value > target:
                upper = guess
            elif value < target:
                lower = guess
        sigmas.append((lower + upper) / 2)
    p = conditional(negative, np.array(sigmas, squared.dtype))
    return (p + p.T) / (2.0 * n)


def squared_distances(rng, n, dims=4):
    x = rng.standard_normal((n, dims))
    return ((x[:, None] - x[None]) ** 2).sum(-1)


def p_joint_model(**kwargs):
    m = Model()
    m |= TsnePJoint(**kwargs).connect(squared_distances="d", output=IOKey("p"))
    return m


@pytest.mark.parametrize("dtype,tolerance", [("float64", 1e-12), ("float32", 2e-6)])
@pytest.mark.parametrize("n,perplexity", [(12, 5.0), (30, 10.0), (3, 20.0)])
def test_matches_mithril(dtype, tolerance, n, perplexity):
    # (3, 20.0): a perplexity 3 points cannot reach; the search ends at its bound.
    rng = np.random.default_rng(n)
    d = squared_distances(rng, n).astype(dtype)
    pm = ml.compile(p_joint_model(target_perplexity=perplexity), ml.MlirBackend(dtype=dtype),
                    shapes={"d": [n, n]}, inference=True)
    got = pm.evaluate({}, {"d": d})["p"]
    expected = reference_p_joint(d, np.array(perplexity, dtype), np.finfo(dtype).eps)
    np.testing.assert_allclose(got, expected, rtol=0, atol=tolerance * np.abs(expected).max())
    np.testing.assert_allclose(got.sum(), 1.0, rtol=1e-6)
    np.testing.assert_array_equal(got, got.T)


def test_threshold_and_a_perplexity_given_at_run_time():
    rng = np.random.default_rng(3)
    d = squared_distances(rng, 10)
    # Duplicated points: zero distances off the diagonal.
    d[1, 2] = d[2, 1] = 0.0
    m = Model()
    m |= TsnePJoint(threshold=1e-3).connect(squared_distances="d", target_perplexity="t",
                                            output=IOKey("p"))
    pm = ml.compile(m, ml.MlirBackend(dtype="float64"), shapes={"d": [10, 10], "t": []},
                    inference=True)
    for perplexity in (2.0, 6.0):
        got = pm.evaluate({}, {"d": d, "t": np.array(perplexity)})["p"]
        np.testing.assert_allclose(got, reference_p_joint(d, perplexity, 1e-3), rtol=1e-12,
                                   atol=1e-15)


@pytest.mark.parametrize("exact_distances", [True, False])
def test_tsne_core_computes_its_p_joint(exact_distances):
    rng = np.random.default_rng(5)
    n = 9
    distances = np.sqrt(squared_distances(rng, n)) if exact_distances else \
        squared_distances(rng, n)
    predicted = squared_distances(rng, n, dims=2)
    computed = ml.compile(TSNECore(exact_distances=exact_distances, calculate_p_joint=True,
                                   perplexity=4.0),
                          ml.MlirBackend(dtype="float64"),
                          shapes={"distances": [n, n], "pred_distances": [n, n]},
                          trainable_keys={"pred_distances"})
    given = ml.compile(TSNECore(exact_distances=exact_distances), ml.MlirBackend(dtype="float64"),
                       shapes={"distances": [n, n], "pred_distances": [n, n], "p_joint": [n, n]},
                       trainable_keys={"pred_distances"})
    assert "p_joint" not in computed.input_keys
    squared = distances ** 2 if exact_distances else distances
    p = reference_p_joint(squared, 4.0, np.finfo(np.float64).eps)
    out, grads = computed.evaluate({"pred_distances": predicted}, {"distances": distances},
                                   output_gradients=True)
    out_ref, grads_ref = given.evaluate({"pred_distances": predicted},
                                        {"distances": distances, "p_joint": p},
                                        output_gradients=True)
    np.testing.assert_allclose(out["output"], out_ref["output"], rtol=1e-10)
    np.testing.assert_allclose(grads["pred_distances"], grads_ref["pred_distances"], rtol=1e-9,
                               atol=1e-14)


def test_tsne_trains_with_a_computed_p_joint():
    rng = np.random.default_rng(6)
    n = 8
    points = rng.standard_normal((n, 5))
    model = TSNE(prediction_dim=2, input_type="points", preplexity=3.0, calculate_p_joint=True)
    pm = ml.compile(model, ml.MlirBackend(dtype="float64"),
                    shapes={"input": [n, 5], "coords": [n, 2]}, constant_keys={"norm": 2.0},
                    trainable_keys={"coords"})
    coords = {"coords": rng.standard_normal((n, 2)) * 1e-2}
    first = pm.evaluate(coords, {"input": points})["output"]
    for _ in range(50):
        _, grads = pm.evaluate(coords, {"input": points}, output_gradients=True)
        coords["coords"] = coords["coords"] - 1.0 * grads["coords"]
    assert pm.evaluate(coords, {"input": points})["output"] < first


def test_no_gradient_through_the_search():
    m = Model()
    m |= TsnePJoint(target_perplexity=3.0).connect(squared_distances="d", output=IOKey("p"))
    pm = ml.compile(m, ml.MlirBackend(dtype="float64"), shapes={"d": [4, 4]},
                    trainable_keys={"d"})
    d = squared_distances(np.random.default_rng(7), 4)
    with pytest.raises(MithrilError, match="tsne_p_joint.*no gradient rule"):
        pm.evaluate({"d": d}, {}, output_gradients=True)


def test_distances_must_be_square():
    with pytest.raises(MithrilError, match="tsne_p_joint.*square matrix"):
        ml.compile(p_joint_model(target_perplexity=3.0), ml.MlirBackend(),
                   shapes={"d": [3, 4]}, inference=True)
