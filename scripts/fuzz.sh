#!/usr/bin/env bash
# Fuzzes the study parser, the Chainer-log reader and the regex objective with libFuzzer, each for
# a fixed time, and reports what was found. Not part of the test command (it runs for minutes).
#
#   scripts/fuzz.sh [SECONDS_PER_TARGET (default 60)] [TARGET...]
#   targets: study_spec chainer_log objective_regex (default: all three)
#
# Builds build-fuzz/ (-DTUNE_FUZZ=ON: ASan + UBSan + coverage, see bench/fuzz/fuzz.cmake) with g++
# unless CXX names another compiler (clang >= 16 also works). Each target starts from its seed
# corpus, bench/fuzz/corpus/<target>/ (left unchanged), and keeps what it learns in
# build-fuzz/corpus/<target>/, so a later run goes on from there. A crash, hang (> 10 s per
# input) or out-of-memory input is saved to build-fuzz/crashes/<target>/; the target is then
# restarted for the rest of its time. To keep one as a regression test, copy it to
# tests/reliability/fuzz_inputs/<target>/ (tests/reliability/fuzz_regressions_test.cpp replays
# every file there). Exit status 1 when anything was saved in this run.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${1:-60}
shift || true
targets=("$@")
[[ ${#targets[@]} -gt 0 ]] || targets=(study_spec chainer_log objective_regex)
if ! [[ $seconds =~ ^[0-9]+$ ]] || ((seconds < 1)); then
  echo "fuzz.sh: SECONDS must be a positive whole number, got '$seconds'" >&2
  exit 2
fi
for t in "${targets[@]}"; do
  if [[ ! -d bench/fuzz/corpus/$t ]]; then
    echo "fuzz.sh: unknown target '$t' (study_spec, chainer_log, objective_regex)" >&2
    exit 2
  fi
done

build=build-fuzz
launcher=()
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
fi
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS=-O1 -DCMAKE_CXX_COMPILER="${CXX:-g++}" \
  -DTUNE_FUZZ=ON -DTUNE_BUILD_TESTS=OFF -DTUNE_BUILD_BENCH=OFF -DTUNE_WITH_CUDA=OFF \
  -DTUNE_MODULES="search;probes;tuner" "${launcher[@]}" >/dev/null
cmake --build "$build" -j"$(nproc)" --target "${targets[@]/#/fuzz_}"

# Leaks are findings too. UBSan stops at the first report (-fno-sanitize-recover) but by exiting,
# which libFuzzer does not notice: abort_on_error turns it into SIGABRT, so the input is saved.
# The targets' scratch files go under build-fuzz/tmp, so a crashed run leaves nothing in /tmp.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:abort_on_error=1}
export TMPDIR=$PWD/$build/tmp
mkdir -p "$TMPDIR"

declare -A max_len=([study_spec]=8192 [chainer_log]=16384 [objective_regex]=65536)
found=0
summary=()
for t in "${targets[@]}"; do
  corpus=$build/corpus/$t
  crashes=$build/crashes/$t
  mkdir -p "$corpus" "$crashes" "$build/logs"
  dict=()
  [[ -f bench/fuzz/$t.dict ]] && dict=(-dict="bench/fuzz/$t.dict")
  before=$(find "$crashes" -type f | wc -l)
  deadline=$((SECONDS + seconds))
  runs=0 execs_per_s=() cov="" ft="" restarts=0
  log=$build/logs/$t.log
  : >"$log"
  while ((SECONDS < deadline)); do
    left=$((deadline - SECONDS))
    set +e
    "$build/bin/fuzz_$t" "$corpus" "bench/fuzz/corpus/$t" "${dict[@]}" \
      -max_total_time="$left" -timeout=10 -rss_limit_mb=2048 -max_len="${max_len[$t]}" \
      -artifact_prefix="$crashes/" -print_final_stats=1 >"$log.part" 2>&1
    rc=$?
    set -e
    cat "$log.part" >>"$log"
    n=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log.part")
    r=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log.part")
    runs=$((runs + ${n:-0}))
    [[ -n $r ]] && execs_per_s+=("$r")
    line=$(grep -E '^#[0-9]+.*cov: ' "$log.part" | tail -1 || true)
    [[ $line =~ cov:\ ([0-9]+) ]] && cov=${BASH_REMATCH[1]}
    [[ $line =~ ft:\ ([0-9]+) ]] && ft=${BASH_REMATCH[1]}
    ((rc == 0)) && break
    restarts=$((restarts + 1))
    ((restarts > 20)) && break  # the same bug over and over: stop, it is in crashes/ already
  done
  rm -f "$log.part"
  after=$(find "$crashes" -type f | wc -l)
  new=$((after - before))
  ((new > 0)) && found=1
  summary+=("$(printf '%-16s %4d s  %9d runs  exec/s %-12s cov %-6s ft %-6s corpus %5d files  new findings %d' \
    "$t" "$seconds" "$runs" "${execs_per_s[*]:-?}" "${cov:-?}" "${ft:-?}" \
    "$(find "$corpus" -type f | wc -l)" "$new")")
done

echo
echo "fuzz.sh: libFuzzer logs in $build/logs/, findings in $build/crashes/<target>/"
printf '%s\n' "${summary[@]}"
if ((found)); then
  for t in "${targets[@]}"; do
    grep -hE '^(==[0-9]+==ERROR|SUMMARY|.*runtime error)' "$build/logs/$t.log" | sort | uniq -c |
      sed "s|^|  $t: |" || true
  done
  exit 1
fi
