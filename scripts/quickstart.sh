#!/usr/bin/env bash
# The main job: install what it uses (scripts/install-deps.sh build: no test tools), build tune,
# tune-keeper and tune-trainer, and tune the bundled trainer on this machine for 50 trials.
# Re-running it continues the same study (tune-out/quickstart/study.db).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
exec build/bin/tune --trials "${TRIALS:-50}" studies/quickstart.yaml "$@"
