#!/usr/bin/env bash
# The test command: install, build, then every GoogleTest suite through ctest
# (labels: unit, mpi, e2e; e.g. `scripts/test.sh -L unit` for the fast ones), then the unit
# tests of search/, probes/ and tuner/ again under ASan + UBSan (scripts/test-sanitize.sh;
# TUNE_SKIP_SANITIZE=1 leaves that out).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh test
ctest --test-dir build --output-on-failure --timeout 600 "$@"
if [[ ${TUNE_SKIP_SANITIZE:-0} != 1 ]]; then
  scripts/test-sanitize.sh
fi
