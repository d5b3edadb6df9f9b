# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""Mithril's recurrent models (RNNCell, ManyToOne, OneToMany, EncoderDecoder)
against the same recurrences written in torch (float64: outputs and the
gradients of every differentiable input), and its metrics (Accuracy,
Precision, Recall, F1, AUC) against numpy versions of the original's
definitions; then the errors their arguments give."""

import numpy as np
import pytest
import torch

import mithril as ml
from mithril.errors import MithrilError
from mithril.models import (AUC, F1, Accuracy, EncoderDecoder, Linear, LSTMCell, ManyToOne, Mean,
                            OneToMany, Precision, Recall, RNNCell, SquaredError, TrainModel)
from torch_oracle import compile_eval as run_model, lstm_step, torch_run

F = torch.nn.functional
RTOL, ATOL = 1e-10, 1e-12


# Helpers -------------------------------------------------------------------------


def assert_same(got, want):
    assert set(want) <= set(got), (sorted(got), sorted(want))
    for key, value in want.items():
        np.testing.assert_allclose(got[key], value, rtol=RTOL, atol=ATOL, err_msg=key)


def check_against_torch(model, fn, data, params, rng, backend, shapes=None):
    """The outputs of `model` and the gradients of `params` are torch's `fn`'s
    for random seeds of every output."""
    as_torch = {k: torch.tensor(v) for k, v in {**data, **params}.items()}
    seeds = {k: rng.standard_normal(tuple(v.shape)) for k, v in fn(**as_torch).items()}
    out, grads = run_model(model, backend, data, params, seeds, shapes)
    want_out, want_grads = torch_run(fn, data, params, seeds)
    assert_same(out, want_out)
    assert_same(grads, want_grads)


# The cells in torch: (new states, hidden_compl, output), the original's way:
# the first N rows of the previous state are updated.

def rnn_step(x, hidden, w_ih, w_hh, w_ho, bias_h, bias_o):
    n = x.shape[0]
    h = torch.tanh(hidden[:n] @ w_hh.T + x @ w_ih.T + bias_h)
    return {"hidden": h}, hidden[n:], h @ w_ho.T + bias_o



RNN_WEIGHTS = ("w_ih", "w_hh", "w_ho", "bias_h", "bias_o")
LSTM_WEIGHTS = ("w_f", "w_i", "w_c", "w_o", "w_out", "bias_f", "bias_i", "bias_c", "bias_o",
                "bias_out")
CELLS = {"rnn": (RNNCell, rnn_step, RNN_WEIGHTS, ("hidden",)),
         "lstm": (LSTMCell, lstm_step, LSTM_WEIGHTS, ("hidden", "cell"))}


def cell_weights(kind, rng, d_in, d_hid, d_out, prefix=""):
    if kind == "rnn":
        shapes = {"w_ih": (d_hid, d_in), "w_hh": (d_hid, d_hid), "w_ho": (d_out, d_hid),
                  "bias_h": (d_hid,), "bias_o": (d_out,)}
    else:
        shapes = {f"w_{g}": (d_hid, d_in + d_hid) for g in "fico"}
        shapes |= {f"bias_{g}": (d_hid,) for g in "fico"}
        shapes |= {"w_out": (d_out, d_hid), "bias_out": (d_out,)}
    return {prefix + k: rng.standard_normal(s) * 0.6 for k, s in shapes.items()}


def initial_states(kind, rng, rows, d_hid, prefix=""):
    states = CELLS[kind][3]
    return {f"{prefix}initial_{s}": rng.standard_normal((rows, 1, d_hid)) for s in states}


def run_many_to_one(kind, length, prefix="", **t):
    """The original ManyToOne in torch: outputs output0.. and hidden_concat."""
    _, step, weights, states = CELLS[kind]
    w = {k: t[prefix + k] for k in weights}
    state = {s: t[f"{prefix}initial_{s}"] for s in states}
    outs, finals = {}, []
    for i in range(length):
        state, compl, outs[f"output{i}"] = step(t[f"input{i}"], **state, **w)
        if i == length - 1:
            finals += [state["hidden"], compl]
        elif i > 0:
            finals.append(compl)
    outs["hidden_concat"] = torch.cat(finals, dim=0)
    return outs


def run_one_to_many(kind, length, teacher_forcing, x, state, w, targets):
    _, step, _, _ = CELLS[kind]
    outs = {}
    for i in range(length):
        if i > 0:
            source = targets[f"target{i - 1}"] if teacher_forcing else outs[f"output{i - 1}"]
            x = source[:targets[f"target{i}"].shape[0]]
        state, _, outs[f"output{i}"] = step(x, **state, **w)
    return outs


# RNNCell ---------------------------------------------------------------------------

@pytest.mark.parametrize("n,m", [(3, 5), (2, 2)])
def test_rnn_cell(n, m, backend64, rng):
    # With m > n the first n rows of prev_hidden are updated and the others
    # come out as hidden_compl (no rows when m == n).
    params = {"input": rng.standard_normal((n, 1, 3)),
              "prev_hidden": rng.standard_normal((m, 1, 4))}
    params |= cell_weights("rnn", rng, 3, 4, 2)

    def fn(input, prev_hidden, **w):
        state, compl, out = rnn_step(input, prev_hidden, **w)
        return {"hidden": state["hidden"], "hidden_compl": compl, "output": out}

    check_against_torch(RNNCell(), fn, {}, params, rng, backend64)


def test_rnn_cell_terminals():
    cell = RNNCell()
    assert sorted(cell.input_keys) == sorted(["input", "prev_hidden", *RNN_WEIGHTS])
    assert sorted(cell.output_keys) == ["hidden", "hidden_compl", "output"]
    assert cell.canonical_input == "input" and cell.canonical_output == "output"


def test_rnn_cell_with_a_dynamic_batch(backend64, rng):
    # Input and state with one dynamic batch size: all of the state is used
    # (the original's M == N), hidden_compl has no rows.
    shapes = {"input": [None, 1, 3], "prev_hidden": [None, 1, 4], "w_ih": [4, 3],
              "w_hh": [4, 4], "w_ho": [2, 4]}
    pm = ml.compile(RNNCell(), backend64, shapes=shapes)
    params = pm.randomize_params(seed=0)
    for n in (2, 5):
        x, h = rng.standard_normal((n, 1, 3)), rng.standard_normal((n, 1, 4))
        out = pm.evaluate(params, {"input": x, "prev_hidden": h})
        state, compl, want = rnn_step(torch.tensor(x), torch.tensor(h),
                                      **{k: torch.tensor(v) for k, v in params.items()})
        np.testing.assert_allclose(out["hidden"], state["hidden"].numpy(), rtol=RTOL)
        np.testing.assert_allclose(out["output"], want.numpy(), rtol=RTOL)
        assert out["hidden_compl"].shape == (0, 1, 4)


def test_rnn_cell_needs_a_known_batch(backend64):
    with pytest.raises(MithrilError, match="RNNCell needs the batch size"):
        ml.compile(RNNCell(), backend64, shapes={"input": [None, 1, 3], "prev_hidden": [4, 1, 5],
                                                 "w_ho": [2, 5]})


# ManyToOne -------------------------------------------------------------------------

@pytest.mark.parametrize("kind,rows", [("rnn", (4, 3, 3, 1)), ("lstm", (3, 3, 2)),
                                       ("rnn", (2,))])
def test_many_to_one(kind, rows, backend64, rng):
    # Batches sorted by length shrink over time: step t runs rows[t] sequences.
    length, d_in, d_hid, d_out = len(rows), 3, 4, 2
    params = {f"input{i}": rng.standard_normal((r, 1, d_in)) for i, r in enumerate(rows)}
    params |= initial_states(kind, rng, rows[0], d_hid) | cell_weights(kind, rng, d_in, d_hid,
                                                                      d_out)
    model = ManyToOne(CELLS[kind][0](), length)
    assert model.canonical_input == "input0" and model.canonical_output == "hidden_concat"
    assert sorted(model.output_keys) == sorted([f"output{i}" for i in range(length)]
                                               + ["hidden_concat"])
    check_against_torch(model, lambda **t: run_many_to_one(kind, length, **t), {}, params, rng,
                        backend64)


def test_many_to_one_training_example(backend64, rng):
    # The original's model_api/many_to_one_any_backend_training.py, smaller:
    # a loss on output4 and constant inputs. Our shape inference cannot take
    # w_ho's rows back through the squared_error op from the target, so its
    # shape is given (the other weights' sizes are inferred).
    batch, d_in, d_hid, length, d_out = 4, 3, 5, 5, 2
    train_model = TrainModel(ManyToOne(RNNCell(), length))
    train_model.add_loss(SquaredError(), input=f"output{length - 1}", target="target",
                         reduce_steps=[Mean()])
    constant_keys = {"initial_hidden": rng.standard_normal((batch, 1, d_hid)),
                     "target": rng.standard_normal((batch, 1, d_out))}
    constant_keys |= {f"input{i}": rng.standard_normal((batch, 1, d_in)) for i in range(length)}
    pm = ml.compile(train_model, backend64, constant_keys=constant_keys,
                    shapes={"w_ho": [d_out, d_hid]})
    params = pm.randomize_params(seed=3)
    assert {k: v.shape for k, v in params.items()} == {
        "w_ih": (d_hid, d_in), "w_hh": (d_hid, d_hid), "w_ho": (d_out, d_hid),
        "bias_h": (d_hid,), "bias_o": (d_out,)}

    tp = {k: torch.tensor(v.copy(), requires_grad=True) for k, v in params.items()}
    tc = {k: torch.tensor(v) for k, v in constant_keys.items()}
    opt = torch.optim.Adam(list(tp.values()), lr=0.01)

    def torch_cost():
        outs = run_many_to_one("rnn", length, **tc, **tp)
        return ((outs[f"output{length - 1}"] - tc["target"]) ** 2).mean()

    out, grads = pm.evaluate(params, output_gradients={"final_cost": np.ones(())})
    cost = torch_cost()
    cost.backward()
    np.testing.assert_allclose(out["final_cost"], cost.item(), rtol=RTOL)
    for key, value in tp.items():
        np.testing.assert_allclose(grads[key], value.grad.numpy(), rtol=RTOL, atol=ATOL)

    optimizer = ml.Adam(learning_rate=0.01)
    costs = []
    for _ in range(3):
        costs.append(float(pm.train_step(params, {}, optimizer)["final_cost"]))
        opt.zero_grad()
        torch_cost().backward()
        opt.step()
    assert costs[2] < costs[0]
    for key, value in tp.items():
        np.testing.assert_allclose(params[key], value.detach().numpy(), rtol=1e-9, atol=1e-12)


# OneToMany -------------------------------------------------------------------------

@pytest.mark.parametrize("kind,teacher_forcing,rows", [
    ("rnn", False, (4, 3, 3, 1)), ("rnn", True, (3, 2, 2)), ("lstm", False, (3, 3, 1)),
    ("lstm", True, (2, 2))])
def test_one_to_many(kind, teacher_forcing, rows, backend64, rng):
    # Step t >= 1 runs rows[t] sequences (target{t}'s batch) on the previous
    # output, or with teacher forcing on the previous target.
    length, d = len(rows), 3
    params = {"input": rng.standard_normal((rows[0], 1, d))}
    params |= initial_states(kind, rng, rows[0], 4) | cell_weights(kind, rng, d, 4, d)
    targets = {f"target{i}": rng.standard_normal((r, 1, d)) for i, r in enumerate(rows)}
    used = {k: v for k, v in targets.items() if teacher_forcing and k != f"target{length - 1}"}
    params |= used  # the targets that are inputs of a step: their gradients too
    data = {k: v for k, v in targets.items() if k not in used and k != "target0"}
    _, _, weights, states = CELLS[kind]
    model = OneToMany(CELLS[kind][0](), length, teacher_forcing=teacher_forcing)
    assert model.canonical_input == "input" and model.canonical_output == f"output{length - 1}"
    assert sorted(model.input_keys) == sorted(
        ["input", *weights, *(f"initial_{s}" for s in states), *data, *used])

    def fn(input, **t):
        return run_one_to_many(kind, length, teacher_forcing, input,
                               {s: t[f"initial_{s}"] for s in states},
                               {k: t[k] for k in weights},
                               {k: t[k] for k in targets if k in t})

    check_against_torch(model, fn, data, params, rng, backend64)


# EncoderDecoder --------------------------------------------------------------------

@pytest.mark.parametrize("kind,teacher_forcing", [("rnn", False), ("lstm", True)])
def test_encoder_decoder(kind, teacher_forcing, backend64, rng):
    enc_rows, dec_rows, d_in, d_hid = (3, 2, 1), (3, 2), 2, 4
    _, _, weights, states = CELLS[kind]
    params = {f"input{i}": rng.standard_normal((r, 1, d_in)) for i, r in enumerate(enc_rows)}
    params |= initial_states(kind, rng, 3, d_hid) | cell_weights(kind, rng, d_in, d_hid, 2)
    params |= cell_weights(kind, rng, d_in, d_hid, d_in, prefix="decoder_")
    params["decoder_input"] = rng.standard_normal((3, 1, d_in))
    if kind == "lstm":
        params["decoder_initial_cell"] = rng.standard_normal((3, 1, d_hid))
    targets = {f"target{i}": rng.standard_normal((r, 1, d_in)) for i, r in enumerate(dec_rows)}
    if teacher_forcing:
        params["target0"] = targets["target0"]
    data = {"target1": targets["target1"], "indices": np.array([2, 0, 1])}
    model = EncoderDecoder(CELLS[kind][0](), len(enc_rows), len(dec_rows),
                           teacher_forcing=teacher_forcing)
    assert sorted(model.output_keys) == ["output0", "output1"]
    assert model.canonical_output == "output1"

    def fn(indices, **t):
        encoded = run_many_to_one(kind, len(enc_rows), **t)
        state = {"hidden": encoded["hidden_concat"][indices]}
        if kind == "lstm":
            state["cell"] = t["decoder_initial_cell"]
        return run_one_to_many(kind, len(dec_rows), teacher_forcing, t["decoder_input"], state,
                               {k: t["decoder_" + k] for k in weights},
                               {"target0": t.get("target0"), "target1": t["target1"]})

    check_against_torch(model, fn, data, params, rng, backend64)


# Metrics ---------------------------------------------------------------------------
# numpy versions of the original's Metric, Accuracy, Precision, Recall, F1
# and AUC (mithril/models/models.py and the backends' auc_core, trapezoid).

def formatted(pred, label, threshold=None, is_binary=False, is_pred_one_hot=True,
              is_label_one_hot=True):
    if is_label_one_hot:
        label = np.argmax(label, axis=-1)
    if is_binary and is_pred_one_hot:
        pred = np.argmax(pred, axis=-1)
    elif is_binary:
        pred = np.where(pred > threshold, 1, 0)
    elif is_pred_one_hot:
        pred = np.argmax(pred, axis=-1)
    return pred, label, pred - label


def np_accuracy(pred, label, **kw):
    _, label, out = formatted(pred, label, **kw)
    return np.sum(out == 0) / label.shape[0]


def np_score(kind, pred, label, average="micro", n_classes=None, **kw):
    pred, label, out = formatted(pred, label, **kw)
    if average == "micro":
        tp, wrong = np.sum(out == 0), np.sum(out != 0)
        return tp / (tp + wrong)
    total = 0.0
    for k in range(n_classes):
        in_class = label == k
        tp = np.sum((out == 0) & in_class)
        fp = np.sum((pred == k) & ~in_class)
        fn = np.sum((pred != k) & in_class)
        denominator = {"precision": tp + fp, "recall": tp + fn, "f1": tp + 0.5 * (fp + fn)}[kind]
        score = tp / (1 if denominator == 0 else denominator)
        total += score * np.sum(in_class) / label.shape[0] if average == "weighted" else score
    return total / np.unique(label).shape[0] if average == "macro" else total


def np_auc(pred, label, n_classes, is_label_one_hot=True):
    if is_label_one_hot:
        label = np.argmax(label, axis=-1)
    total = 0.0
    for k in range(n_classes):
        scores, positive = (pred[:, k] if n_classes != 1 else pred), label == k
        tprs, fprs = [], []
        for threshold in np.flip(np.unique(np.sort(scores))):
            above = scores >= threshold
            tprs.append(np.sum(above & positive) / np.sum(positive))
            fprs.append(np.sum(above & ~positive) / np.sum(~positive))
        total += np.trapz(tprs, fprs) / n_classes
    return total


def run_metric(model, backend, pred, label, shapes=None):
    shapes = shapes or {"pred": list(pred.shape), "label": list(label.shape)}
    pm = ml.compile(model, backend, shapes=shapes, inference=True)
    return pm.evaluate({}, {"pred": pred, "label": label})["output"]


def one_hot_data(rng, n=10, k=4, absent=()):
    classes = [c for c in range(k) if c not in absent]
    label = np.eye(k)[rng.choice(classes, n)]
    label[:len(classes)] = np.eye(k)[classes]  # every class but `absent` appears
    pred = rng.standard_normal((n, k))
    pred[: n // 2] += 2 * label[: n // 2]  # some right, some wrong
    return pred, label


ACCURACY_CASES = [
    {},
    {"is_pred_one_hot": False, "is_label_one_hot": False},
    {"is_binary": True, "threshold": 0.4, "is_pred_one_hot": False, "is_label_one_hot": False},
    {"is_binary": True, "threshold": 0.5},
]


def metric_inputs(rng, kw, n=10, k=4):
    pred, label = one_hot_data(rng, n, k)
    if kw.get("is_binary") and not kw.get("is_pred_one_hot", True):
        return rng.uniform(size=n), rng.integers(0, 2, n).astype(float)
    if not kw.get("is_pred_one_hot", True):
        pred = np.argmax(pred, axis=-1).astype(float)
    if not kw.get("is_label_one_hot", True):
        label = np.argmax(label, axis=-1).astype(float)
    return pred, label


@pytest.mark.parametrize("kw", ACCURACY_CASES)
def test_accuracy(kw, backend64, rng):
    pred, label = metric_inputs(rng, kw)
    got = run_metric(Accuracy(**kw), backend64, pred, label)
    assert got.shape == ()
    np.testing.assert_allclose(got, np_accuracy(pred, label, **kw), rtol=RTOL)


@pytest.mark.parametrize("cls,kind", [(Precision, "precision"), (Recall, "recall"), (F1, "f1")])
@pytest.mark.parametrize("average", ["micro", "macro", "weighted"])
def test_class_scores(cls, kind, average, backend64, rng):
    # Class 2 never is a label: its score has a zero denominator (counted
    # as 1), and "macro" divides by the 3 distinct labels, not n_classes.
    pred, label = one_hot_data(rng, n=12, k=4, absent=(2,))
    pred[0] = [0, 0, 5, 0]  # class 2 predicted once: a false positive
    n_classes = None if average == "micro" else 4
    got = run_metric(cls(average=average, n_classes=n_classes), backend64, pred, label)
    want = np_score(kind, pred, label, average, n_classes)
    np.testing.assert_allclose(got, want, rtol=RTOL)


def test_class_scores_of_index_labels_and_binary_threshold(backend64, rng):
    pred = rng.integers(0, 3, 9).astype(float)
    label = np.array([0, 1, 2, 2, 1, 0, 3, 1, 1], dtype=float)  # 3 is outside n_classes
    got = run_metric(F1("macro", 3, is_pred_one_hot=False, is_label_one_hot=False), backend64,
                     pred, label)
    want = np_score("f1", pred, label, "macro", 3, is_pred_one_hot=False, is_label_one_hot=False)
    np.testing.assert_allclose(got, want, rtol=RTOL)
    kw = {"threshold": 0.3, "is_binary": True, "is_pred_one_hot": False,
          "is_label_one_hot": False}
    probs, truth = rng.uniform(size=8), np.array([0, 1, 1, 0, 1, 0, 0, 1], dtype=float)
    got = run_metric(Recall("weighted", 2, **kw), backend64, probs, truth)
    np.testing.assert_allclose(got, np_score("recall", probs, truth, "weighted", 2, **kw),
                               rtol=RTOL)


def test_metrics_with_a_dynamic_batch(backend64, rng):
    # The sample count and the distinct labels are then counted at run time.
    pred, label = one_hot_data(rng, n=10, k=4, absent=(1,))
    shapes = {"pred": [None, 4], "label": [None, 4]}
    pm = ml.compile(Precision("macro", 4), backend64, shapes=shapes, inference=True)
    for n in (10, 7):
        got = pm.evaluate({}, {"pred": pred[:n], "label": label[:n]})["output"]
        np.testing.assert_allclose(got, np_score("precision", pred[:n], label[:n], "macro", 4),
                                   rtol=RTOL)
    pm = ml.compile(Accuracy(), backend64, shapes=shapes, inference=True)
    got = pm.evaluate({}, {"pred": pred[:6], "label": label[:6]})["output"]
    np.testing.assert_allclose(got, np_accuracy(pred[:6], label[:6]), rtol=RTOL)


def test_metrics_have_no_gradient(backend64, rng):
    pred, label = metric_inputs(rng, {"is_pred_one_hot": False, "is_label_one_hot": False})
    pm = ml.compile(Accuracy(is_pred_one_hot=False, is_label_one_hot=False), backend64,
                    shapes={"pred": [10], "label": [10]}, trainable_keys=["pred"])
    out, grads = pm.evaluate({"pred": pred}, {"label": label},
                             output_gradients={"output": np.ones(())})
    np.testing.assert_allclose(out["output"], np_accuracy(pred, label, is_pred_one_hot=False,
                                                          is_label_one_hot=False))
    assert not np.any(grads["pred"])


@pytest.mark.parametrize("n_classes,one_hot", [(3, True), (3, False), (1, False)])
def test_auc(n_classes, one_hot, backend64, rng):
    # Rounded scores tie: the original's curve has one point per distinct
    # score (ties count 1/2 in the Mann-Whitney form).
    n = 14
    index = np.arange(n) % max(n_classes, 2)
    rng.shuffle(index)
    pred = np.round(rng.uniform(size=(n, n_classes)) + 0.3 * (index[:, None] == np.arange(
        n_classes)), 1)
    for k in range(n_classes):
        # The top score shared by a positive and a negative: the original's
        # curve then starts off the origin, at (1/negatives, 1/positives).
        pred[np.flatnonzero(index == k)[0], k] = pred[np.flatnonzero(index != k)[0], k] = 5.0
    if n_classes == 1:
        pred = pred[:, 0]
    label = np.eye(max(n_classes, 2))[index] if one_hot else index.astype(float)
    got = run_metric(AUC(n_classes, is_label_one_hot=one_hot), backend64, pred, label)
    np.testing.assert_allclose(got, np_auc(pred, label, n_classes, one_hot), rtol=RTOL)


def test_metric_terminals():
    for model in (Accuracy(), Precision(), Recall("macro", 3), F1("weighted", 2), AUC(2)):
        assert sorted(model.input_keys) == ["label", "pred"]
        assert model.output_keys == ["output"]
        assert model.canonical_input == "pred" and model.canonical_output == "output"


# Errors ----------------------------------------------------------------------------

@pytest.mark.parametrize("make,error,match", [
    (lambda: ManyToOne(RNNCell, 3), TypeError, "instance such as RNNCell"),
    (lambda: ManyToOne(Linear(3), 3), TypeError, "not a recurrent cell"),
    (lambda: ManyToOne("rnn", 3), TypeError, "must be a cell model"),
    (lambda: ManyToOne(RNNCell(), 0), MithrilError, "at least 1"),
    (lambda: ManyToOne(RNNCell(), 2.5), TypeError, "must be an int"),
    (lambda: OneToMany(LSTMCell(), 3, teacher_forcing=1), TypeError, "must be a bool"),
    (lambda: EncoderDecoder(RNNCell(), 3, 0), MithrilError, "at least 1"),
    (lambda: Precision(average="mean"), MithrilError, "average must be one of"),
    (lambda: Recall("macro"), MithrilError, "needs n_classes"),
    (lambda: F1("weighted", 0), MithrilError, "n_classes must be positive"),
    (lambda: F1("macro", 2.0), TypeError, "must be an int"),
    (lambda: Accuracy(is_binary=True), MithrilError, "needs a threshold"),
    (lambda: Accuracy(threshold="0.5"), TypeError, "must be a number"),
    (lambda: AUC(0), MithrilError, "n_classes must be positive"),
    (lambda: AUC(2, is_label_one_hot="yes"), TypeError, "must be a bool"),
])
def test_argument_errors(make, error, match):
    with pytest.raises(error, match=match):
        make()


@pytest.mark.parametrize("make", [
    lambda **kw: ManyToOne(RNNCell(), 2, **kw), lambda **kw: OneToMany(LSTMCell(), 2, **kw),
    lambda **kw: EncoderDecoder(RNNCell(), 2, 2, **kw), lambda **kw: AUC(2, **kw),
    lambda **kw: Accuracy(**kw), lambda **kw: F1(**kw)])
def test_unknown_keywords_are_rejected(make):
    make()
    with pytest.raises(TypeError, match=r"\(\) got an unexpected keyword argument 'no_such_arg'"):
        make(no_such_arg=1)


def test_metrics_in_float32(backend32, rng):
    # argmax gives int32 beside float32: the counts are the backend's floats.
    pred, label = one_hot_data(rng, n=12, k=3)
    for model, want in ((Accuracy(), np_accuracy(pred, label)),
                        (F1("macro", 3), np_score("f1", pred, label, "macro", 3)),
                        (AUC(3), np_auc(pred, label, 3))):
        got = run_metric(model, backend32, pred.astype(np.float32), label.astype(np.float32))
        assert got.dtype == np.float32
        np.testing.assert_allclose(got, want, rtol=1e-6)


def test_weight_rows_from_the_loss_target(backend64, rng):
    """Shape inference runs the loss's broadcasting rule backward."""
    # The smallest case: Linear() trained on a target of 2 columns.
    train_model = TrainModel(Linear())
    train_model.add_loss(SquaredError(), input="output", target="target", reduce_steps=[Mean()])
    pm = ml.compile(train_model, backend64, constant_keys={
        "input": rng.standard_normal((4, 3)), "target": rng.standard_normal((4, 2))})
    assert pm.randomize_params()["weight"].shape == (2, 3)


def test_lstm_cell_body_and_the_cell_base_class():
    # The original's LSTMCellBody (the gate math without the output layer)
    # and Cell, the base class of the recurrent cells; BaseKey is IOKey.
    from mithril.models import BaseKey, Cell, IOKey, LSTMCell, LSTMCellBody, Model, RNNCell
    assert issubclass(LSTMCell, Cell) and issubclass(RNNCell, Cell)
    assert BaseKey is ml.IOKey
    body = LSTMCellBody()
    assert body.output_keys == ["cell", "hidden"]
    model = Model()
    model |= body(input="input", prev_hidden="prev_hidden", prev_cell="prev_cell",
                  hidden=IOKey("hidden"), cell=IOKey("cell"))
    pm = ml.compile(model, ml.MlirBackend(dtype=ml.float64),
                    shapes={"input": [2, 1, 3], "prev_hidden": [3, 1, 4], "prev_cell": [3, 1, 4]},
                    data_keys=["input", "prev_hidden", "prev_cell"])
    p = pm.randomize_params(seed=0)
    rng = np.random.default_rng(0)
    x, h, c = (rng.standard_normal(s) for s in [(2, 1, 3), (3, 1, 4), (3, 1, 4)])
    out = pm.evaluate(p, {"input": x, "prev_hidden": h, "prev_cell": c})
    joint = np.concatenate([x, h[:2]], -1)

    def gate(w, b, f):
        return f(joint @ p[w].T + p[b])

    sigmoid = lambda z: 1 / (1 + np.exp(-z))  # noqa: E731
    cell = c[:2] * gate("w_f", "bias_f", sigmoid) + gate("w_i", "bias_i", sigmoid) * gate(
        "w_c", "bias_c", np.tanh)
    np.testing.assert_allclose(out["cell"], cell, rtol=1e-13)
    np.testing.assert_allclose(out["hidden"], np.tanh(cell) * gate("w_o", "bias_o", sigmoid),
                               rtol=1e-13)
