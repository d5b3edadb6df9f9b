#!/usr/bin/env bash
# `make bench`: runs bench/bench.py against the build, with OpenBLAS behind
# numpy (installed by `MITHRIL_WITH_BENCH=1 scripts/install-deps.sh`).
# Some machines set OPENBLAS_CORETYPE/OPENBLAS_L2_SIZE, which slow a current
# OpenBLAS down: they are unset for this run only.
set -euo pipefail
BUILD=$(cd "${1:-build}" && pwd)
cd "$(dirname "$0")/.."
env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE PYTHONPATH="$BUILD/python_packages" \
  /usr/bin/python3 bench/bench.py "${@:2}"
