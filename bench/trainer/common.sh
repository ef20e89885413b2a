# Shared by the trainer bench scripts: paths, the mpirun prefix and a median helper.
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${1:-$root/build}
trainer=$build/bin/tune-trainer
data=${TUNE_DATA_DIR:-/usr/share/datasets/fashion-mnist}
[ -x "$trainer" ] || { echo "bench: $trainer not found; build first (cmake --build $build)" >&2; exit 1; }
mpirun_2=(mpirun -n 2 --oversubscribe)
[ "$(id -u)" -eq 0 ] && mpirun_2+=(--allow-run-as-root)
tmp=$(mktemp -d /tmp/tune-trainer-bench.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
# The trainer's samples/s from its LogReport (last entry).
log_rate() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[-1]["samples_per_sec"])' "$1/log"; }
median() { python3 -c 'import statistics,sys; print(statistics.median(float(v) for v in sys.argv[1:]))' "$@"; }
