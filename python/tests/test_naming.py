# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""compile(use_short_namings=...): the original Mithril's names for a
compiled model's terminals (../shared/notes/mithril-api.md, section 7), and
every form's names taken wherever a model takes names."""

import pickle

import numpy as np
import pytest

import mithril as ml
from mithril.errors import KeyNotFoundError
from mithril.models import Add, Linear, Model, Relu, Sigmoid


def mlp():
    m = Model()
    m |= Linear(8).connect(input="input")
    m += Relu()
    m += Linear(3).connect(output=ml.IOKey("output"))
    return m


def nested():
    """Two unnamed Linears, a named block with a renamed weight and an
    unnamed output at the top."""
    m = Model()
    m |= Linear(8).connect(input="input")
    m += Relu()
    m += Linear(4)
    block = Model(name="Block")
    block |= Linear(3).connect(input="x", weight="w")
    block += Sigmoid().connect(output=ml.IOKey("y"))
    m += block
    m += Add().connect(right=ml.IOKey("extra"))
    return m


NESTED_SHAPES = {"input": [2, 5], "extra": [2, 3]}


def data(rng):
    return {"input": rng.standard_normal((2, 5)).astype(np.float32),
            "extra": rng.standard_normal((2, 3)).astype(np.float32)}


def test_short_names_are_the_originals():
    # The reference's own runs: Linear -> Relu -> Linear gives weight_0,
    # weight_1, bias_0, bias_1; a single Linear gives weight and bias.
    pm = ml.compile(mlp(), ml.MlirBackend(), shapes={"input": [2, 5]},
                    use_short_namings=True)
    assert sorted(pm.trainable_keys) == ["bias_0", "bias_1", "weight_0", "weight_1"]
    assert pm.shapes["weight_0"] == (8, 5) and pm.shapes["weight_1"] == (3, 8)
    single = Model()
    single |= Linear(4).connect(input="input", output=ml.IOKey("output"))
    pm = ml.compile(single, ml.MlirBackend(), shapes={"input": [2, 5]},
                    use_short_namings=True)
    assert sorted(pm.trainable_keys) == ["bias", "weight"]


def test_names_of_every_form():
    m = nested()
    by_form = {mode: ml.compile(m, ml.MlirBackend(), shapes=NESTED_SHAPES,
                                use_short_namings=mode)
               for mode in (None, True, False)}
    assert by_form[None].input_keys == [
        "input", "extra", "linear_0.weight", "linear_0.bias", "linear_1.weight",
        "linear_1.bias", "Block.w", "Block.linear_0.bias"]
    assert by_form[True].input_keys == [
        "input", "extra", "weight_0", "bias_0", "weight_1", "bias_1", "w", "bias_2"]
    # Long: submodel names lowercased, a class's only unnamed instance by
    # the class alone.
    assert by_form[False].input_keys == [
        "input", "extra", "linear_0_weight", "linear_0_bias", "linear_1_weight",
        "linear_1_bias", "block_w", "block_linear_bias"]
    # The unnamed output of the top is named by its origin, as the original's.
    assert by_form[None].output_keys[0].startswith("$")
    assert by_form[True].output_keys == by_form[False].output_keys == ["output"]


def test_every_form_evaluates_alike():
    rng = np.random.default_rng(0)
    m = nested()
    x = data(rng)
    reference = ml.compile(m, ml.MlirBackend(), shapes=NESTED_SHAPES)
    params = reference.randomize_params(seed=3)
    out, grads = reference.evaluate(params, x, output_gradients=True)
    (name,) = reference.output_keys
    for mode in (True, False):
        pm = ml.compile(m, ml.MlirBackend(), shapes=NESTED_SHAPES, use_short_namings=mode)
        # Parameters named by paths are taken too.
        theirs = {pm.trainable_keys[reference.trainable_keys.index(k)]: v
                  for k, v in params.items()}
        for given in (theirs, params):
            o, g = pm.evaluate(given, x, output_gradients=True)
            np.testing.assert_array_equal(o["output"], out[name])
            assert sorted(g) == sorted(pm.trainable_keys)
            for path, value in grads.items():
                np.testing.assert_array_equal(g[path], value)  # looked up by path
    # The default model takes and answers to the original's names as well.
    short = {"weight_0": params["linear_0.weight"], "bias_0": params["linear_0.bias"],
             "weight_1": params["linear_1.weight"], "bias_1": params["linear_1.bias"],
             "w": params["Block.w"], "bias_2": params["Block.linear_0.bias"]}
    o, g = reference.evaluate(short, x, output_gradients=True)
    np.testing.assert_array_equal(o["output"], out[name])
    np.testing.assert_array_equal(g["weight_0"], grads["linear_0.weight"])
    assert "block_w" in g and g.get("block_w") is g["Block.w"]
    assert sorted(g) == sorted(grads)  # iteration: the model's own names
    # Returned dicts pickle as plain dicts.
    assert type(pickle.loads(pickle.dumps(g))) is dict


def test_one_terminal_named_twice_is_an_error():
    pm = ml.compile(mlp(), ml.MlirBackend(), shapes={"input": [2, 5]})
    params = pm.randomize_params()
    with pytest.raises(KeyNotFoundError, match="name the same terminal"):
        pm.evaluate({**params, "weight_0": params["linear_0.weight"]},
                    {"input": np.zeros((2, 5), np.float32)})


def test_train_step_updates_the_names_given():
    rng = np.random.default_rng(1)
    x = {"input": rng.standard_normal((4, 5)).astype(np.float32),
         "target": rng.integers(0, 3, 4)}

    def train_model():
        from mithril.models import CrossEntropy, Mean, TrainModel
        t = TrainModel(mlp())
        t.add_loss(CrossEntropy(), reduce_steps=[Mean()], input="output", target="target")
        return t

    ref = ml.compile(train_model(), ml.MlirBackend(), shapes={"input": [4, 5], "target": [4]})
    params = ref.randomize_params(seed=2)
    pm = ml.compile(train_model(), ml.MlirBackend(), shapes={"input": [4, 5], "target": [4]},
                    use_short_namings=True)
    # linear_0.weight -> weight_0 (the train step's buffers are swapped in
    # place: each dict has its own arrays).
    short = {f"{k.split('.')[1]}_{k.split('.')[0][-1]}": v.copy() for k, v in params.items()}
    expected = {k: v.copy() for k, v in params.items()}
    for _ in range(3):
        out_ref = ref.train_step(expected, x, ml.SGD(lr=0.1))
        out = pm.train_step(short, x, ml.SGD(lr=0.1))
        np.testing.assert_allclose(out["final_cost"], out_ref["final_cost"], rtol=1e-6)
    assert sorted(short) == ["bias_0", "bias_1", "weight_0", "weight_1"]
    np.testing.assert_allclose(short["weight_1"], expected["linear_1.weight"], rtol=1e-6)


def test_save_and_load_keep_the_names(tmp_path):
    pm = ml.compile(nested(), ml.MlirBackend(), shapes=NESTED_SHAPES, inference=True,
                    use_short_namings=True)
    params = pm.randomize_params(seed=4)
    x = data(np.random.default_rng(2))
    expected = pm.evaluate(params, x)["output"]
    pm.save(tmp_path / "m.zip", params)
    loaded = ml.PhysicalModel.load(tmp_path / "m.zip", ml.MlirBackend())
    assert loaded.input_keys == pm.input_keys and loaded.output_keys == ["output"]
    np.testing.assert_array_equal(loaded(x)["output"] if isinstance(loaded(x), dict)
                                  else loaded(x), expected)
    np.testing.assert_array_equal(loaded.params["linear_0.weight"], params["weight_0"])


def test_a_model_compiled_at_its_first_call_names_alike():
    pm = ml.compile(mlp(), ml.MlirBackend(), use_short_namings=True)
    x = {"input": np.ones((2, 5), np.float32)}
    assert pm(x["input"]).shape == (2, 3)  # compiled now, its parameters drawn
    params = pm.randomize_params(seed=0)
    assert sorted(params) == ["bias_0", "bias_1", "weight_0", "weight_1"]
    assert pm.evaluate(params, x)["output"].shape == (2, 3)


def test_flags_are_checked():
    with pytest.raises(TypeError, match="use_short_namings"):
        ml.compile(mlp(), ml.MlirBackend(), shapes={"input": [2, 5]}, use_short_namings="yes")
    # safe_shapes: the dialect's shape rules always hold; both values compile.
    for safe in (True, False):
        pm = ml.compile(mlp(), ml.MlirBackend(), shapes={"input": [2, 5]}, safe_shapes=safe)
        assert pm.output_keys == ["output"]


def test_calibration_data_in_short_names():
    # Static int8 calibration reads its inputs under any form of the names.
    m = mlp()
    backend = ml.MlirBackend(quantize="int8")
    probe = ml.compile(m, backend, shapes={"input": [8, 5]}, use_short_namings=True)
    params = probe.randomize_params(seed=6)
    assert "weight_0" in params
    x = np.random.default_rng(7).standard_normal((8, 5)).astype(np.float32)
    pm = ml.compile(m, backend, shapes={"input": [8, 5]}, use_short_namings=True,
                    calibration_data=[{**params, "input": x}])
    assert pm.evaluate(params, {"input": x})["output"].shape == (8, 3)
