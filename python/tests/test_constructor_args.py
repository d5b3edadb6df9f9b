# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""Model constructors: unknown keywords, terminal values and torch-style
positional sizes (issue 15, item 6: arguments were silently swallowed)."""

import numpy as np
import pytest

import mithril as ml
from mithril import models as M
from mithril.framework import BaseModel
from mithril.utils import dict_to_model

# Required arguments of the library classes that have some.
REQUIRED = {
    "TrainModel": lambda: dict(model=M.Linear(1)), "Layer": lambda: dict(activation="relu"),
    "MLP": lambda: dict(activations=["relu"], dimensions=[2]),
    "AvgPool2D": lambda: dict(kernel_size=2), "MaxPool1D": lambda: dict(kernel_size=2),
    "MaxPool2D": lambda: dict(kernel_size=2), "Convolution1D": lambda: dict(kernel_size=3),
    "Convolution2D": lambda: dict(kernel_size=3), "PolynomialRegression": lambda: dict(degree=2),
    "KernelizedSVM": lambda: dict(kernel="RBFKernel"), "MDS": lambda: dict(prediction_dim=2),
    "TSNE": lambda: dict(prediction_dim=2), "Reshape": lambda: dict(shape=[-1]),
    "BroadcastTo": lambda: dict(shape=[2]),
    # torch-style layers (mithril.models.torch_layers)
    "Conv2d": lambda: dict(in_channels=3, out_channels=4),
    "BatchNorm2d": lambda: dict(num_features=3),
    # parity models (mithril.models.parity)
    "SwapAxes": lambda: dict(axis1=0, axis2=1), "PositionalEncoding": lambda: dict(hidden_dim=4),
    "Arange": lambda: dict(stop=4), "Eye": lambda: dict(N=2), "Ones": lambda: dict(shape=[2]),
    "ManyToOne": lambda: dict(cell_type=M.RNNCell(), max_sequence_length=2),
    "OneToMany": lambda: dict(cell_type=M.RNNCell(), max_sequence_length=2),
    "EncoderDecoder": lambda: dict(cell_type=M.RNNCell(), max_input_sequence_length=2,
                                   max_target_sequence_length=2),
    "AUC": lambda: dict(n_classes=2), "Split": lambda: dict(split_size=2),
    # reference models (mithril.models.reference): their keywords are terminals
    "CustomPrimitiveModel": lambda: dict(formula_key="relu", input=ml.IOKey(),
                                         output=ml.IOKey()),
    "PrimitiveModel": lambda: dict(formula_key="relu", input=ml.IOKey(), output=ml.IOKey()),
    "Activation": lambda: dict(formula_key="relu"),
}

# Models whose keyword arguments name their terminals (the original's
# PrimitiveModel(formula_key, **keys)): any keyword is one more input.
TERMINAL_KEYWORDS = {"Activation", "CustomPrimitiveModel", "PrimitiveModel"}

LIBRARY_CLASSES = sorted(name for name in M.__all__
                         if isinstance(getattr(M, name), type)
                         and issubclass(getattr(M, name), BaseModel))


@pytest.mark.parametrize("class_name", LIBRARY_CLASSES)
def test_every_library_model_rejects_an_unknown_keyword(class_name):
    cls = getattr(M, class_name)
    args = REQUIRED.get(class_name, dict)
    cls(**args())  # the valid call still works
    if class_name in TERMINAL_KEYWORDS:
        assert "no_such_arg" in cls(**args(), no_such_arg=ml.IOKey()).input_keys
        return
    with pytest.raises(TypeError, match=r"\(\) got an unexpected keyword argument 'no_such_arg'"):
        cls(**args(), no_such_arg=1)


def test_a_rejected_train_model_gives_its_model_back():
    linear = M.Linear(2)
    with pytest.raises(TypeError, match="'nmae'"):
        M.TrainModel(linear, nmae="t")
    M.TrainModel(linear)  # not "already part of a model"


@pytest.mark.parametrize("make,message", [
    (lambda: M.Relu(inplace=True),
     r"^Relu\(\) got an unexpected keyword argument 'inplace'; did you mean 'in_place'\?$"),
    (lambda: M.Softmax(axs=1), r"'axs'; did you mean 'axis'\?"),
    (lambda: M.Sum(axes=0), r"'axes'; did you mean 'axis'\?"),
    (lambda: M.MaxPool2D(2, strid=1), r"'strid'; did you mean 'stride'\?"),
    (lambda: M.Linear(3, dimesion=4), r"'dimesion'; did you mean 'dimension'\?"),
    (lambda: M.Linear(3, wieght=np.ones((3, 2))), r"'wieght'; did you mean 'weight'\?"),
    (lambda: M.Add(lft=1.0), r"^Add\(\) .*'lft'; did you mean 'left'\?"),
    (lambda: M.Convolution2D(3, out_chanels=4), r"'out_chanels'; did you mean 'out_channels'"),
    (lambda: M.TrainModel(M.Linear(1), nmae="t"), r"^TrainModel\(\) .*'nmae'"),
    (lambda: M.Model(formula_key="x"), r"^Model\(\) .*'formula_key'"),
])
def test_unknown_keywords_name_the_class_and_argument(make, message):
    with pytest.raises(TypeError, match=message):
        make()


@pytest.mark.parametrize("make,argument", [
    (lambda: M.Add(left="a"), "left"),
    (lambda: M.Linear(3, weight="w"), "weight"),
    (lambda: M.Add(left=ml.IOKey("a")), "left"),
    (lambda: M.Relu(input=[1.0, 2.0]), "input"),
    (lambda: M.Add(output=1.0), "output"),
])
def test_a_terminal_keyword_takes_only_a_constant(make, argument):
    with pytest.raises(TypeError, match=f"argument '{argument}'"):
        make()


def test_a_named_terminal_points_to_connect():
    with pytest.raises(TypeError, match=r"\.connect\(left='a'\)"):
        M.Add(left="a")


@pytest.mark.parametrize("make,argument,expected", [
    (lambda: M.Linear(True), "dimension", "int"),
    (lambda: M.Linear(use_bias=10), "use_bias", "bool"),
    (lambda: M.Linear(3, 4.0), "out_features", "int"),
    (lambda: M.Linear(3, use_bias=1), "use_bias", "bool"),
    (lambda: M.BatchNorm2D(True), "num_features", "int"),
    (lambda: M.Convolution2D(3, out_channels=False), "out_channels", "int"),
    (lambda: M.Softmax(axis=True), "axis", "int"),
    (lambda: M.Sum(keepdim=1), "keepdim", "bool"),
    (lambda: M.Log(robust=1), "robust", "bool"),
])
def test_bool_for_int_and_int_for_bool_are_type_errors(make, argument, expected):
    with pytest.raises(TypeError, match=f"argument '{argument}' must be an? {expected}"):
        make()


def test_too_many_positional_sizes():
    with pytest.raises(TypeError, match=r"Linear\(\) takes at most 2 positional"):
        M.Linear(1, 2, 3)
    with pytest.raises(TypeError, match=r"^Relu\(\) "):
        M.Relu(1, 2, 3)


def test_model_dictionaries_reject_unknown_arguments():
    with pytest.raises(ml.MithrilError, match="inplace"):
        dict_to_model({"name": "Relu", "args": {"inplace": True}})


def test_linear_in_and_out_features(backend64, rng):
    pm = ml.compile(M.Linear(6, 3), backend64, shapes={"input": [2, 6]})
    assert pm.shapes["weight"] == (3, 6)
    assert pm.shapes["bias"] == (3,)
    x, w, b = rng.standard_normal((2, 6)), rng.standard_normal((3, 6)), rng.standard_normal(3)
    out = pm.evaluate({"weight": w, "bias": b}, {"input": x})
    np.testing.assert_allclose(out["output"], x @ w.T + b, rtol=1e-12)


def test_linear_in_features_fix_the_input_size(backend64):
    # The input's size comes from the weight when it is left unknown...
    pm = ml.compile(M.Linear(6, 3), backend64, shapes={"input": [2, None]})
    assert pm.shapes["weight"] == (3, 6)
    # ... and a different one is an error.
    with pytest.raises(ml.MithrilError, match="contraction"):
        ml.compile(M.Linear(6, 3), backend64, shapes={"input": [2, 5]})


def test_linear_single_size_is_the_dimension(backend64):
    pm = ml.compile(M.Linear(10), backend64, shapes={"input": [4, 7]})
    assert pm.shapes["weight"] == (10, 7)
    pm = ml.compile(M.Linear(dimension=10), backend64, shapes={"input": [4, 7]})
    assert pm.shapes["weight"] == (10, 7)


def test_linear_positional_use_bias_as_mithril_writes_it(backend64, rng):
    pm = ml.compile(M.Linear(2, False), backend64, shapes={"input": [3, 4]})
    assert "bias" not in pm.shapes
    x, w = rng.standard_normal((3, 4)), rng.standard_normal((2, 4))
    np.testing.assert_allclose(pm.evaluate({"weight": w}, {"input": x})["output"], x @ w.T)


def test_torch_style_layers_in_a_chain(backend64, rng):
    model = ml.Model()
    model |= M.Linear(8, 5).connect(input="input")
    model += M.Relu()
    model += M.Linear(5, 2).connect(output=ml.IOKey("output"))
    pm = ml.compile(model, backend64, shapes={"input": [3, 8]})
    params = pm.randomize_params()
    x = rng.standard_normal((3, 8))
    out = pm.evaluate(params, {"input": x})["output"]
    (w0, b0), (w1, b1) = [(params[k], params[k.replace("weight", "bias")])
                          for k in sorted(k for k in params if "weight" in k)]
    assert w0.shape == (5, 8) and w1.shape == (2, 5)
    np.testing.assert_allclose(out, np.maximum(x @ w0.T + b0, 0) @ w1.T + b1, rtol=1e-12)


def test_batch_norm_and_convolution_positional_sizes(backend64):
    pm = ml.compile(M.BatchNorm2D(3), backend64, shapes={"input": [2, 3, 4, 4]})
    assert pm.shapes["weight"] == (3,)
    # Mithril's order: kernel_size, then out_channels.
    pm = ml.compile(M.Convolution2D(3, 4), backend64, shapes={"input": [1, 2, 5, 5]})
    assert pm.shapes["weight"] == (4, 2, 3, 3)


def test_terminal_constant_on_a_primitive(backend64):
    add = M.Add(left=2.0)
    assert add.input_keys == ["right"]
    pm = ml.compile(add, backend64, shapes={"right": [3]})
    out = pm.evaluate({}, {"right": np.arange(3.0)})
    np.testing.assert_allclose(out["output"], [2.0, 3.0, 4.0])


def test_terminal_constant_is_not_the_canonical_input(backend64):
    # `+=` feeds the first input without a value: here 1 - relu(x).
    model = ml.Model()
    model |= M.Relu().connect(input="input")
    model += M.Subtract(left=np.array(1.0)).connect(output=ml.IOKey("output"))
    pm = ml.compile(model, backend64, shapes={"input": [3]})
    out = pm.evaluate({}, {"input": np.array([-1.0, 0.5, 2.0])})
    np.testing.assert_allclose(out["output"], [1.0, 0.5, -1.0])


def test_terminal_constant_on_a_composite(backend64, rng):
    w, b, x = rng.standard_normal((3, 6)), rng.standard_normal(3), rng.standard_normal((2, 6))
    linear = M.Linear(3, weight=w)
    assert "weight" not in linear.input_keys
    pm = ml.compile(linear, backend64, shapes={"input": [2, 6]})
    assert "weight" not in pm.shapes
    out = pm.evaluate({"bias": b}, {"input": x})
    np.testing.assert_allclose(out["output"], x @ w.T + b, rtol=1e-12)


def test_a_valued_terminal_cannot_be_connected_again():
    model = ml.Model()
    with pytest.raises(ml.MithrilError, match="'left' of Add already has a value"):
        model |= M.Add(left=1.0).connect(left="a")
