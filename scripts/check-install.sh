#!/usr/bin/env bash
# Installs the build into a staging prefix, builds examples/downstream-opt
# against the installed CMake package, and runs it on a model: the dialect
# must parse, flatten and infer shapes outside this repository. Then
# `pip install .` into a virtual environment (offline: no build isolation,
# the system's setuptools) gives a `mithril` that compiles and runs a model
# with no PYTHONPATH.
set -euo pipefail
BUILD=$(cd "${1:-build}" && pwd)
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PREFIX="$BUILD/install-check/prefix"
WORK="$BUILD/install-check/downstream"
rm -rf "$PREFIX"
cmake --install "$BUILD" --prefix "$PREFIX" > "$BUILD/install-check.log"
cmake -G Ninja -S "$ROOT/examples/downstream-opt" -B "$WORK" \
  -DMithril_DIR="$PREFIX/lib/cmake/mithril" -DCMAKE_BUILD_TYPE=Release >> "$BUILD/install-check.log"
ninja -C "$WORK" >> "$BUILD/install-check.log"
out=$("$WORK/downstream-opt" "$ROOT/examples/downstream-opt/model.mlir" \
  --mithril-flatten --mithril-infer-shapes="shapes=x:4x8")
echo "$out"
echo "$out" | grep -q 'param %fc.weight: tensor<16x8xf32>' || {
  echo "downstream-opt did not flatten and infer shapes as expected" >&2; exit 1; }
echo "downstream consumer: loaded the dialect from $PREFIX"

VENV="$BUILD/install-check/venv"
rm -rf "$VENV"
/usr/bin/python3 -m venv --system-site-packages "$VENV"
MITHRIL_BUILD_DIR="$BUILD" "$VENV/bin/pip" install --no-build-isolation --no-deps "$ROOT" \
  >> "$BUILD/install-check.log" 2>&1 || {
  echo "pip install . failed (see $BUILD/install-check.log)" >&2; exit 1; }
(cd "$BUILD/install-check" && env -u PYTHONPATH "$VENV/bin/python" - <<'PY'
import numpy as np

import mithril as ml
from mithril.models import Linear, Model

assert "/install-check/venv/" in ml.__file__, ml.__file__
model = Model()
model |= Linear(3)(input="input", output="output")
pm = ml.compile(model, ml.MlirBackend(dtype=ml.float64), shapes={"input": [2, 4]})
params = pm.randomize_params()
x = np.arange(8.0).reshape(2, 4)
want = x @ params["linear_0.weight"].T + params["linear_0.bias"]
# Summation order differs from NumPy's (vector width, FMA), so an element that
# cancels can differ by an ulp of the terms rather than of the result: bound the
# error by the size of the terms.
scale = np.abs(x) @ np.abs(params["linear_0.weight"]).T + np.abs(params["linear_0.bias"])
got = pm.evaluate(params, {"input": x})["output"]
assert np.all(np.abs(got - want) <= 1e-14 * scale), (got, want)
import os
assert os.path.exists(os.path.join(ml.get_include(), "mithril", "Runtime", "CustomCall.h"))
print("pip install .: mithril from", ml.__file__, "compiles and runs a model")
PY
)
