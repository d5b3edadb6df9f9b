#!/usr/bin/env bash
# Installs the build into a staging prefix, builds examples/downstream-opt
# against the installed CMake package, and runs it on a model: the dialect
# must parse, flatten and infer shapes outside this repository.
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
