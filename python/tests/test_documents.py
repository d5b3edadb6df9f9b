# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""Every Python snippet of the user's documents (Mithril's guide, copied from
../shared/seeds into python/tests/documents), run in order per document with
only the backend line changed to ml.MlirBackend.

A document's snippets share one namespace, as a reader running them in turn
would. What the documents leave to the reader (`input_data`, `train_loader`,
the "... define your model ..." placeholder) is defined in PRELUDES. A snippet
whose document is wrong (a terminal its model does not have, a TPU) is
listed in DOCUMENT_MISTAKES with the clear error it must give.
"""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import numpy as np
import pytest

HERE = Path(__file__).parent / "documents"
DOCUMENTS = sorted(HERE.glob("*.txt"))

# The backend line: `ml.JaxBackend(...)`, `TorchBackend()`, ... become
# ml.MlirBackend with the arguments they share; device="gpu" or "cuda:0"
# becomes device="cuda" (NVIDIA GPUs).
_BACKEND = re.compile(r"(?:ml\.)?(?:Jax|Torch|Numpy|MLX|GGML|C)Backend\(")
_BACKEND_IMPORT = re.compile(r"^from mithril\.backends\.[\w.]+ import \w+Backend\n", re.M)


def _arguments(text: str) -> tuple[list[str], int]:
    """The top-level arguments of the call whose "(" precedes `text`, and
    where its ")" is."""
    depth, args, current = 0, [], ""
    for i, c in enumerate(text):
        if c in "([{":
            depth += 1
        elif c in ")]}":
            if depth == 0:
                args.append(current)
                return [a.strip() for a in args if a.strip()], i
            depth -= 1
        elif c == "," and depth == 0:
            args.append(current)
            current = ""
            continue
        current += c
    raise ValueError("unbalanced backend call")


def change_backend(code: str) -> str:
    code = _BACKEND_IMPORT.sub("", code)
    out = ""
    while (m := _BACKEND.search(code)) is not None:
        args, end = _arguments(code[m.end():])
        # A GPU device is ours on NVIDIA GPUs; anything else runs on the CPU.
        kept = [a if not a.startswith("device=") else 'device="cuda"'
                for a in args
                if not a.startswith("device=") or re.search(r"gpu|cuda", a)]
        out += code[:m.start()] + f"ml.MlirBackend({', '.join(kept)})"
        code = code[m.end() + end + 1:]
    return out + code


def snippets(path: Path) -> list[str]:
    # Snippets inside list items are indented.
    return [textwrap.dedent(m.group(1))
            for m in re.finditer(r"```python\n(.*?)```", path.read_text(), re.S)]


COMMON = """
import numpy as np
import mithril as ml
from mithril.models import *
# The documents' torch-style layers (docs/conformance.md); Linear is
# Mithril's, which takes both Linear(dimension=64) and Linear(in, out).
from mithril.models.torch_layers import (AvgPool2d, BatchNorm2d, Conv2d, Flatten,
                                         GlobalAvgPool2d, MaxPool2d, ReLU)
backend = ml.MlirBackend()
rng = np.random.default_rng(0)
"""

# What each document leaves to its reader, by the document's number.
PRELUDES = {
    "000": """
input_data = rng.standard_normal((4, 8)).astype(np.float32)
input_batch = [rng.standard_normal((4, 8)).astype(np.float32) for _ in range(3)]
train_data = [(rng.standard_normal((4, 8)), rng.standard_normal((4, 10))) for _ in range(2)]
optimizer = ml.Adam(learning_rate=0.01)
loss_fn = ml.MSELoss()
""",
    "001": """
model = Model()
# Images the size 001 #4's model takes: Conv2d(3, 64) keeps 14x14, MaxPool2d
# halves it, and Linear reads 64 * 7 * 7 features.
train_loader = [(rng.standard_normal((32, 3, 14, 14)), rng.integers(0, 10, 32)) for _ in range(2)]
test_loader = train_loader
""",
    "003": """
inputs = {"input": rng.standard_normal((32, 3, 224, 224)).astype(np.float32)}
""",
    "004": """
model = Model()
inputs = {"input": rng.standard_normal((32, 784)).astype(np.float32)}
""",
}

# Snippets that show separate examples, each on a new model.
SNIPPET_PRELUDES = {
    ("004", 0): "model = Model()",
    ("004", 1): "model = Model()",
    ("004", 2): "model = Model()",
    ("002", 1): "model = encoder  # the document's model",
    # The cotangent of the document's output (its model's canonical output).
    ("003", 12): "output_grads = {compiled_model.output_keys[0]: np.ones((32, 10), np.float32)}",
    # The reader's `inputs` for evaluate: every input the model reads, its
    # parameters with its data (evaluate's one-dict form; 003 passes them
    # apart, as evaluate(params, inputs)). #14 compiled without shapes, so
    # the parameters' shapes are known once a call has given the data's.
    ("004", 15): "compiled_model(inputs)\n"
                 "inputs = {**compiled_model.randomize_params(seed=0), **inputs}",
    # "activation functions": the hidden layer the activation goes on.
    ("004", 17): 'model = Model()\nmodel |= Linear(16)(input="input", output="hidden")',
}

# The documents' placeholders, filled in.
PLACEHOLDERS = {
    "# ... define your model ...":
        'logical_model |= Linear(dimension=10)(input=ml.IOKey("input", shape=[4, 8]), '
        'output="output")',
    # The guide's custom pass leaves its rewrite out: the IR text, unchanged.
    "    return modified_graph":
        "    modified_graph = graph\n    return modified_graph",
}

# Snippets whose document is wrong, so that no backend could run them as
# written: (document, index) -> (the mistake, the error we must give: its
# type and a pattern of its message). Each is a clear error naming what is
# wrong; when one runs, the test says so and the entry goes.
DOCUMENT_MISTAKES = {
    ("001", 6): ("shapes={'input': [32, 3, 224, 224]} for 001 #4's model, whose input is "
                 "'image' (and whose Linear reads 7x7 maps, not 112x112)",
                 KeyError, r"'input' is not an input of the model \(inputs: \['image'\]\)"),
    ("001", 7): ("device_mesh=(8,) and (2, 4) in one process: they need `mpirun -n 8` (data and "
                 "tensor parallelism are tested under mpirun in test_distributed.py), and "
                 "large_model is not defined in the document",
                 Exception, r"device_mesh=\(8,\) asks for 8 ranks, but this run has 1.*mpirun -n 8"),
    ("004", 22): ("target_hardware='tpu': Mithril's TPUs are JAX's; this backend compiles for "
                  "CPUs and NVIDIA GPUs",
                  ValueError, r"target_hardware 'tpu' is not supported"),
}


def _run_document(path: Path) -> list:
    """Runs a document's snippets in order; each one's exception, or None."""
    number = path.name[:3]
    namespace: dict = {}
    exec(COMMON + PRELUDES.get(number, ""), namespace)
    outcomes = []
    for index, code in enumerate(snippets(path)):
        code = SNIPPET_PRELUDES.get((number, index), "") + "\n" + change_backend(code)
        for placeholder, filled in PLACEHOLDERS.items():
            code = code.replace(placeholder, filled)
        try:
            exec(compile(code, f"{path.name}", "exec"), namespace)
            outcomes.append(None)
        except Exception as e:  # noqa: BLE001 - recorded, asserted below
            outcomes.append(e)
    return outcomes


_OUTCOMES: dict = {}


def _outcome(path: Path, index: int):
    if path not in _OUTCOMES:
        _OUTCOMES[path] = _run_document(path)
    return _OUTCOMES[path][index]


CASES = [(path, i) for path in DOCUMENTS for i in range(len(snippets(path)))]


@pytest.mark.parametrize("path,index", CASES,
                         ids=[f"{p.name[:3]}-{i}" for p, i in CASES])
def test_document_snippet(path, index, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)  # snippets write files
    error = _outcome(path, index)
    mistake = DOCUMENT_MISTAKES.get((path.name[:3], index))
    if mistake is not None:
        why, kind, message = mistake
        if error is None:
            pytest.fail(f"{path.name} snippet {index} runs now: remove it from "
                        f"DOCUMENT_MISTAKES ({why})")
        if not isinstance(error, kind) or not re.search(message, str(error), re.S):
            raise error
        return
    if error is not None:
        raise error


def test_backend_line_change():
    assert change_backend("b = ml.JaxBackend(dtype=ml.float32, device='gpu')") == \
        'b = ml.MlirBackend(dtype=ml.float32, device="cuda")'
    assert change_backend("ml.MLXBackend(device='tpu')") == "ml.MlirBackend()"
    assert change_backend("ml.GGMLBackend(quantize='int8')") == "ml.MlirBackend(quantize='int8')"
    assert change_backend("d = ml.JaxBackend(device_mesh=(2, 4))  # 2D") == \
        "d = ml.MlirBackend(device_mesh=(2, 4))  # 2D"
    assert change_backend("from mithril.backends.with_autograd.jax_backend import JaxBackend\n"
                          "backend = JaxBackend()") == "backend = ml.MlirBackend()"


def test_documents_are_there():
    assert len(DOCUMENTS) == 5 and len(CASES) == 56
