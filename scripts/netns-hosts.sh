#!/usr/bin/env bash
# Several "hosts" on one machine, for tests and benches of multi-host launches: network
# namespaces joined by a veth pair (a bridge in a namespace of its own when there are more than
# two), host I at 10.99.0.I/24, each running its own sshd under `unshare --uts` with hostname hI.
#
#   scripts/netns-hosts.sh up DIR N [--rate RATE] [--slots S] [--cpus I=LIST]...
#   scripts/netns-hosts.sh exec DIR I COMMAND [ARG]...   # COMMAND as host hI (namespace + hostname)
#   scripts/netns-hosts.sh down DIR
#
# `up` writes into DIR (which must exist, without whitespace in its path):
#   ssh_config       for `mpirun --mca plm_rsh_args "-F DIR/ssh_config"` or `ssh -F`
#   hostfile         "10.99.0.I slots=S" per host (S: --slots, default the machine's cores)
#   hosts            one address per line
#   state/pids       every process it started, by pid; `down` stops exactly these
#   state/netns      every namespace it created; `down` deletes exactly these
# plus generated host and user keys, each sshd's config and log (DIR/hI/). --rate shapes every
# host's link with `tc tbf` (e.g. 1gbit); --cpus I=LIST starts host I's sshd (so everything
# started there over ssh) under `taskset -c LIST`, a node with fewer cores.
#
# Traffic stays between the namespaces this script made: nothing is addressed outside
# 10.99.0.0/24 and no interface of the caller's namespace is touched. Namespaces share the file
# system and /dev/shm with the machine; the distinct hostnames keep Open MPI's shared-memory
# files apart. Needs root, iproute2, util-linux (unshare) and openssh-server.
set -Eeuo pipefail

die() {
  echo "netns-hosts: $*" >&2
  exit 2
}

# Namespace names derive from DIR, so two fixtures (two tests, a test and a bench) never collide.
ns_prefix() { printf 'tnh%s' "$(printf '%s' "$1" | md5sum | cut -c1-8)"; }

check_dir() {
  [ -d "$1" ] || die "$1: no such directory"
  case "$1" in *[[:space:]]*) die "$1: the path must not hold whitespace (it goes into sshd's config)" ;; esac
}

# Host I's shell prefix: its namespace, then a UTS namespace of its own with hostname hI.
as_host() {
  local dir=$1 i=$2
  shift 2
  ip netns exec "$(ns_prefix "$dir")-h$i" unshare --uts sh -c 'hostname "$0"; exec "$@"' "h$i" "$@"
}
# The same, replacing the shell: ip, unshare and sh each exec the next, so COMMAND keeps this
# process's pid (what `up` records for sshd, and what a caller of `exec` may stop).
exec_as_host() {
  local dir=$1 i=$2
  shift 2
  exec ip netns exec "$(ns_prefix "$dir")-h$i" unshare --uts sh -c 'hostname "$0"; exec "$@"' \
    "h$i" "$@"
}

wait_for_ssh() {
  local dir=$1 n=$2 i tries
  for i in $(seq 1 "$n"); do
    tries=0
    until as_host "$dir" 1 ssh -F "$dir/ssh_config" "10.99.0.$i" true 2>/dev/null; do
      tries=$((tries + 1))
      [ "$tries" -lt 100 ] || die "sshd of h$i did not answer within 10 s (see $dir/h$i/sshd.log)"
      sleep 0.1
    done
  done
}

write_sshd_config() {
  local dir=$1 i=$2
  mkdir -p "$dir/h$i"
  ssh-keygen -q -t ed25519 -N '' -f "$dir/h$i/host_key"
  cat >"$dir/h$i/sshd_config" <<EOF
ListenAddress 10.99.0.$i
Port 22
HostKey $dir/h$i/host_key
PidFile $dir/h$i/sshd.pid
AuthorizedKeysFile $dir/keys/authorized_keys
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
LogLevel ERROR
EOF
}

write_client_files() {
  local dir=$1 n=$2 slots=$3 i patterns=""
  mkdir -p "$dir/keys"
  ssh-keygen -q -t ed25519 -N '' -f "$dir/keys/id_ed25519"
  cp "$dir/keys/id_ed25519.pub" "$dir/keys/authorized_keys"
  : >"$dir/hostfile"
  : >"$dir/hosts"
  for i in $(seq 1 "$n"); do
    echo "10.99.0.$i slots=$slots" >>"$dir/hostfile"
    echo "10.99.0.$i" >>"$dir/hosts"
    patterns+=" 10.99.0.$i"
  done
  cat >"$dir/ssh_config" <<EOF
Host$patterns
  User $(id -un)
  IdentityFile $dir/keys/id_ed25519
  IdentitiesOnly yes
  StrictHostKeyChecking no
  UserKnownHostsFile /dev/null
  BatchMode yes
  LogLevel ERROR
  ConnectTimeout 5
EOF
}

link_hosts() {
  local dir=$1 n=$2 rate=$3 prefix i ns
  prefix=$(ns_prefix "$dir")
  if [ "$n" -eq 2 ]; then
    ip link add veth1 netns "$prefix-h1" type veth peer name veth2 netns "$prefix-h2"
  else
    ip netns add "$prefix-sw"
    echo "$prefix-sw" >>"$dir/state/netns"
    ip -n "$prefix-sw" link add br0 type bridge
    ip -n "$prefix-sw" link set br0 up
    for i in $(seq 1 "$n"); do
      ip link add "veth$i" netns "$prefix-h$i" type veth peer name "p$i" netns "$prefix-sw"
      ip -n "$prefix-sw" link set "p$i" master br0
      ip -n "$prefix-sw" link set "p$i" up
    done
  fi
  for i in $(seq 1 "$n"); do
    ns="$prefix-h$i"
    ip -n "$ns" link set lo up
    ip -n "$ns" addr add "10.99.0.$i/24" dev "veth$i"
    ip -n "$ns" link set "veth$i" up
    if [ -n "$rate" ]; then
      ip netns exec "$ns" tc qdisc add dev "veth$i" root tbf rate "$rate" burst 256kb latency 50ms
    fi
  done
}

cmd_up() {
  [ $# -ge 2 ] || die "usage: up DIR N [--rate RATE] [--slots S] [--cpus I=LIST]..."
  local dir n rate="" slots prefix i
  dir=$(cd "$1" 2>/dev/null && pwd) || die "$1: no such directory"
  n=$2
  shift 2
  check_dir "$dir"
  [[ "$n" =~ ^[0-9]+$ ]] && [ "$n" -ge 2 ] && [ "$n" -le 200 ] || die "N must be 2..200, not '$n'"
  slots=$(nproc)
  declare -A cpus=()
  while [ $# -gt 0 ]; do
    case "$1" in
      --rate) rate=${2:?--rate needs a value}; shift 2 ;;
      --slots) slots=${2:?--slots needs a value}; shift 2 ;;
      --cpus) [[ "${2:-}" =~ ^([0-9]+)=([0-9,-]+)$ ]] || die "--cpus takes I=LIST, e.g. 2=1"
              cpus[${BASH_REMATCH[1]}]=${BASH_REMATCH[2]}; shift 2 ;;
      *) die "unknown option '$1'" ;;
    esac
  done
  [ "$(id -u)" -eq 0 ] || die "needs root (network namespaces)"
  [ -x /usr/sbin/sshd ] || die "needs openssh-server (/usr/sbin/sshd)"
  [ ! -e "$dir/state/pids" ] || die "$dir is already up; run 'down $dir' first"
  mkdir -p "$dir/state" /run/sshd
  : >"$dir/state/pids"
  : >"$dir/state/netns"
  prefix=$(ns_prefix "$dir")
  # From here on, a failure takes down what was made so far.
  trap 'cmd_down "$dir" >/dev/null 2>&1 || true' ERR
  for i in $(seq 1 "$n"); do
    ip netns add "$prefix-h$i"
    echo "$prefix-h$i" >>"$dir/state/netns"
  done
  link_hosts "$dir" "$n" "$rate"
  write_client_files "$dir" "$n" "$slots"
  for i in $(seq 1 "$n"); do
    write_sshd_config "$dir" "$i"
    local pin=()
    [ -z "${cpus[$i]:-}" ] || pin=(taskset -c "${cpus[$i]}")
    # -D: sshd stays in the foreground, so the pid recorded is sshd's own.
    (exec_as_host "$dir" "$i" "${pin[@]}" /usr/sbin/sshd -D -f "$dir/h$i/sshd_config" \
      -E "$dir/h$i/sshd.log" </dev/null >/dev/null 2>&1) &
    echo "$! sshd-h$i" >>"$dir/state/pids"
  done
  wait_for_ssh "$dir" "$n"
  trap - ERR
  echo "netns-hosts: $n hosts up in $dir (hostfile $dir/hostfile, ssh config $dir/ssh_config)"
}

cmd_down() {
  [ $# -eq 1 ] || die "usage: down DIR"
  local dir=$1 pid label ns tries
  [ -d "$dir/state" ] || return 0
  if [ -f "$dir/state/pids" ]; then
    while read -r pid label; do
      kill -TERM "$pid" 2>/dev/null || continue
      tries=0
      while kill -0 "$pid" 2>/dev/null && [ "$tries" -lt 50 ]; do
        tries=$((tries + 1))
        sleep 0.1
      done
      kill -KILL "$pid" 2>/dev/null || true
    done <"$dir/state/pids"
  fi
  if [ -f "$dir/state/netns" ]; then
    while read -r ns; do
      [ -z "$ns" ] || ip netns del "$ns" 2>/dev/null || true
    done <"$dir/state/netns"
  fi
  rm -f "$dir/state/pids" "$dir/state/netns"
  rmdir "$dir/state" 2>/dev/null || true
}

cmd_exec() {
  [ $# -ge 3 ] || die "usage: exec DIR I COMMAND [ARG]..."
  local dir i
  dir=$(cd "$1" 2>/dev/null && pwd) || die "$1: no such directory"
  i=$2
  shift 2
  grep -qx "$(ns_prefix "$dir")-h$i" "$dir/state/netns" 2>/dev/null || die "$dir has no host h$i up"
  exec_as_host "$dir" "$i" "$@"
}

case "${1:-}" in
  up) shift; cmd_up "$@" ;;
  down) shift; cmd_down "$@" ;;
  exec) shift; cmd_exec "$@" ;;
  *) die "usage: $0 up DIR N [--rate RATE] [--slots S] [--cpus I=LIST]... | exec DIR I COMMAND... | down DIR" ;;
esac
