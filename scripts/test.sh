#!/usr/bin/env bash
# The test command: install, build, then every GoogleTest suite through ctest (labels: unit, mpi,
# e2e, reliability, cluster; e.g. `scripts/test.sh -L unit` for the fast ones), then the unit
# suites of search/, probes/ and tuner/ built with ASan + UBSan and run (scripts/test-sanitize.sh).
# Those three run once, sanitized: build/ leaves them out (TUNE_UNIT_SUITES=OFF), which saves
# the 2-core CI about five minutes of building and running them twice. TUNE_SKIP_SANITIZE=1
# builds and runs them in build/ through ctest instead, without the sanitizers.
set -euo pipefail
cd "$(dirname "$0")/.."
sanitize=1
[[ ${TUNE_SKIP_SANITIZE:-0} == 1 ]] && sanitize=0
TUNE_UNIT_SUITES=$([[ $sanitize == 1 ]] && echo OFF || echo ON) scripts/build.sh test
ctest --test-dir build --output-on-failure --timeout 600 "$@"
if [[ $sanitize == 1 ]]; then
  scripts/test-sanitize.sh
fi
