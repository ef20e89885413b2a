#!/usr/bin/env bash
# Allreduce benchmark, nccl-tests style, with 2 and 4 ranks on this machine: every algorithm and
# wire dtype against MPI_Allreduce (the "vs MPI" column), 4 KB .. MAX_MB.
#   usage: bench/trainer/allreduce.sh [BUILD_DIR=build] [MAX_MB=64]
set -euo pipefail
source "$(dirname "$0")/common.sh"
for n in 2 4; do
  prefix=(mpirun -n "$n" --oversubscribe --bind-to none)
  [ "$(id -u)" -eq 0 ] && prefix+=(--allow-run-as-root)
  "${prefix[@]}" "$build/bin/bench_trainer_allreduce" "${2:-64}"
  echo
done
