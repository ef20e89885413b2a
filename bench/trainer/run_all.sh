#!/usr/bin/env bash
# Every trainer benchmark in one run: allreduce table, trainer vs PyTorch (+ roofline), and the
# oversubscription effect.   usage: bench/trainer/run_all.sh [BUILD_DIR=build]
set -euo pipefail
dir=$(dirname "$0")
echo "== allreduce"; "$dir/allreduce.sh" "$@"
echo "== tune-trainer vs PyTorch DDP"; "$dir/vs_pytorch.sh" "$@"
echo "== oversubscription"; "$dir/oversubscription.sh" "$@"
