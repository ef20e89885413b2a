#!/usr/bin/env bash
# Installs the dependencies (when missing) and builds into build/ (Release).
#
#   scripts/build.sh          # what `tune` runs with: tune, tune-keeper, tune-trainer (quickstart)
#   scripts/build.sh test     # that plus every test and benchmark (scripts/test.sh)
#
# Each installs only its own set of Debian packages (scripts/install-deps.sh build | test), so the
# main job never waits for Chromium, Slurm or GoogleTest. Both share build/: switching between
# them re-runs CMake's configure step, and what was compiled stays compiled. TUNE_UNIT_SUITES=OFF
# leaves out the unit suites of search/, probes/ and tuner/ (scripts/test.sh runs them under the
# sanitizers instead).
set -euo pipefail
cd "$(dirname "$0")/.."
set=${1:-build}
case "$set" in
  build) with_tests=OFF ;;
  test) with_tests=ON ;;
  *) echo "build.sh: unknown set '$set' (build, test)" >&2; exit 2 ;;
esac
scripts/install-deps.sh "$set"
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DTUNE_BUILD_TESTS="$with_tests" \
  -DTUNE_BUILD_BENCH="$with_tests" -DTUNE_UNIT_SUITES="${TUNE_UNIT_SUITES:-ON}" >/dev/null
cmake --build build -j"$(nproc)"
