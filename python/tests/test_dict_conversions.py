# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""model_to_dict and dict_to_model: the original's JSON form, both ways."""

import json
import re
from pathlib import Path

import numpy as np
import pytest

import mithril as ml
from mithril import conformance
from mithril.models import (L2, MLP, Add, Layer, LeakyRelu, Linear, Mean, Model, Relu,
                            SquaredError, Tanh, TrainModel)
from mithril.utils import dict_to_model, model_to_dict
from mithril.utils.dict_conversions import model_to_dict as from_module

CASES = Path(__file__).resolve().parents[2] / "test" / "mithril-cases"


def round_trip(model):
    return dict_to_model(json.loads(json.dumps(model_to_dict(model))))


def test_the_originals_example():
    model = Model()
    model |= Linear(4)(input="input", weight="w", output="h")
    model |= LeakyRelu(slope=0.2)(input="h", output=ml.IOKey("output", expose=True))
    d = model_to_dict(model)
    assert from_module is model_to_dict
    assert d["name"] == "Model" and list(d["submodels"]) == ["m_0", "m_1"]
    assert d["submodels"]["m_0"] == {"name": "Linear", "args": {"dimension": 4}}
    assert d["submodels"]["m_1"] == {"name": "LeakyRelu", "args": {"slope": 0.2}}
    assert d["connections"]["m_0"] == {"weight": {"key": {"name": "w"}},
                                       "input": {"key": {"name": "input"}},
                                       "output": {"key": {"name": "h"}}}
    assert d["connections"]["m_1"] == {"input": {"key": {"name": "h"}},
                                       "output": {"key": {"name": "output"}}}
    assert d["exposed_keys"] == ["output"]
    again = round_trip(model)
    assert again.input_keys == model.input_keys and again.output_keys == ["output"]


def same_numbers(a, b, shapes, seeds=None):
    backend = ml.MlirBackend(dtype=ml.float64)
    pa = ml.compile(a, backend, shapes=shapes)
    pb = ml.compile(b, backend, shapes=shapes)
    assert sorted(pa.input_keys) == sorted(pb.input_keys)
    assert sorted(pa.output_keys) == sorted(pb.output_keys)
    rng = np.random.default_rng(0)
    params = pa.randomize_params(seed=1)
    data = {k: rng.standard_normal(v) for k, v in shapes.items() if k not in params}
    seeds = seeds or {k: np.ones(pa.shapes[k]) for k in pa.output_keys}
    out_a, grad_a = pa.evaluate(params, data, output_gradients=seeds)
    out_b, grad_b = pb.evaluate(params, data, output_gradients=seeds)
    for key in out_a:
        np.testing.assert_array_equal(out_a[key], out_b[key])
    for key in grad_a:
        np.testing.assert_array_equal(grad_a[key], grad_b[key])


def test_unnamed_connections_and_nested_models():
    model = Model()
    model |= MLP(activations=[Tanh(), Relu()], dimensions=[5, 3])(input="input")
    model += Layer(activation=LeakyRelu(slope=0.3), dimension=2)
    model |= Add()(left=model.cout, right=1.5, output="output")
    d = model_to_dict(model)
    assert d["submodels"]["m_0"]["args"]["activations"] == [
        {"name": "Tanh", "args": {}}, {"name": "Relu", "args": {}}]
    again = round_trip(model)
    same_numbers(model, again, {"input": [4, 6]})


def test_extend_from_inputs_writes_the_join_on_the_later_model():
    model = Model()
    model |= Add()(output=ml.IOKey("output", expose=True))
    add = model.submodels[0][0]
    model |= Linear(3)(input="x", output=ml.IOKey(connections=[add.left, add.right]))
    d = model_to_dict(model)
    assert "left" not in d["connections"]["m_0"] and "right" not in d["connections"]["m_0"]
    assert d["connections"]["m_1"]["output"] == {
        "key": {"connect": [["m_0", "left"], ["m_0", "right"]]}}
    same_numbers(model, round_trip(model), {"x": [2, 4]})


def test_train_model():
    train = TrainModel(Linear(1))
    train.add_loss(SquaredError(), reduce_steps=[Mean()], input="output", target="target")
    train.add_regularization(L2(), coef=0.1, input=re.compile("w.*"))
    d = model_to_dict(train)
    assert d["is_train_model"] and d["regularizations"][0]["regex"]
    again = round_trip(train)
    same_numbers(train, again, {"input": [4, 2], "target": [4, 1]},
                 seeds={"final_cost": np.array(1.0)})


def test_shapes_and_differentiability_are_kept():
    model = Model()
    model |= Linear(2)(input=ml.IOKey("input", shape=[3, 4]), output="output")
    model.set_differentiability(input=True)
    d = model_to_dict(model)
    assert d["assigned_shapes"] == [["input", [3, 4]]]
    assert d["assigned_differentiabilities"] == [["input", True]]
    again = round_trip(model)
    pm = ml.compile(again, ml.MlirBackend())  # the shape came back: no shapes=
    assert pm.shapes["input"] == (3, 4) and "input" in pm.trainable_keys


def test_a_model_outside_the_library_has_no_dictionary_form():
    class Custom(ml.models.Primitive):
        op = "relu"

    with pytest.raises(ml.utils.ModelDictError, match="Custom is not a model of the library"):
        model_to_dict(Custom())


def directed_models():
    for name in ("models_directed_test.json", "integration_directed_test.json"):
        cases = json.loads((CASES / name).read_text())
        for key, case in cases.items():
            if isinstance(case.get("model"), dict) and not case.get("inputs", {}).get("is_list"):
                yield pytest.param(case, id=f"{name[:-5]}::{key}")


@pytest.mark.parametrize("case", directed_models())
def test_directed_cases_survive_the_round_trip(case):
    """Each of Mithril's directed models written and read back gives the
    case's numbers wherever the model itself does."""
    try:
        conformance.run_case(case, 1e-10)
    except (conformance.CaseFailure, ml.MithrilError):
        pytest.skip("the case fails as given")
    written = json.loads(json.dumps(model_to_dict(dict_to_model(case["model"]))))
    conformance.run_case({**case, "model": written}, 1e-10)
