#!/usr/bin/env bash
# The test command: install, build, then every GoogleTest suite through ctest
# (labels: unit, mpi, e2e; e.g. `scripts/test.sh -L unit` for the fast ones).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
ctest --test-dir build --output-on-failure --timeout 600 "$@"
