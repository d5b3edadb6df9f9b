# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""The persistent compile cache: a second process compiling the same model on
the same host loads the first one's code (CompileCache.h), with the same
numbers; MITHRIL_CACHE=0 turns it off."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = r"""
import json, sys
import numpy as np
import mithril as ml
from mithril.models import Linear, Mean, Model, Relu, SquaredError, TrainModel

model = Model()
model |= Linear(32)(input="input")
model += Relu()
model += Linear(4)(output="output")
train = TrainModel(model)
train.add_loss(SquaredError(), input="output", target="target", reduce_steps=[Mean()])
pm = ml.compile(train, ml.MlirBackend(dtype=ml.float64),
                shapes={"input": [8, 16], "target": [8, 4]})
params = pm.randomize_params(seed=0)
rng = np.random.default_rng(1)
data = {"input": rng.standard_normal((8, 16)), "target": rng.standard_normal((8, 4))}
out, grads = pm.evaluate(params, data, output_gradients={"final_cost": np.array(1.0)})
stages = [name for name, _ in pm._forward.timings]
gradient_stages = [name for model in pm._gradient_models.values()
                   for name, _ in model[0].timings]
pm.save(sys.argv[1])  # the object code of a cached model is kept too
print(json.dumps({"cost": float(out["final_cost"]),
                  "grad": float(np.abs(grads["linear_0.weight"]).sum()),
                  "stages": stages + gradient_stages}))
"""


def run(tmp_path, **env):
    script = tmp_path / "compile.py"
    script.write_text(SCRIPT)
    environ = {k: v for k, v in os.environ.items() if k != "MITHRIL_CACHE"}
    environ.update(PYTHONPATH=str(ROOT / "python"), MITHRIL_CACHE_DIR=str(tmp_path / "cache"),
                   MITHRIL_CACHE_MIN_SECONDS="0", **env)
    result = subprocess.run([sys.executable, str(script), str(tmp_path / "model.mithril")],
                            env=environ, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    import json
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_a_second_process_loads_the_cached_code(tmp_path):
    first = run(tmp_path)
    assert "compile cache hit" not in first["stages"]
    entries = sorted(p.suffix for p in (tmp_path / "cache").iterdir())
    assert entries.count(".o") >= 2 and entries.count(".o") == entries.count(".mlir")
    second = run(tmp_path)
    assert second["stages"].count("compile cache hit") >= 2  # forward and gradients
    np.testing.assert_array_equal([second["cost"], second["grad"]],
                                  [first["cost"], first["grad"]])


def test_turned_off_nothing_is_kept(tmp_path):
    run(tmp_path, MITHRIL_CACHE="0")
    assert not (tmp_path / "cache").exists() or not any((tmp_path / "cache").iterdir())


def test_a_small_size_limit_keeps_the_directory_small(tmp_path):
    run(tmp_path, MITHRIL_CACHE_MAX_MB="0.01")
    kept = sum(p.stat().st_size for p in (tmp_path / "cache").iterdir())
    assert kept <= 0.01 * 1024 * 1024 + 200_000  # at most the entry just written
