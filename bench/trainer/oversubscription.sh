#!/usr/bin/env bash
# The oversubscription effect itself: the quickstart trainer command (2 ranks, no binding) with
# every library at its default (OpenMP, OpenBLAS and OpenCV each size themselves to the machine)
# vs one thread per library (OMP/OPENBLAS/OPENCV = 1). Medians of RUNS alternating runs.
#   usage: bench/trainer/oversubscription.sh [BUILD_DIR=build] [RUNS=3]
set -euo pipefail
source "$(dirname "$0")/common.sh"
runs=${2:-3}
flags=(--data-dir="$data" --train-samples=12000 --epochs=1 --batch-size=100 --benchmark --iterator-workers=2
  --augment=light --allreduce=mpi --grad-dtype=fp32 --bucket-mb=4)
defaults=() tuned=()
for ((i = 0; i < runs; ++i)); do
  env -u OMP_NUM_THREADS -u OPENBLAS_NUM_THREADS -u OPENCV_FOR_THREADS_NUM \
    "${mpirun_2[@]}" --bind-to none "$trainer" --out="$tmp/d" "${flags[@]}" >/dev/null
  defaults+=("$(log_rate "$tmp/d")")
  OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 OPENCV_FOR_THREADS_NUM=1 \
    "${mpirun_2[@]}" --bind-to none "$trainer" --out="$tmp/t" "${flags[@]}" >/dev/null
  tuned+=("$(log_rate "$tmp/t")")
done
d=$(median "${defaults[@]}") t=$(median "${tuned[@]}")
printf '%-40s %12s  %s\n' "setting (2 ranks, quickstart flags)" "samples/s" "runs"
printf '%-40s %12.0f  %s\n' "library defaults (oversubscribed)" "$d" "$(printf '%.0f ' "${defaults[@]}")"
printf '%-40s %12.0f  %s\n' "1 thread per library" "$t" "$(printf '%.0f ' "${tuned[@]}")"
printf 'ratio 1-thread / defaults %26.2fx\n' "$(python3 -c "print($t / $d)")"
