#!/usr/bin/env bash
# `make demo`: what the compiler does, end to end, on real models.
set -euo pipefail
BUILD=$(cd "${1:-build}" && pwd)
cd "$(dirname "$0")"
OPT="$BUILD/bin/mithril-opt"
RUN="$BUILD/bin/mithril-run"
step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

step "A hierarchical logical model (examples/models/hierarchy.mlir)"
cat models/hierarchy.mlir | grep -v '^//'
step "After mithril-flatten and mithril-infer-shapes with x:4x8"
"$OPT" models/hierarchy.mlir --mithril-flatten --mithril-infer-shapes="shapes=x:4x8"

step "MLP 784-512-512-10, batch 16, on the CPU (mithril-run)"
"$RUN" models/mlp.mlir --shape=input:16x784 --random-inputs --seed=1 --bench=20 --timing

step "CNN conv32-pool-conv64-pool-linear10, batch 16, on the CPU (mithril-run)"
"$RUN" models/cnn.mlir --shape=input:16x1x28x28 --random-inputs --seed=1 --bench=5 --timing

step "Mithril's Python API: terminals, compile, evaluate with gradients, summary"
PYTHONPATH="$BUILD/python_packages" /usr/bin/python3 python_example.py

step "Training: an MLP on scikit-learn's digits with a compiled Adam step"
PYTHONPATH="$BUILD/python_packages" /usr/bin/python3 train_digits.py "$BUILD/digits"

printf '\nTo use the Python package yourself: export PYTHONPATH=%s\n' "$BUILD/python_packages"
