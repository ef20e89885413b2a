#!/usr/bin/env bash
# Installs tune's dependencies from Debian packages, one set per use, so that each command
# installs only what it uses:
#
#   scripts/install-deps.sh runtime   # run an installed tune (a compute node, the .deb's Depends)
#   scripts/install-deps.sh build     # runtime + compilers and -dev packages (scripts/quickstart.sh)
#   scripts/install-deps.sh test      # build + GoogleTest and what the tests drive (scripts/test.sh)
#   scripts/install-deps.sh bench     # build + the peers the benchmarks compare against
#
# Several sets may be named; with none, every set. Idempotent: when everything is already
# installed it only checks (well under a second). Root or sudo.
set -euo pipefail

# What the installed binaries load (ldd of tune, tune-keeper, tune-trainer), what they run
# (mpirun) and what they read: Chart.js, inlined by `tune report --format html` (the install
# carries a copy too), and the Fashion-MNIST files studies/quickstart.yaml trains on. The
# allocators are what the allocator knob preloads (tune init offers the ones installed).
runtime=(
  openmpi-bin libopenmpi3 libhwloc15
  libsqlite3-0 libpq5 libyaml-cpp0.7 libre2-9 libfmt9 libboost-filesystem1.74.0
  libopenblas0-pthread libopencv-core406 libopencv-imgproc406
  libjs-chart.js dataset-fashion-mnist libjemalloc2 libtcmalloc-minimal4
)
build=(
  build-essential cmake pkg-config git
  libopenmpi-dev libboost-dev libboost-filesystem-dev
  nlohmann-json3-dev libsqlite3-dev libpq-dev libhwloc-dev
  libyaml-cpp-dev libcli11-dev libfmt-dev libre2-dev
  libopenblas-dev libopencv-imgproc-dev libopencv-core-dev
)
# chromium renders the HTML report in a test; slurm-wlm + munge run a local single-node Slurm
# (exported scripts under sbatch, trials as job steps); postgresql is the throwaway server the
# PostgreSQL storage tests start, and pgbouncer the pooler the cluster tests put in front of it
# (transaction pooling, started on loopback by the fixture; never as a service); python3-optuna (with python3-psycopg2 for PostgreSQL) reads
# tune's database; sqlite3 and hwloc are the command-line tools the tests and their failure
# messages use. openssh-server + iproute2: scripts/netns-hosts.sh (hosts as network namespaces,
# each with its own sshd; never started as a service) for the multi-host test and bench.
# python3-torch + python3-numpy: the PyTorch DDP example (examples/pytorch_ddp) that the
# `tune init` end-to-end test tunes. hpcc (HPC Challenge): a native MPI program linked to
# OpenBLAS that tune did not write (input and result in files), which `tune init`'s probe run
# must see through and whose oversubscribed settings the foreign-jobs e2e test predicts.
# python3-markdown: a real Markdown renderer (it passes raw HTML through) for the markdown
# report's escaping test (tests/e2e/hostile_text_e2e_test.cpp). python3-opencv: the DataLoader
# job of examples/pytorch_opencv, whose OpenCV (TBB) pools the foreign-jobs e2e test names.
# sysbench: a native program that prints its figure at its end, as `tune init`'s tests name it.
# xz-utils: xz's `-T, --threads=NUM` in its --help and its XZ_DEFAULTS read through getenv, as
# tune init's --help reader and getenv recorder tests read them. libomp5: LLVM's OpenMP runtime,
# loaded beside GNU's libgomp in the library report's test of two runtimes in one process.
# python3-mpi4py: an mpi4py + NumPy job, whose OpenBLAS kernel `tune init` names and checks.
test=(
  libgtest-dev libgmock-dev
  python3-optuna python3-psycopg2 sqlite3 hwloc python3-torch python3-numpy hpcc python3-markdown
  python3-opencv sysbench xz-utils libomp5 python3-mpi4py
  chromium slurm-wlm munge postgresql pgbouncer
  openssh-server iproute2
)
# bench/: PyTorch DDP and Optuna, the peers each benchmark prints a ratio against; a PostgreSQL
# server and PgBouncer for bench/cluster/scale.py; the recorded grids' jobs and tools
# (bench/grids: hpcc, LAMMPS, the DDP job's OpenCV, PyYAML for the study files, hwloc's lstopo
# for the machine's summary).
bench=(python3-optuna python3-torch python3-numpy postgresql pgbouncer python3-psycopg2
  openssh-server iproute2 python3-opencv python3-yaml hpcc lammps elk-lapw hwloc)
# Optional extras for tests that are skipped with a message when absent.
optional=(clang-format)

sets=("$@")
[ ${#sets[@]} -gt 0 ] || sets=(runtime build test bench)
packages=()
for set in "${sets[@]}"; do
  case "$set" in
    runtime) packages+=("${runtime[@]}") ;;
    build) packages+=("${runtime[@]}" "${build[@]}") ;;
    test) packages+=("${runtime[@]}" "${build[@]}" "${test[@]}") ;;
    bench) packages+=("${runtime[@]}" "${build[@]}" "${bench[@]}") ;;
    *)
      echo "install-deps: unknown set '$set' (runtime, build, test, bench)" >&2
      exit 2
      ;;
  esac
done

missing=()
for p in "${packages[@]}" ${TUNE_WITH_OPTIONAL:+"${optional[@]}"}; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
mapfile -t missing < <(printf '%s\n' "${missing[@]}" | sort -u)
echo "install-deps: installing ${missing[*]}" >&2
sudo_cmd=()
[ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get -o DPkg::Lock::Timeout=900 update -qq
"${sudo_cmd[@]}" apt-get -o DPkg::Lock::Timeout=900 install -y -qq --no-install-recommends "${missing[@]}"
