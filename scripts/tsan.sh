#!/usr/bin/env bash
# Runs the trainer's own threads under ThreadSanitizer: the DataIterator's worker threads
# (--iterator-workers N) and the --double-buffering comm thread, on 2 MPI ranks and a tiny
# --synthetic set, and reports every data race. Too slow for CI (a TSan build of the trainer and
# a few TSan-slowed runs take minutes on 2 cores), so it is a benchmark-style script.
#
#   scripts/tsan.sh
#
# Builds build-tsan/ (-DTUNE_TSAN=ON, trainer only). OpenMP, OpenBLAS and OpenCV each run with
# one thread (their pools are not TSan-instrumented, and libgomp's barriers are reported as races
# that are not there); only the trainer's std::threads run side by side. Reports go to
# build-tsan/logs/ (one file per rank and run). Exit status 1 when TSan reported anything or a
# run failed.
set -euo pipefail
cd "$(dirname "$0")/.."

build=build-tsan
launcher=()
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
fi
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTUNE_TSAN=ON -DTUNE_MODULES=trainer \
  -DTUNE_BUILD_TESTS=OFF -DTUNE_BUILD_BENCH=OFF -DTUNE_WITH_CUDA=OFF "${launcher[@]}" >/dev/null
cmake --build "$build" -j"$(nproc)" --target tune-trainer

# Shared memory only: Open MPI's TCP BTL takes two of its own locks in opposite orders in
# add_procs and del_procs, which TSan reports as a potential deadlock inside libmpi (not ours).
mpirun_flags=(-n 2 --oversubscribe --bind-to none --mca btl self,vader)
[[ $(id -u) == 0 ]] && mpirun_flags+=(--allow-run-as-root)
logs=$PWD/$build/logs
rm -rf "$logs" "$build/runs"
mkdir -p "$logs" "$build/runs"

# Each run: a name, the training-set size, then the trainer's arguments. 400 samples in batches
# of 20 on 2 ranks give 10 batches per epoch; 40 give 1, so the prefetch slots span several epochs
# and workers build batches of epochs e and e+2 at once (they share a cached permutation). A
# run's own flags come after the common ones below and override them (--epochs).
runs=(
  "workers2_doublebuf_mpi 400 --iterator-workers 2 --double-buffering --allreduce mpi"
  "workers3_prefetch6_doublebuf_ring_1bit 400 --iterator-workers 3 --prefetch 6 --double-buffering --allreduce ring --grad-dtype 1bit --warm-start 400 --augment heavy"
  "workers1_doublebuf_rabenseifner_fp16 400 --iterator-workers 1 --double-buffering --allreduce rabenseifner --grad-dtype fp16 --augment light"
  "workers4_prefetch8_epochs_of_one_batch 40 --iterator-workers 4 --prefetch 8 --double-buffering --augment heavy --epochs 100"
)
failed=0
for spec in "${runs[@]}"; do
  read -r -a words <<<"$spec"
  name=${words[0]}
  samples=${words[1]}
  args=("${words[@]:2}")
  out=$build/runs/$name
  start=$SECONDS
  set +e
  OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 \
    TSAN_OPTIONS="halt_on_error=0 second_deadlock_stack=1 log_path=$logs/$name" \
    mpirun "${mpirun_flags[@]}" -x OMP_NUM_THREADS -x OPENBLAS_NUM_THREADS -x TSAN_OPTIONS \
    "$build/bin/tune-trainer" --out "$out" --synthetic "$samples" --val-samples 100 --batch-size 20 \
    --hidden 32 --epochs 8 --log-interval 5 --omp-threads 1 --blas-threads 1 \
    --opencv-threads 0 "${args[@]}" >"$logs/$name.out" 2>&1
  rc=$?
  set -e
  races=$(cat "$logs/$name".* 2>/dev/null | grep -c '^WARNING: ThreadSanitizer' || true)
  printf '%-44s exit %d  %3d s  TSan reports: %d\n' "$name" "$rc" $((SECONDS - start)) "$races"
  if ((rc != 0 || races > 0)); then
    failed=1
    [[ $rc != 0 ]] && tail -5 "$logs/$name.out"
  fi
done

shopt -s nullglob
reports=("$logs"/*.[0-9]*)
if ((${#reports[@]})); then
  echo "tsan.sh: distinct reports (full stacks in $logs/):"
  grep -h '^SUMMARY: ThreadSanitizer' "${reports[@]}" | sort | uniq -c
fi
exit "$failed"
