#!/usr/bin/env bash
# The communication-bound bench: tune-trainer across two "hosts" on this machine, network
# namespaces joined by a veth pair, each with its own sshd and hostname (scripts/netns-hosts.sh),
# the link shaped by `tc tbf` to each RATE. A rankfile gives each host's rank its own core.
# Prints one table: samples/s (median of REPEATS runs of ITERS iterations with --benchmark) per
# setting and link, and the validation accuracy after one epoch.
#
#   usage: nice -n 10 bench/trainer/two_hosts.sh [BUILD_DIR=build] [RATES="1gbit 100mbit"] [REPEATS=3]
#   env:   ITERS (64), SETTINGS (a regex on the setting names, default all)
#
# The accuracy column comes from one full epoch per setting over shared memory on one host:
# the arithmetic of every setting is the same whatever the link (the allreduce algorithm is
# fixed by the flags and the pipeline's values do not depend on timing), only its speed is not.
# "1 host" is the same 2 ranks over shared memory, each bound to its own core.
# Needs what netns-hosts.sh needs (root, iproute2, util-linux, openssh-server); its `down` stops
# what `up` started, by pid, on exit.
set -euo pipefail
source "$(dirname "$0")/common.sh"
rates=(${2:-1gbit 100mbit})
repeats=${3:-3}
iters=${ITERS:-64}
only=${SETTINGS:-.}
hosts_sh=$root/scripts/netns-hosts.sh
addr=(10.99.0.1 10.99.0.2)
cleanup() {
  "$hosts_sh" down "$tmp/hosts" >/dev/null 2>&1 || true
  rm -rf "$tmp"
}
trap cleanup EXIT
mkdir -p "$tmp/hosts"

# RATE: the two hosts' link shaped by tc tbf on both ends. The hosts come up once, with the first
# rate; later rates replace the qdisc (a down and up between rates killed the bench midway).
hosts_up() {
  if [ ! -e "$tmp/hosts/state/pids" ]; then
    "$hosts_sh" up "$tmp/hosts" 2 --rate "$1" >/dev/null
    return
  fi
  local i
  for i in 1 2; do
    "$hosts_sh" exec "$tmp/hosts" "$i" tc qdisc replace dev "veth$i" root tbf rate "$1" \
      burst 256kb latency 50ms
  done
}

# Rankfiles: one rank per host on cores 0 and 1, or two per host sharing the host's core.
printf '%s\n' "rank 0=${addr[0]} slot=0" "rank 1=${addr[1]} slot=1" >"$tmp/rankfile2"
printf '%s\n' "rank 0=${addr[0]} slot=0" "rank 1=${addr[0]} slot=0" \
  "rank 2=${addr[1]} slot=1" "rank 3=${addr[1]} slot=1" >"$tmp/rankfile4"


# name | ranks | flags. Global batch 200 throughout (2 x 100, or 4 x 50 with 2 ranks per host).
settings=(
  "fp32 ring|2|--allreduce=ring"
  "fp16 ring|2|--allreduce=ring --grad-dtype=fp16"
  "1bit ring, no warm start|2|--allreduce=ring --grad-dtype=1bit"
  "1bit ring, warm start 2k|2|--allreduce=ring --grad-dtype=1bit --warm-start=2000"
  "fp32 ring, 2 ranks/host|4|--allreduce=ring"
  "fp32 hierarchical, 2 ranks/host|4|--allreduce=hierarchical"
  "fp32 ring + double buffering|2|--allreduce=ring --double-buffering"
  "fp16 ring + double buffering|2|--allreduce=ring --grad-dtype=fp16 --double-buffering"
  "1bit ring + double buffering|2|--allreduce=ring --grad-dtype=1bit --double-buffering"
  "block momentum, 8 steps|2|--allreduce=ring --sync=block --block-steps=8"
  "block momentum, 32 steps|2|--allreduce=ring --sync=block --block-steps=32"
  "block momentum 8 + 1bit deltas|2|--allreduce=ring --sync=block --block-steps=8 --grad-dtype=1bit"
)

common=(--data-dir="$data" --iterator-workers=0)
threads=(-x OMP_NUM_THREADS=1 -x OPENBLAS_NUM_THREADS=1 -x OPENCV_FOR_THREADS_NUM=1)

# Runs the trainer over the link (host 1 launches) with ranks and flags; prints samples/s.
over_link() {
  local ranks=$1 out=$tmp/run
  shift
  "$hosts_sh" exec "$tmp/hosts" 1 mpirun --allow-run-as-root -n "$ranks" \
    --hostfile "$tmp/hosts/hostfile" --rankfile "$tmp/rankfile$ranks" \
    --mca plm_rsh_args "-F $tmp/hosts/ssh_config" --mca btl tcp,self --mca pml ob1 \
    --mca btl_tcp_if_include 10.99.0.0/24 --mca oob_tcp_if_include 10.99.0.0/24 "${threads[@]}" \
    "$trainer" --out="$out" "${common[@]}" --batch-size=$((200 / ranks)) --benchmark \
    --max-iterations="$iters" "$@" >/dev/null
  log_rate "$out"
}

# The same on one host over shared memory, each rank on its own core (2 ranks) or two per core.
on_one_host() {
  local ranks=$1 out=$tmp/run
  shift
  local launch=(mpirun --allow-run-as-root -n "$ranks" --bind-to core --map-by core)
  [ "$ranks" -eq 4 ] && launch=(mpirun --allow-run-as-root -n 4 --oversubscribe --bind-to none)
  "${launch[@]}" "${threads[@]}" \
    "$trainer" --out="$out" "${common[@]}" --batch-size=$((200 / ranks)) "$@" >/dev/null
}

median_of() {  # COMMAND...: median samples/s of $repeats runs
  local r=() k
  for ((k = 0; k < repeats; k++)); do r+=("$("$@")"); done
  median "${r[@]}"
}

one_host_rate() {
  on_one_host "$@" --benchmark --max-iterations="$iters"
  log_rate "$tmp/run"
}

accuracy() {  # one full epoch over shared memory
  on_one_host "$@" --log-interval=100000
  python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[-1]["validation/main/accuracy"])' \
    "$tmp/run/log"
}

declare -A rate
# The 1-host reference is measured before and after the link runs (a shared machine's load drifts
# over the run); its figure is the median of both sets.
one_host_runs() {
  local k
  for ((k = 0; k < repeats; k++)); do one_host_rate 2 --allreduce=ring; done
}
before=$(one_host_runs)
for link in "${rates[@]}"; do
  hosts_up "$link"
  for s in "${settings[@]}"; do
    IFS='|' read -r name ranks flags <<<"$s"
    [[ $name =~ $only ]] || continue
    # shellcheck disable=SC2086 # flags is a list of words written above
    rate[$name,$link]=$(median_of over_link "$ranks" $flags)
    echo "  $link $name: ${rate[$name,$link]} samples/s" >&2
  done
done

# shellcheck disable=SC2046 # one number a line
single=$(median $before $(one_host_runs))
printf '\n# tune-trainer over 2 namespace hosts (1 rank per host unless noted), MLP 784-1000-1000-10,\n'
printf '# global batch 200; samples/s = median of %s runs of %s iterations; %% = of 1-host speed\n' \
  "$repeats" "$iters"
printf '# 1 host (2 ranks, shared memory, fp32 ring, before and after): %.0f samples/s\n' "$single"
printf '| setting |'
for link in "${rates[@]}"; do printf ' %s samples/s | %% of 1 host |' "$link"; done
printf ' val. accuracy, 1 epoch |\n|---|'
for link in "${rates[@]}"; do printf -- '---:|---:|'; done
printf -- '---:|\n'
for s in "${settings[@]}"; do
  IFS='|' read -r name ranks flags <<<"$s"
  [[ $name =~ $only ]] || continue
  printf '| %s |' "$name"
  for link in "${rates[@]}"; do
    printf ' %.0f | %.0f%% |' "${rate[$name,$link]}" \
      "$(python3 -c "print(100*${rate[$name,$link]}/$single)")"
  done
  # shellcheck disable=SC2086
  printf ' %.3f |\n' "$(accuracy "$ranks" $flags)"
done
