#!/usr/bin/env bash
# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
#
# Installs the peer compilers and runtimes that bench/peers.py measures us
# against into their own virtual environment, then runs bench/peers.py:
#
#   scripts/bench-peers.sh [VENV_DIR] [peers.py arguments...]
#   scripts/bench-peers.sh --quick --threads 1
#
# VENV_DIR defaults to $HOME/.cache/mithril-bench-peers. Debian's python3
# makes it (no system site packages: nothing is installed into the system
# Python); each peer is pinned exactly and installed on its own, so a peer
# that does not install is reported and skipped, and peers.py marks it "-".
# A stamp file with the pinned list makes a second run skip the installs.
# Our own package keeps running under Debian's interpreter (its extension is
# built against Debian's numpy); peers.py starts the venv's python for peers.
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
VENV="$HOME/.cache/mithril-bench-peers"
if [[ $# -gt 0 && "$1" != -* ]]; then
  VENV=$1
  shift
fi

# The pins: versions with CPython 3.11 x86-64 wheels, resolved together.
NUMPY="numpy==2.4.6"
declare -A PEERS=(
  [onnxruntime]="onnx==1.23.2 onnxruntime==1.32.0"
  [openvino]="onnx==1.23.2 openvino==2026.4.1"
  [jax]="jax[cpu]==0.10.2 jaxlib==0.10.2"
  [iree]="iree-base-compiler==3.13.0 iree-base-runtime==3.13.0"
  [torch]="torch==2.15.0"
)
ORDER=(onnxruntime openvino jax iree torch)
# IREE's packages before 3.0 were named iree-compiler/iree-runtime.
IREE_OLD="iree-compiler==20241104.1068 iree-runtime==20241104.1068"
# torch's CPU-only wheels; where that index cannot be reached, PyPI's wheel
# (the same code, plus CUDA libraries that stay unused here: a few GB).
TORCH_CPU_INDEX="https://download.pytorch.org/whl/cpu"

PY="$VENV/bin/python"
STAMP="$VENV/.mithril-peers-stamp"
WANT=$( { echo "python $(/usr/bin/python3 -V 2>&1)"; echo "$NUMPY";
          for p in "${ORDER[@]}"; do echo "$p: ${PEERS[$p]}"; done; } )

if [[ -f "$STAMP" && "$(cat "$STAMP")" == "$WANT" && -x "$PY" ]]; then
  echo "bench-peers: peers already installed in $VENV"
else
  if [[ ! -x "$PY" ]]; then
    echo "bench-peers: creating $VENV"
    /usr/bin/python3 -m venv "$VENV" || { echo "bench-peers: cannot create $VENV" >&2; exit 1; }
  fi
  export PIP_DISABLE_PIP_VERSION_CHECK=1
  # Every install sees every pin, so no peer moves numpy under another.
  CONSTRAINTS="$VENV/constraints.txt"
  { echo "$NUMPY"; for p in "${ORDER[@]}"; do tr ' ' '\n' <<< "${PEERS[$p]}"; done; } |
    sed 's/\[cpu\]//' | sort -u > "$CONSTRAINTS"
  pip_install() { "$PY" -m pip install --quiet -c "$CONSTRAINTS" "$@"; }
  if ! pip_install "$NUMPY"; then
    echo "bench-peers: numpy does not install; no peer can run" >&2
    exit 1
  fi
  install_peer() {
    # shellcheck disable=SC2086  # the lists split into requirements
    case $1 in
      iree)
        pip_install ${PEERS[iree]} || {
          echo "bench-peers: trying IREE's older package names"
          "$PY" -m pip install --quiet $IREE_OLD; } ;;
      torch)
        pip_install --timeout 15 --retries 0 --index-url "$TORCH_CPU_INDEX" \
            ${PEERS[torch]} 2> /dev/null || {
          echo "bench-peers: no torch from $TORCH_CPU_INDEX; PyPI's wheel instead"
          echo "bench-peers: (it brings CUDA libraries, a few GB, unused here)"
          pip_install ${PEERS[torch]}; } ;;
      *)
        pip_install ${PEERS[$1]} ;;
    esac
  }
  failed=()
  for p in "${ORDER[@]}"; do
    echo "bench-peers: installing $p (${PEERS[$p]})"
    if ! install_peer "$p"; then
      echo "bench-peers: $p did not install; peers.py will skip it" >&2
      failed+=("$p")
    fi
  done
  # Only a complete install is stamped: a failed peer is tried again next run.
  if [[ ${#failed[@]} -eq 0 ]]; then
    echo "$WANT" > "$STAMP"
  else
    echo "bench-peers: not installed: ${failed[*]}" >&2
  fi
fi

cd "$ROOT" || exit 1
exec env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE \
  /usr/bin/python3 bench/peers.py --venv-python "$PY" "$@"
