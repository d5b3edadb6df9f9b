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
# OpenBLAS 0.3.21 (Debian 12) takes CPUs newer than itself for older ones:
# a VM's CPU for Prescott (SSE3 kernels), and Zen 5 for Haswell (AVX2 kernels
# on a core with 512-bit FMAs: sgemm 1024 17.4 ms against 9.3 on its
# Cooperlake kernels). numpy's column should be OpenBLAS at its best on the
# host: its kernels for the widest vectors the host has.
flags=$(grep -m1 '^flags' /proc/cpuinfo || true)
best=""
case " $flags " in
  *" avx512_bf16 "*) best=Cooperlake ;;
  *" avx512f "*) best=SkylakeX ;;
  *" avx2 "*) best=Haswell ;;
esac
case "$detected" in
  Prescott|Haswell|Zen)
    if [ -n "$best" ] && [ "$best" != "$detected" ]; then
      export OPENBLAS_CORETYPE=$best
      echo "bench: OpenBLAS took this CPU for $detected; using OPENBLAS_CORETYPE=$best" >&2
    fi ;;
esac
PYTHONPATH="$BUILD/python_packages" /usr/bin/python3 bench/bench.py "${@:2}"
# The odd matrix shapes (bench/shapes.md, one thread): the same ISA cap and
# --quick; bench.py's --threads does not apply.
shape_args=()
for arg in "${@:2}"; do
  case "$arg" in --quick|--max-isa=*) shape_args+=("$arg") ;; esac
done
PYTHONPATH="$BUILD/python_packages" /usr/bin/python3 bench/shapes.py "${shape_args[@]}"
