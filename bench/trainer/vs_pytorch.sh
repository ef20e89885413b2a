#!/usr/bin/env bash
# tune-trainer vs PyTorch 1.13 DDP (gloo): MLP 784-1000-1000-10, batch 100 per rank, 12,000
# Fashion-MNIST samples, 2 ranks bound to a core each, 1 thread per rank and library for both.
# Runs alternate (ours, theirs) RUNS times; medians and their ratio are printed, with the roofline
# (measured sgemm + allreduce time -> samples/s bound).
#   usage: bench/trainer/vs_pytorch.sh [BUILD_DIR=build] [RUNS=5]
set -euo pipefail
source "$(dirname "$0")/common.sh"
runs=${2:-5}
one=(env OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 OPENCV_FOR_THREADS_NUM=1 MKL_NUM_THREADS=1)
flags=(--data-dir="$data" --train-samples=12000 --epochs=1 --batch-size=100 --benchmark --augment=none)
declare -A rates
for ((i = 0; i < runs; ++i)); do
  "${one[@]}" "${mpirun_2[@]}" --bind-to core "$trainer" --out="$tmp/fp32" "${flags[@]}" \
    --iterator-workers=0 --allreduce=ring --grad-dtype=fp32 >/dev/null
  rates[ours_fp32]+=" $(log_rate "$tmp/fp32")"
  "${one[@]}" "${mpirun_2[@]}" --bind-to core "$trainer" --out="$tmp/fp16" "${flags[@]}" \
    --iterator-workers=0 --allreduce=ring --grad-dtype=fp16 >/dev/null
  rates[ours_fp16]+=" $(log_rate "$tmp/fp16")"
  out=$("${one[@]}" MASTER_PORT=$((20000 + RANDOM % 20000)) "${mpirun_2[@]}" --bind-to core \
    /usr/bin/python3 "$here/torch_ddp_mlp.py" --data-dir="$data" --train-samples=12000 --batch-size=100 --threads=1)
  rates[torch]+=" $(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["samples_per_sec"])' "$out")"
done
torch_median=$(median ${rates[torch]})
printf '%-36s %12s  %s\n' "trainer (2 ranks, 1 thread each)" "samples/s" "runs"
for k in torch ours_fp32 ours_fp16; do
  m=$(median ${rates[$k]})
  printf '%-36s %12.0f  %s\n' "$k" "$m" "$(printf '%.0f ' ${rates[$k]})"
done
for k in ours_fp32 ours_fp16; do
  printf 'ratio %-30s %11.2fx\n' "$k / torch" "$(python3 -c "print($(median ${rates[$k]}) / $torch_median)")"
done
echo "roofline (1 BLAS thread per rank, 2 ranks, fp32 ring allreduce):"
OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 "${mpirun_2[@]}" --bind-to core "$build/bin/bench_trainer_roofline"
