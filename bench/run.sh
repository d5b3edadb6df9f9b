#!/usr/bin/env bash
# `make bench`: runs bench/bench.py against the build, with OpenBLAS behind
# numpy (installed by `MITHRIL_WITH_BENCH=1 scripts/install-deps.sh`).
# Some machines set OPENBLAS_CORETYPE/OPENBLAS_L2_SIZE, which slow a current
# OpenBLAS down: they are unset for this run only. An OpenBLAS that does not
# know the CPU falls back to its generic Prescott kernels (OpenBLAS 0.3.21 on
# an Emerald Rapids Xeon: sgemm 1024 in 159 ms instead of 24): it then gets
# the kernels of the CPU's vector extensions instead, so that numpy and torch
# are measured at their best (the table names the BLAS target used).
set -euo pipefail
BUILD=$(cd "${1:-build}" && pwd)
cd "$(dirname "$0")/.."
unset OPENBLAS_CORETYPE OPENBLAS_L2_SIZE
detected=$(/usr/bin/python3 -c '
from threadpoolctl import threadpool_info
import numpy
print(next((i.get("architecture") or "" for i in threadpool_info()
            if i.get("internal_api") == "openblas"), ""))' 2>/dev/null || true)
if [ "$detected" = "Prescott" ]; then
  flags=$(grep -m1 '^flags' /proc/cpuinfo || true)
  case " $flags " in
    *" avx512_bf16 "*) export OPENBLAS_CORETYPE=Cooperlake ;;
    *" avx512f "*) export OPENBLAS_CORETYPE=SkylakeX ;;
    *" avx2 "*) export OPENBLAS_CORETYPE=Haswell ;;
  esac
  echo "bench: OpenBLAS took this CPU for Prescott; using OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-Prescott}" >&2
fi
PYTHONPATH="$BUILD/python_packages" /usr/bin/python3 bench/bench.py "${@:2}"
# The odd matrix shapes (bench/shapes.md, one thread): the same ISA cap and
# --quick; bench.py's --threads does not apply.
shape_args=()
for arg in "${@:2}"; do
  case "$arg" in --quick|--max-isa=*) shape_args+=("$arg") ;; esac
done
PYTHONPATH="$BUILD/python_packages" /usr/bin/python3 bench/shapes.py "${shape_args[@]}"
