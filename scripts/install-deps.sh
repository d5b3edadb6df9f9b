#!/usr/bin/env bash
# Installs the Debian 12 packages Mithril-MLIR needs to build and test.
# Idempotent: packages already installed are skipped; nothing is installed
# when everything is present. Needs root (or sudo) only when something is
# missing.
set -euo pipefail

packages=(
  # Toolchain and build system.
  cmake ninja-build g++ make ccache git
  # LLVM/MLIR 22 from Debian (bookworm-security carries 22.1).
  libmlir-22-dev mlir-22-tools llvm-22-dev llvm-22-tools
  # Libraries the project links.
  zlib1g-dev libgtest-dev
  # Python package and its tests; torch is the numeric oracle.
  python3 python3-dev python3-numpy python3-pybind11 pybind11-dev python3-pytest python3-torch
  # `pip install .` (checked by make check-install): a venv, pip and setuptools.
  python3-venv python3-pip python3-setuptools python3-wheel
  # The digits data set of the training example.
  python3-sklearn
  # Data parallelism (device_mesh): MPI, and the tests' mpirun.
  openmpi-bin libopenmpi-dev
)
if [ "${MITHRIL_WITH_BENCH:-0}" = 1 ]; then
  # Benchmark peers: OpenBLAS behind numpy and torch, and a plot.
  packages+=(libopenblas0-openmp python3-threadpoolctl python3-matplotlib)
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages are installed"
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then
    SUDO=sudo
  else
    echo "install-deps: these packages are missing and this is not root: ${missing[*]}" >&2
    exit 1
  fi
fi
export DEBIAN_FRONTEND=noninteractive
# LLVM 22 comes from bookworm-security; make sure the lists know it.
if ! apt-cache policy libmlir-22-dev 2>/dev/null | grep -q "Candidate: [0-9]"; then
  $SUDO apt-get update -q
fi
if ! $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"; then
  $SUDO apt-get update -q
  $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
